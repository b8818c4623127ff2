#pragma once
// safetensors reader (memory-mapped) and writer.
// Format (huggingface/safetensors): 8-byte little-endian header length N, N bytes of UTF-8
// JSON {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}},
// then the data buffer; offsets are relative to the buffer start.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/formats/tensor_source.h"

namespace poslens {

/// A validated, memory-mapped safetensors file (POSIX mmap, PROT_READ, MAP_PRIVATE). The
/// constructor checks the whole header before any tensor data is touched: file >= 8 bytes,
/// header length N with 8 + N <= file size and N <= 100'000'000 bytes (the reference
/// MAX_HEADER_SIZE), valid UTF-8 JSON object (nesting <= 32, no repeated key), every entry an
/// object with a known dtype, a shape of integers in [0, 2^63) whose product fits int64,
/// data_offsets [begin, end] with end - begin == numel x element size, ranges inside the data
/// buffer (file size - 8 - N bytes), no two non-empty ranges overlapping (holes are allowed),
/// "__metadata__" an object of string -> string. Any violation throws poslens::Error naming the
/// file and, where there is one, the tensor and the numbers. tensors() is in header order.
/// Source: huggingface/safetensors format spec (README "Format").
class SafetensorsFile : public TensorSource {
 public:
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile() override;
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::vector<TensorInfo>& tensors() const override;
  /// The tensor `name`: CPU, the stored dtype (F32 -> kFloat, F16 -> kHalf, BF16 -> kBFloat16,
  /// F64 -> kDouble, I64 -> kLong, I32 -> kInt, I16 -> kShort, I8 -> kChar, U8 -> kByte,
  /// BOOL -> kBool) and shape. It aliases the read-only mapping (no copy) and shares ownership
  /// of it, so it stays valid after this object is destroyed; it must never be written (the
  /// pages are PROT_READ: a write faults) - clone before modifying. Data whose offset is not a
  /// multiple of the element size is copied into an aligned tensor instead. If the file is
  /// truncated on disk while mapped, reading the data raises SIGBUS (an OS limit of mmap).
  /// Throws poslens::Error naming the tensor and the file if the name is unknown.
  at::Tensor load(const std::string& name) const override;
  /// The path given to the constructor.
  std::string describe() const override;
  /// Drops the mapped pages of `name` (MappedFile::drop_pages): a tensor load() gave for it
  /// reads them again from the file.
  void release(const std::string& name) const override;
  /// The "__metadata__" object (empty if absent).
  const std::map<std::string, std::string>& metadata() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Writes CPU tensors (any of the ten dtypes above; non-contiguous ones are made contiguous) to
/// `path` as safetensors, data in the given order, "__metadata__" first when non-empty, the
/// header padded with spaces to a multiple of 8 bytes as the reference writer does. Writes
/// `path + ".tmp"`, fsyncs, then renames it over `path`. Throws poslens::Error on a non-CPU
/// tensor, an unsupported dtype, an empty, reserved ("__metadata__") or repeated name, or an I/O
/// failure; the temporary is removed and `path` is left untouched.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace poslens
