// safetensors reader (memory-mapped, fully validated before any data is touched) and writer.
// Format: huggingface/safetensors (docs "safetensors format"): u64 little-endian header length N,
// N bytes of UTF-8 JSON, then the data buffer that "data_offsets" index into.
#include "core/formats/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "core/base/error.h"
#include "core/base/mapped_file.h"
#include "core/base/shape_text.h"
#include "core/base/text.h"
#include "core/base/untrusted_json.h"

namespace poslens {
namespace {

using ojson = nlohmann::ordered_json;  // keeps the file's key order ("tensors in file order")

/// Largest accepted header, as in the reference implementation (MAX_HEADER_SIZE).
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;




/// Reads a JSON integer that must be >= 0 and <= INT64_MAX. Returns false otherwise.
bool get_nonnegative(const ojson& v, std::uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<std::uint64_t>();
    return *out <= static_cast<std::uint64_t>(std::numeric_limits<int64_t>::max());
  }
  if (v.is_number_integer()) {  // signed: only reaches here when negative
    const auto s = v.get<int64_t>();
    if (s < 0) return false;
    *out = static_cast<std::uint64_t>(s);
    return true;
  }
  return false;
}

/// Maps `path` and checks it can hold the 8-byte header length.
std::shared_ptr<const MappedFile> map_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (file->size() < 8)
    throw Error(path + ": file is " + std::to_string(file->size()) +
                " bytes, too short for the 8-byte safetensors header length");
  return file;
}

struct Range {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// SafetensorsFile

struct SafetensorsFile::Impl {
  std::string path;
  std::shared_ptr<const MappedFile> mapping;
  std::uint64_t header_bytes = 0;  // N
  std::uint64_t data_bytes = 0;    // file size - 8 - N
  std::vector<TensorInfo> infos;   // header order
  std::vector<Range> ranges;       // parallel to infos, relative to the data buffer
  std::unordered_map<std::string, std::size_t> index;
  std::map<std::string, std::string> metadata;

  void parse_header();
  void parse_entry(const std::string& name, const ojson& entry);
  void check_overlaps() const;
  std::string tensor_where(const std::string& name) const {
    return path + ": tensor " + quoted(name);
  }
};

void SafetensorsFile::Impl::parse_header() {
  const unsigned char* base = mapping->bytes();
  const std::uint64_t file_size = mapping->size();
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | base[i];  // little-endian u64
  if (n > kMaxHeaderBytes) {
    throw Error(path + ": header length " + std::to_string(n) + " bytes exceeds the limit of " +
                std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (n > file_size - 8) {
    throw Error(path + ": header length " + std::to_string(n) + " bytes does not fit in the " +
                std::to_string(file_size) + "-byte file (truncated file?)");
  }
  header_bytes = n;
  data_bytes = file_size - 8 - n;

  const char* text = reinterpret_cast<const char*>(base + 8);
  const ojson header = parse_untrusted_json(text, text + n, path, "header");
  if (!header.is_object()) {
    throw Error(path + ": header is a JSON " + std::string(header.type_name()) +
                ", expected an object");
  }
  for (const auto& item : header.items()) {
    const std::string& name = item.key();
    const ojson& value = item.value();
    if (name == "__metadata__") {
      if (!value.is_object()) {
        throw Error(path + ": \"__metadata__\" is a JSON " + std::string(value.type_name()) +
                    ", expected an object of string -> string");
      }
      for (const auto& kv : value.items()) {
        if (!kv.value().is_string()) {
          throw Error(path + ": \"__metadata__\" value for key " + quoted(kv.key()) +
                      " is a JSON " + std::string(kv.value().type_name()) +
                      ", expected a string");
        }
        metadata[kv.key()] = kv.value().get<std::string>();
      }
      continue;
    }
    parse_entry(name, value);
  }
  check_overlaps();
}

void SafetensorsFile::Impl::parse_entry(const std::string& name, const ojson& entry) {
  const std::string where = tensor_where(name);
  if (!entry.is_object()) {
    throw Error(where + ": entry is a JSON " + std::string(entry.type_name()) +
                ", expected an object with dtype, shape, data_offsets");
  }
  // dtype
  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    throw Error(where + ": missing string \"dtype\"");
  }
  TensorInfo info;
  info.name = name;
  if (!stored_dtype_from_name(dtype_it->get<std::string>(), &info.dtype)) {
    throw Error(where + ": unknown dtype " + quoted(dtype_it->get<std::string>()) +
                " (supported: " + kStoredDTypeNames + ")");
  }
  // shape
  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    throw Error(where + ": missing array \"shape\"");
  }
  // Product of max(dim, 1) must fit int64 so that LibTorch's stride computation cannot
  // overflow even for a zero-element tensor; numel is that product, or 0 if any dim is 0.
  std::uint64_t product = 1;
  bool has_zero = false;
  for (std::size_t i = 0; i < shape_it->size(); ++i) {
    const ojson& d = (*shape_it)[i];
    std::uint64_t dim = 0;
    if (!get_nonnegative(d, &dim)) {
      throw Error(where + ": shape " + shape_it->dump() + ": dimension " + std::to_string(i) +
                  " is " + d.dump() + ", expected an integer in [0, 2^63)");
    }
    info.shape.push_back(static_cast<int64_t>(dim));
    if (dim == 0) {
      has_zero = true;
      continue;
    }
    if (product > static_cast<std::uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
      throw Error(where + ": shape " + shape_it->dump() + " has too many elements");
    }
    product *= dim;
  }
  const std::uint64_t numel = has_zero ? 0 : product;
  const std::uint64_t esize = element_size(info.dtype);
  if (numel > std::numeric_limits<std::uint64_t>::max() / esize) {
    throw Error(where + ": shape " + shape_it->dump() + " has too many elements");
  }
  const std::uint64_t nbytes = numel * esize;
  // data_offsets
  const auto off_it = entry.find("data_offsets");
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  if (off_it == entry.end() || !off_it->is_array() || off_it->size() != 2 ||
      !get_nonnegative((*off_it)[0], &begin) || !get_nonnegative((*off_it)[1], &end)) {
    throw Error(where + ": \"data_offsets\" must be [begin, end] with non-negative integers" +
                (off_it == entry.end() ? std::string(" (missing)") : ", got " + off_it->dump()));
  }
  if (begin > end) {
    throw Error(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                "] end before begin");
  }
  if (end - begin != nbytes) {
    throw Error(where + ": shape " + shape_str(info.shape) + " x " + to_string(info.dtype) +
                " needs " + std::to_string(nbytes) + " bytes but data_offsets span " +
                std::to_string(end - begin));
  }
  if (end > data_bytes) {
    throw Error(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                "] reach past the end of the data buffer (" + std::to_string(data_bytes) +
                " bytes)");
  }
  index.emplace(name, infos.size());  // keys are unique: duplicates were rejected by the parser
  infos.push_back(std::move(info));
  ranges.push_back({begin, end});
}

void SafetensorsFile::Impl::check_overlaps() const {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].end > ranges[i].begin) order.push_back(i);  // empty ranges overlap nothing
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a].begin != ranges[b].begin ? ranges[a].begin < ranges[b].begin
                                              : ranges[a].end < ranges[b].end;
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const Range& prev = ranges[order[k - 1]];
    const Range& cur = ranges[order[k]];
    if (prev.end > cur.begin) {
      throw Error(path + ": tensors " + quoted(infos[order[k - 1]].name) + " [" +
                  std::to_string(prev.begin) + ", " + std::to_string(prev.end) + ") and " +
                  quoted(infos[order[k]].name) + " [" + std::to_string(cur.begin) + ", " +
                  std::to_string(cur.end) + ") overlap");
    }
  }
}

