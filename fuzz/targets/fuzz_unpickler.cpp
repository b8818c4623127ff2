// Reader: poslens::pickle::unpickle_restricted (core/formats/restricted_unpickler.cpp) - the
// restricted unpickler for torch.save's data.pkl (allow-listed globals, nothing executed).
// Input: the pickle bytes (no file needed).
// Expected: poslens::Error for anything outside the accepted opcodes and globals. Findings: any
// other exception, a sanitizer report, or an accepted graph with dangling or inconsistent
// pointers (the walk below follows every edge with a depth limit, so ASan sees a bad one).
#include <cstdint>
#include <string>
#include <unordered_set>

#include "core/formats/restricted_unpickler.h"
#include "fuzz_common.h"

using namespace poslens;
using pickle::Value;

namespace {

/// Follows the graph (it may share nodes and contain cycles) to depth 32, at most `budget` edges.
void walk(const Value* v, int depth, size_t* budget, const std::unordered_set<const Value*>& owned) {
  if (v == nullptr) fuzz::finding("null value in the unpickled graph");
  if (owned.count(v) == 0) fuzz::finding("value not owned by Unpickled::values");
  if (depth > 32 || *budget == 0) return;
  --*budget;
  fuzz::keep(pickle::kind_name(v->kind));
  switch (v->kind) {
    case Value::Kind::Tuple:
    case Value::Kind::List:
      for (const Value* item : v->items) walk(item, depth + 1, budget, owned);
      break;
    case Value::Kind::Dict:
      for (const auto& [key, value] : v->entries) {
        if (key->kind != Value::Kind::String && key->kind != Value::Kind::Int)
          fuzz::finding(std::string("dict key of kind ") + pickle::kind_name(key->kind));
        walk(key, depth + 1, budget, owned);
        walk(value, depth + 1, budget, owned);
      }
      break;
    case Value::Kind::Tensor:
      if (v->storage == nullptr || v->storage->kind != Value::Kind::Storage)
        fuzz::finding("tensor without a storage");
      walk(v->storage, depth + 1, budget, owned);
      fuzz::keep(v->size.size() + v->stride.size());
      break;
    case Value::Kind::Storage:
      if (v->numel < 0) fuzz::finding("storage with negative numel");
      fuzz::keep(element_size(v->dtype));
      break;
    default:
      fuzz::keep(v->text.size());
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::refuse([&] {
    const pickle::Unpickled parsed = pickle::unpickle_restricted(data, size, "fuzz.pkl");
    if (parsed.root == nullptr) fuzz::finding("accepted pickle without a root");
    std::unordered_set<const Value*> owned;
    for (const auto& v : parsed.values) owned.insert(v.get());
    size_t budget = 100'000;
    walk(parsed.root, 0, &budget, owned);
  });
  return 0;
}
