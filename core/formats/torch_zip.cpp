// torch.save zip reader: LibTorch's PyTorchStreamReader for the archive, our restricted
// unpickler for data.pkl, and from_blob views of the storage records.
// Format and loader behaviour: torch/serialization.py (_save, _load), torch/_utils.py
// (_rebuild_tensor_v2), torch/_weights_only_unpickler.py.
#include "core/formats/torch_zip.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/util/Exception.h>
#include <c10/util/strides.h>
#include <caffe2/serialize/inline_container.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/base/error.h"
#include "core/formats/restricted_unpickler.h"
#include "core/base/shape_text.h"

namespace poslens {
namespace {

using pickle::Value;

/// Deepest nesting of dicts/lists/tuples that tensors are collected from (a state_dict needs 1;
/// a training checkpoint {"model": state_dict, ...} 2). It also stops cycles.
constexpr int kMaxNesting = 32;
/// Most container entries visited while collecting tensors. A few kB of hostile pickle can
/// share one dict under two keys at every level, so the walk is bounded by work, not by depth.
// A state_dict has thousands of entries; shared containers in a tiny hostile pickle can expand
// without end (found by fuzz_torch_zip): visits and the bytes of the names they build are capped.
constexpr std::size_t kMaxVisits = 1'000'000;
constexpr std::size_t kMaxNameBytes = std::size_t{64} << 20;

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

/// Runs `f` (a PyTorchStreamReader call) turning LibTorch's exceptions into poslens::Error.
template <class F>
auto reader_call(const std::string& path, const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw Error(path + ": " + what + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {  // e.g. std::invalid_argument from a bad version record
    throw Error(path + ": " + what + ": " + e.what());
  }
}

/// The first bytes of the file, to tell a zip from the formats people confuse with it.
std::string file_head(const std::string& path, std::size_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open");
  std::string head(n, '\0');
  in.read(head.data(), static_cast<std::streamsize>(n));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

/// One storage record's bytes, shared by the tensors that view it.
struct RecordBytes {
  at::DataPtr data;
  std::size_t size = 0;
};

/// Where a tensor's elements are: the storage record and the strided view into it.
struct View {
  std::string key;
  int64_t storage_offset = 0;
  std::vector<int64_t> stride;
};

}  // namespace

struct TorchZipFile::Impl {
  std::string path;
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
  std::vector<TensorInfo> infos;  // pickle order
  std::vector<View> views;        // parallel to infos
  std::unordered_map<std::string, std::size_t> index;
  std::unordered_map<std::string, uint64_t> storage_bytes;  // key -> numel x element size
  std::map<std::string, nlohmann::json> scalars;            // non-tensor leaves by name

  std::unordered_map<std::string, int> views_of;            // key -> tensors viewing that storage
  mutable std::mutex mutex;  // guards reader and cache
  mutable std::unordered_map<std::string, std::weak_ptr<RecordBytes>> cache;

  void open_archive();
  void collect(const Value* v, const std::string& name, int depth, std::size_t* visits);
  void add_tensor(const std::string& name, const Value& tensor);
  /// The storage record `key` read from the archive (the caller holds `mutex`), checked against
  /// the pickle's size; errors name `tensor`.
  RecordBytes read_record(const std::string& key, const std::string& tensor) const;
  /// The record shared by the tensors viewing it while one of them is alive (the cache).
  std::shared_ptr<RecordBytes> record(const std::string& key, const std::string& tensor) const;
};

void TorchZipFile::Impl::open_archive() {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw Error(path + ": no such file");
  if (!std::filesystem::is_regular_file(status)) throw Error(path + ": not a regular file");
  const std::string head = file_head(path, 4);
  if (head != std::string("PK\x03\x04", 4)) {
    if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80) {
      throw Error(path + ": a legacy torch.save file (a bare pickle stream, written by PyTorch "
                  "< 1.6 or with _use_new_zipfile_serialization=False); only the zip format "
                  "can be read - re-save it with torch.save in a current PyTorch");
    }
    throw Error(path + ": not a zip archive (a torch.save file starts with \"PK\\x03\\x04\")" +
                (head.size() < 4 ? " - the file is only " + std::to_string(head.size()) +
                                       " bytes long"
                                 : std::string()));
  }
  reader = reader_call(path, "cannot read the zip archive", [&] {
    return std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  });
  auto has = [&](const std::string& name) {
    return reader_call(path, "cannot look up " + name, [&] { return reader->hasRecord(name); });
  };
  if (has("constants.pkl")) {
    throw Error(path + ": a TorchScript archive (torch.jit.save), not a torch.save state_dict; "
                "save model.state_dict() with torch.save instead");
  }
  if (!has("data.pkl")) {
    throw Error(path + ": the zip archive has no <archive>/data.pkl record (not a torch.save "
                "file?)");
  }
  if (has("byteorder")) {
    auto [data, size] = reader_call(path, "cannot read the byteorder record",
                                    [&] { return reader->getRecord("byteorder"); });
    std::string order(static_cast<const char*>(data.get()), size);
    while (!order.empty() && (order.back() == '\n' || order.back() == ' ')) order.pop_back();
    if (order == "big") {
      throw Error(path + ": tensors are stored big-endian (byteorder record \"big\"); only "
                  "little-endian files can be read");
    }
    if (order != "little") {
      throw Error(path + ": unknown byteorder record " + in_quotes(order) +
                  " (expected \"little\")");
    }
  }
}

void TorchZipFile::Impl::collect(const Value* v, const std::string& name, int depth,
                                 std::size_t* visits) {
  if (++*visits > kMaxVisits) {
    throw Error(path + ": the pickle's containers expand to more than " +
                std::to_string(kMaxVisits) + " entries");
  }
  if (depth > kMaxNesting) {
    throw Error(path + ": " + in_quotes(name) + " nests containers deeper than " +
                std::to_string(kMaxNesting) + " levels (or contains itself)");
  }
  *visits += name.size() / 64;  // long names count as more visits: bounds the name bytes too
  if (*visits > kMaxVisits + kMaxNameBytes / 64) {
    throw Error(path + ": the pickle's containers expand to more than " +
                std::to_string(kMaxNameBytes >> 20) + " MiB of entry names");
  }
  auto join = [&](const std::string& part) { return name.empty() ? part : name + "." + part; };
  switch (v->kind) {
    case Value::Kind::Tensor:
      add_tensor(name, *v);
      break;
    case Value::Kind::Dict:
      for (const auto& [key, value] : v->entries) {
        // The unpickler admits only str and int keys.
        const std::string part =
            key->kind == Value::Kind::String ? key->text : std::to_string(key->integer);
        collect(value, join(part), depth + 1, visits);
      }
      break;
    case Value::Kind::List:
    case Value::Kind::Tuple:
      for (std::size_t i = 0; i < v->items.size(); ++i) {
        collect(v->items[i], join(std::to_string(i)), depth + 1, visits);
      }
      break;
    case Value::Kind::None: scalars[name] = nullptr; break;
    case Value::Kind::Bool: scalars[name] = v->boolean; break;
    case Value::Kind::Int: scalars[name] = v->integer; break;
    case Value::Kind::Float: scalars[name] = v->real; break;
    case Value::Kind::String: scalars[name] = v->text; break;
    default:  // a bare storage type or storage: not tensors
      break;
  }
}

void TorchZipFile::Impl::add_tensor(const std::string& name, const Value& t) {
  const std::string where = path + ": tensor " + in_quotes(name);
  if (name.empty()) throw Error(path + ": a tensor has an empty name");
  if (index.count(name) != 0) throw Error(where + ": the name occurs twice");
  const Value& storage = *t.storage;
  const std::string& key = storage.text;
  if (key.empty() || key.find('/') != std::string::npos || key.find('\0') != std::string::npos) {
    throw Error(where + ": invalid storage key " + in_quotes(key));
  }
  const std::size_t esize = element_size(storage.dtype);
  if (static_cast<uint64_t>(storage.numel) > std::numeric_limits<uint64_t>::max() / 2 / esize) {
    throw Error(where + ": storage numel " + std::to_string(storage.numel) + " is too large");
  }
  const uint64_t nbytes = static_cast<uint64_t>(storage.numel) * esize;
  const auto [known, first_use] = storage_bytes.emplace(key, nbytes);
  if (!first_use && known->second != nbytes) {
    throw Error(where + ": storage " + in_quotes(key) + " is " + std::to_string(nbytes) +
                " bytes here but " + std::to_string(known->second) + " bytes for another tensor");
  }
  if (first_use && !reader_call(path, "cannot look up storage " + in_quotes(key),
                                [&] { return reader->hasRecord("data/" + key); })) {
    throw Error(where + ": its storage record data/" + key + " is missing from the archive");
  }

  if (t.size.size() != t.stride.size()) {
    throw Error(where + ": size " + shape_str(t.size) + " and stride " + shape_str(t.stride) +
                " differ in length");
  }
  if (t.storage_offset < 0) {
    throw Error(where + ": negative storage offset " + std::to_string(t.storage_offset));
  }
  // numel and the last element reached, with every intermediate below 2^63.
  constexpr uint64_t kLimit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t numel = 1;
  uint64_t last = static_cast<uint64_t>(t.storage_offset);
  bool overflow = false;
  for (std::size_t d = 0; d < t.size.size(); ++d) {
    if (t.size[d] < 0 || t.stride[d] < 0) {
      throw Error(where + ": size " + shape_str(t.size) + " / stride " + shape_str(t.stride) +
                  " has a negative entry");
    }
    const auto size = static_cast<uint64_t>(t.size[d]);
    const auto stride = static_cast<uint64_t>(t.stride[d]);
    if (size == 0) {
      numel = 0;
      continue;
    }
    overflow = overflow || (numel != 0 && size > kLimit / numel) ||
               (stride != 0 && size - 1 > (kLimit - last) / stride);
    if (overflow) break;
    numel *= size;
    last += (size - 1) * stride;
  }
  if (overflow) {
    throw Error(where + ": size " + shape_str(t.size) + ", stride " + shape_str(t.stride) +
                " and offset " + std::to_string(t.storage_offset) + " overflow 64 bits");
  }
  if (numel > 0 && last >= static_cast<uint64_t>(storage.numel)) {
    throw Error(where + ": size " + shape_str(t.size) + ", stride " + shape_str(t.stride) +
                " and offset " + std::to_string(t.storage_offset) + " reach element " +
                std::to_string(last) + " of a storage of " + std::to_string(storage.numel) +
                " elements");
  }

  index.emplace(name, infos.size());
  infos.push_back(TensorInfo{name, storage.dtype, t.size});
  views.push_back(View{key, t.storage_offset, t.stride});
  ++views_of[key];
}

RecordBytes TorchZipFile::Impl::read_record(const std::string& key, const std::string& tensor) const {
  const std::string what = "tensor " + in_quotes(tensor) + ": cannot read storage record data/" + key;
  RecordBytes bytes;
  std::tie(bytes.data, bytes.size) = reader_call(path, what, [&] { return reader->getRecord("data/" + key); });
  const uint64_t expected = storage_bytes.at(key);
  if (bytes.size != expected) {
    throw Error(path + ": " + what + ": the record is " + std::to_string(bytes.size) +
                " bytes, the pickle says " + std::to_string(expected));
  }
  return bytes;
}

std::shared_ptr<RecordBytes> TorchZipFile::Impl::record(const std::string& key,
                                                        const std::string& tensor) const {
  std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<RecordBytes>& slot = cache[key];
  if (auto alive = slot.lock()) return alive;
  auto bytes = std::make_shared<RecordBytes>(read_record(key, tensor));
  slot = bytes;
  return bytes;
}

TorchZipFile::TorchZipFile(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.open_archive();
  auto [pkl, pkl_size] = reader_call(path, "cannot read data.pkl",
                                     [&] { return m.reader->getRecord("data.pkl"); });
  const pickle::Unpickled parsed = pickle::unpickle_restricted(
      static_cast<const unsigned char*>(pkl.get()), pkl_size, path);
  if (parsed.root->kind != Value::Kind::Dict) {
    throw Error(path + ": data.pkl holds a " + std::string(pickle::kind_name(parsed.root->kind)) +
                ", expected a dict of tensors (a state_dict)");
  }
  std::size_t visits = 0;
  m.collect(parsed.root, "", 0, &visits);
}

TorchZipFile::~TorchZipFile() = default;

const std::vector<TensorInfo>& TorchZipFile::tensors() const { return impl_->infos; }

const std::map<std::string, nlohmann::json>& TorchZipFile::scalars() const { return impl_->scalars; }

at::Tensor TorchZipFile::load(const std::string& name) const {
  const auto it = impl_->index.find(name);
  if (it == impl_->index.end()) {
    throw Error(impl_->path + ": no tensor named " + in_quotes(name));
  }
  const TensorInfo& info = impl_->infos[it->second];
  const View& view = impl_->views[it->second];
  const auto options = at::TensorOptions().dtype(scalar_type(info.dtype)).device(at::kCPU);
  int64_t numel = 1;
  for (int64_t d : info.shape) numel *= d;  // fits: checked in add_tensor
  if (numel == 0) return at::empty(info.shape, options);
  if (impl_->views_of.at(view.key) == 1 && view.storage_offset == 0 &&
      c10::IntArrayRef(view.stride).equals(c10::contiguous_strides(info.shape)) &&
      static_cast<uint64_t>(numel) * element_size(info.dtype) == impl_->storage_bytes.at(view.key)) {
    // The storage's only tensor, and all of it: the tensor owns the record's bytes (LibTorch's
    // CPU allocation), so a loader can keep it as it is instead of copying it and leaving the
    // record's block freed behind each weight.
    RecordBytes bytes;
    {
      std::lock_guard<std::mutex> lock(impl_->mutex);
      bytes = impl_->read_record(view.key, name);
    }
    at::Storage storage(at::Storage::use_byte_size_t(), bytes.size, std::move(bytes.data), nullptr, false);
    return at::empty({0}, options).set_(std::move(storage), 0, info.shape, view.stride);
  }
  const std::shared_ptr<RecordBytes> bytes = impl_->record(view.key, name);
  // add_tensor checked that the view stays inside numel x element size = bytes->size.
  auto* base = static_cast<unsigned char*>(bytes->data.get()) +
               static_cast<std::size_t>(view.storage_offset) * element_size(info.dtype);
  std::shared_ptr<RecordBytes> keep = bytes;
  return at::from_blob(base, info.shape, view.stride, [keep](void*) mutable { keep.reset(); },
                       options);
}

std::string TorchZipFile::describe() const { return impl_->path; }

}  // namespace poslens
