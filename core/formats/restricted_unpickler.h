#pragma once
// A restricted unpickler for the `data.pkl` of a torch.save archive: it builds a graph of plain
// values from the pickle opcodes a state_dict uses and never calls, imports or executes
// anything. Like PyTorch's `weights_only=True` loader (torch/_weights_only_unpickler.py), it
// accepts only an allow-list of globals and interprets each of them itself.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/formats/tensor_source.h"

namespace poslens::pickle {

/// One value of the pickle. Which fields are set depends on `kind`; containers point to other
/// values of the same Unpickled. The graph may share values (the pickle memo) and may even be
/// cyclic (a hostile pickle can put a dict into itself), so walk it with a depth limit.
struct Value {
  enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };
  Kind kind = Kind::None;

  bool boolean = false;  // Bool
  int64_t integer = 0;   // Int
  double real = 0.0;     // Float
  /// String: the text (UTF-8 bytes as stored). Global: "module.name". Storage: the record key.
  std::string text;
  std::vector<const Value*> items;                            // Tuple, List
  std::vector<std::pair<const Value*, const Value*>> entries;  // Dict, insertion order

  /// Storage (from a persistent id): element type and element count; the saved device
  /// ("cpu", "cuda:0") is dropped. Global of a storage type: its element type.
  StoredDType dtype = StoredDType::F32;
  int64_t numel = 0;

  /// Tensor (from torch._utils._rebuild_tensor[_v2]): its Storage value, offset into the
  /// storage and size/stride, all in elements. Not yet checked against the storage's numel.
  const Value* storage = nullptr;
  int64_t storage_offset = 0;
  std::vector<int64_t> size;
  std::vector<int64_t> stride;
};

/// Python-style name of a kind for messages: "None", "bool", "int", "float", "str", "tuple",
/// "list", "dict", "global", "storage", "tensor".
const char* kind_name(Value::Kind kind);

/// Most values unpickle_restricted builds (about 2 GB of Values).
constexpr std::size_t kMaxPickleValues = 10'000'000;

/// The result of unpickling: the top-level value and the storage that owns every value.
struct Unpickled {
  const Value* root = nullptr;
  std::vector<std::unique_ptr<Value>> values;
};

/// Unpickles `size` bytes of `data`, a pickle of protocol 2 (what torch.save writes; the extra
/// opcodes of protocols 3-5 that carry no code - FRAME, MEMOIZE, SHORT_BINUNICODE,
/// BINUNICODE8, STACK_GLOBAL - are accepted too).
///
/// Accepted opcodes: PROTO, FRAME, STOP, MARK, NONE, NEWTRUE, NEWFALSE, BININT, BININT1,
/// BININT2, LONG1 (up to 8 bytes), BINFLOAT, BINUNICODE, SHORT_BINUNICODE, BINUNICODE8,
/// EMPTY_TUPLE, TUPLE, TUPLE1-3, EMPTY_LIST, APPEND, APPENDS, EMPTY_DICT, SETITEM, SETITEMS,
/// BINPUT, LONG_BINPUT, MEMOIZE, BINGET, LONG_BINGET, GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
/// BINPERSID. Dict keys must be str or int; setting an existing key replaces its value in
/// place, as in Python. At most `max_values` values are built (a state_dict needs about 20 per
/// tensor), which bounds the memory a hostile pickle can make us allocate.
///
/// Accepted globals and what REDUCE does with them (nothing is ever called):
///  - collections.OrderedDict() -> an empty Dict (BUILD on a dict, which sets the state_dict's
///    `_metadata` attribute, is accepted and its state dropped);
///  - torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
///    backward_hooks[, metadata]) and _rebuild_tensor(storage, offset, size, stride) -> Tensor;
///  - torch._utils._rebuild_parameter(tensor, requires_grad, backward_hooks) and
///    _rebuild_parameter_with_state(..., state) -> the tensor itself;
///  - torch.{Float,Half,BFloat16,Double,Long,Int,Short,Char,Byte,Bool}Storage, only inside a
///    persistent id.
/// A persistent id (BINPERSID) must be the tuple ('storage', storage type, key: str,
/// location: str, numel: int >= 0), as torch/serialization.py writes it; it becomes a Storage.
///
/// Throws poslens::Error, prefixed with `where`, on anything else: another global
/// (`<where>: refusing to load global "os.system" (only a plain state_dict of tensors can be
/// read)`), another storage type (complex, quantized), an opcode outside the list (named with
/// its byte and offset), wrong argument types, a stack underflow, a missing memo entry, a
/// length past the end of the data, too many values, or data that ends before STOP. STOP must leave exactly one
/// value and no open MARK; bytes after STOP are ignored.
Unpickled unpickle_restricted(const unsigned char* data, std::size_t size,
                              const std::string& where,
                              std::size_t max_values = kMaxPickleValues);

}  // namespace poslens::pickle
