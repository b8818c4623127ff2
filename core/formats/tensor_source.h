#pragma once
// A named collection of checkpoint tensors (a safetensors file, a set of shards, a llama2.c
// .bin). The architecture tables (weight_table.h) read from this interface only, so every
// format is validated and mapped the same way.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace poslens {

/// Element type of a stored tensor, as named in safetensors ("F32", "F16", "BF16", ...).
/// F8_E4M3 is FP8 (OCP 8-bit floating point, E4M3 "fn": no infinities), the element type of
/// block-quantised checkpoints; it loads as its raw bytes (core/formats/fp8.h decodes them).
enum class StoredDType { F32, F16, BF16, F64, I64, I32, I16, I8, U8, Bool, F8_E4M3 };

/// Every stored dtype's name, for error messages.
inline constexpr char kStoredDTypeNames[] = "F32 F16 BF16 F64 I64 I32 I16 I8 U8 BOOL F8_E4M3";

/// Name of a stored dtype in safetensors spelling ("F32").
const char* to_string(StoredDType dtype);
/// Size in bytes of one element.
std::size_t element_size(StoredDType dtype);
/// The LibTorch dtype of a stored dtype (F32 -> kFloat, BF16 -> kBFloat16, U8 and F8_E4M3 -> kByte, ...).
at::ScalarType scalar_type(StoredDType dtype);
/// The stored dtype named `name` in safetensors spelling ("BF16"); false for an unknown name.
bool stored_dtype_from_name(const std::string& name, StoredDType* out);
/// The stored dtype of a LibTorch dtype; false for types safetensors cannot hold (complex, ...).
bool stored_dtype_of(at::ScalarType type, StoredDType* out);

struct TensorInfo {
  std::string name;
  StoredDType dtype = StoredDType::F32;
  std::vector<int64_t> shape;
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  /// Every tensor the source holds, in file order.
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  /// A CPU tensor with the stored dtype and shape. It may alias memory owned by the source
  /// (a memory map), so it is valid only while the source lives; clone or convert to keep it.
  /// Throws poslens::Error if the name is unknown.
  virtual at::Tensor load(const std::string& name) const = 0;
  /// Where the tensors come from, for error messages ("model.safetensors").
  virtual std::string describe() const = 0;
  /// The caller has copied `name` out: memory the source holds for it may go (a memory map's
  /// pages). The tensor load() gave must not be read afterwards. Nothing by default.
  virtual void release(const std::string& name) const { (void)name; }
};

}  // namespace poslens
