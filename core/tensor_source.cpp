// Names and sizes of stored element types (safetensors spelling, huggingface/safetensors).
#include "core/tensor_source.h"

namespace poslens {

const char* to_string(StoredDType dtype) {
  switch (dtype) {
    case StoredDType::F32: return "F32";
    case StoredDType::F16: return "F16";
    case StoredDType::BF16: return "BF16";
    case StoredDType::F64: return "F64";
    case StoredDType::I64: return "I64";
    case StoredDType::I32: return "I32";
    case StoredDType::I16: return "I16";
    case StoredDType::I8: return "I8";
    case StoredDType::U8: return "U8";
    case StoredDType::Bool: return "BOOL";
  }
  return "?";
}

std::size_t element_size(StoredDType dtype) {
  switch (dtype) {
    case StoredDType::F64:
    case StoredDType::I64: return 8;
    case StoredDType::F32:
    case StoredDType::I32: return 4;
    case StoredDType::F16:
    case StoredDType::BF16:
    case StoredDType::I16: return 2;
    case StoredDType::I8:
    case StoredDType::U8:
    case StoredDType::Bool: return 1;
  }
  return 1;
}

at::ScalarType scalar_type(StoredDType dtype) {
  switch (dtype) {
    case StoredDType::F32: return at::kFloat;
    case StoredDType::F16: return at::kHalf;
    case StoredDType::BF16: return at::kBFloat16;
    case StoredDType::F64: return at::kDouble;
    case StoredDType::I64: return at::kLong;
    case StoredDType::I32: return at::kInt;
    case StoredDType::I16: return at::kShort;
    case StoredDType::I8: return at::kChar;
    case StoredDType::U8: return at::kByte;
    case StoredDType::Bool: return at::kBool;
  }
  return at::kFloat;
}

bool stored_dtype_of(at::ScalarType type, StoredDType* out) {
  switch (type) {
    case at::kFloat: *out = StoredDType::F32; return true;
    case at::kHalf: *out = StoredDType::F16; return true;
    case at::kBFloat16: *out = StoredDType::BF16; return true;
    case at::kDouble: *out = StoredDType::F64; return true;
    case at::kLong: *out = StoredDType::I64; return true;
    case at::kInt: *out = StoredDType::I32; return true;
    case at::kShort: *out = StoredDType::I16; return true;
    case at::kChar: *out = StoredDType::I8; return true;
    case at::kByte: *out = StoredDType::U8; return true;
    case at::kBool: *out = StoredDType::Bool; return true;
    default: return false;
  }
}

}  // namespace poslens