SafetensorsFile::SafetensorsFile(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->mapping = map_file(path);
  impl_->parse_header();
}

SafetensorsFile::~SafetensorsFile() = default;

const std::vector<TensorInfo>& SafetensorsFile::tensors() const { return impl_->infos; }

at::Tensor SafetensorsFile::load(const std::string& name) const {
  const auto it = impl_->index.find(name);
  if (it == impl_->index.end()) {
    throw Error(impl_->path + ": no tensor named " + quoted(name));
  }
  const TensorInfo& info = impl_->infos[it->second];
  const Range& range = impl_->ranges[it->second];
  const unsigned char* data =
      impl_->mapping->bytes() + 8 + impl_->header_bytes + range.begin;
  const auto options = torch::TensorOptions().dtype(scalar_type(info.dtype)).device(torch::kCPU);
  const std::size_t esize = element_size(info.dtype);
  if (reinterpret_cast<std::uintptr_t>(data) % esize != 0) {
    // The format does not require aligned offsets; kernels may assume alignment, so copy.
    at::Tensor copy = torch::empty(info.shape, options);
    if (range.end > range.begin) std::memcpy(copy.data_ptr(), data, range.end - range.begin);
    return copy;
  }
  // from_blob needs void*; the mapping is PROT_READ, so the tensor must never be written.
  // The deleter holds the mapping, so the tensor outlives this SafetensorsFile safely.
  std::shared_ptr<const MappedFile> keep = impl_->mapping;
  return torch::from_blob(const_cast<unsigned char*>(data), info.shape,
                          [keep](void*) mutable { keep.reset(); }, options);
}

std::string SafetensorsFile::describe() const { return impl_->path; }

void SafetensorsFile::release(const std::string& name) const {
  const auto it = impl_->index.find(name);
  if (it == impl_->index.end()) return;
  const Range& range = impl_->ranges[it->second];
  impl_->mapping->drop_pages(8 + impl_->header_bytes + range.begin, range.end - range.begin);
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return impl_->metadata;
}

}  // namespace poslens
