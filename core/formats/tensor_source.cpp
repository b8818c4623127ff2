// Names and sizes of stored element types (safetensors spelling, huggingface/safetensors).
#include "core/formats/tensor_source.h"

namespace poslens {

namespace {

/// The one dtype table: safetensors name, element size, LibTorch type.
struct DTypeRow {
  StoredDType stored;
  const char* name;
  std::size_t bytes;
  at::ScalarType scalar;
};

constexpr DTypeRow kDTypes[] = {
    {StoredDType::F32, "F32", 4, at::kFloat},     {StoredDType::F16, "F16", 2, at::kHalf},
    {StoredDType::BF16, "BF16", 2, at::kBFloat16}, {StoredDType::F64, "F64", 8, at::kDouble},
    {StoredDType::I64, "I64", 8, at::kLong},      {StoredDType::I32, "I32", 4, at::kInt},
    {StoredDType::I16, "I16", 2, at::kShort},     {StoredDType::I8, "I8", 1, at::kChar},
    {StoredDType::U8, "U8", 1, at::kByte},        {StoredDType::Bool, "BOOL", 1, at::kBool},
    // Last, so that kByte maps back to U8: LibTorch 1.13 has no float8 type, the bytes stay raw.
    {StoredDType::F8_E4M3, "F8_E4M3", 1, at::kByte},
};

const DTypeRow& row(StoredDType dtype) {
  for (const auto& r : kDTypes)
    if (r.stored == dtype) return r;
  return kDTypes[0];  // unreachable: every enumerator has a row
}

}  // namespace

const char* to_string(StoredDType dtype) { return row(dtype).name; }

std::size_t element_size(StoredDType dtype) { return row(dtype).bytes; }

at::ScalarType scalar_type(StoredDType dtype) { return row(dtype).scalar; }

bool stored_dtype_of(at::ScalarType type, StoredDType* out) {
  for (const auto& r : kDTypes)
    if (r.scalar == type) {
      *out = r.stored;
      return true;
    }
  return false;
}

bool stored_dtype_from_name(const std::string& name, StoredDType* out) {
  for (const auto& r : kDTypes)
    if (name == r.name) {
      *out = r.stored;
      return true;
    }
  return false;
}

}  // namespace poslens
