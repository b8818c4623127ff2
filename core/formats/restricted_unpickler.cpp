// Restricted unpickler for torch.save's data.pkl. Opcode meanings: Python's Lib/pickletools.py;
// the allow-list follows torch/_weights_only_unpickler.py and what torch/serialization.py
// (_save) and torch/_tensor.py (__reduce_ex__) write for a dict of tensors.
#include "core/formats/restricted_unpickler.h"

#include <cstring>
#include <unordered_map>

#include "core/base/error.h"

namespace poslens::pickle {
namespace {

/// Name of every opcode of pickle protocols 0-5 (pickletools), for messages.
const char* opcode_name(unsigned char op) {
  switch (op) {
    case '(': return "MARK";
    case '.': return "STOP";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'F': return "FLOAT";
    case 'I': return "INT";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'L': return "LONG";
    case 'M': return "BININT2";
    case 'N': return "NONE";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 'R': return "REDUCE";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 'X': return "BINUNICODE";
    case 'a': return "APPEND";
    case 'b': return "BUILD";
    case 'c': return "GLOBAL";
    case 'd': return "DICT";
    case '}': return "EMPTY_DICT";
    case 'e': return "APPENDS";
    case 'g': return "GET";
    case 'h': return "BINGET";
    case 'i': return "INST";
    case 'j': return "LONG_BINGET";
    case 'l': return "LIST";
    case ']': return "EMPTY_LIST";
    case 'o': return "OBJ";
    case 'p': return "PUT";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 's': return "SETITEM";
    case 't': return "TUPLE";
    case ')': return "EMPTY_TUPLE";
    case 'u': return "SETITEMS";
    case 'G': return "BINFLOAT";
    case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";
    case 0x80: return "PROTO";
    case 0x81: return "NEWOBJ";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 0x8c: return "SHORT_BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 0x8e: return "BINBYTES8";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 0x93: return "STACK_GLOBAL";
    case 0x94: return "MEMOIZE";
    case 0x95: return "FRAME";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
  }
}

std::string hex_byte(unsigned char b) {
  static const char* const kDigits = "0123456789abcdef";
  return std::string("0x") + kDigits[b >> 4] + kDigits[b & 15];
}

/// The torch.<Name>Storage types a tensor may be stored in, with their element types.
bool storage_dtype(const std::string& name, StoredDType* out) {
  static const std::pair<const char*, StoredDType> kTable[] = {
      {"FloatStorage", StoredDType::F32},  {"HalfStorage", StoredDType::F16},
      {"BFloat16Storage", StoredDType::BF16}, {"DoubleStorage", StoredDType::F64},
      {"LongStorage", StoredDType::I64},   {"IntStorage", StoredDType::I32},
      {"ShortStorage", StoredDType::I16},  {"CharStorage", StoredDType::I8},
      {"ByteStorage", StoredDType::U8},    {"BoolStorage", StoredDType::Bool}};
  for (const auto& [storage, dtype] : kTable) {
    if (name == storage) {
      *out = dtype;
      return true;
    }
  }
  return false;
}

class Parser {
 public:
  Parser(const unsigned char* data, std::size_t size, const std::string& where,
         std::size_t max_values)
      : data_(data), size_(size), where_(where), max_values_(max_values) {}

  Unpickled run();

 private:
  const unsigned char* data_;
  std::size_t size_;
  std::string where_;
  std::size_t max_values_;
  std::size_t pos_ = 0;     // next byte to read
  std::size_t op_pos_ = 0;  // offset of the opcode being executed
  unsigned char op_ = 0;
  Unpickled out_;
  std::vector<Value*> stack_;
  std::vector<std::size_t> marks_;  // stack sizes at each open MARK
  std::unordered_map<uint64_t, Value*> memo_;
  /// Per dict: position in `entries` of each key ("s" + str or "i" + int).
  std::unordered_map<const Value*, std::unordered_map<std::string, std::size_t>> key_index_;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where_ + ": pickle offset " + std::to_string(op_pos_) + " (" +
                opcode_name(op_) + "): " + what);
  }
  const unsigned char* take(std::size_t n);
  uint64_t take_le(std::size_t n);
  std::string take_line();
  std::string take_text(uint64_t n);

  Value* make(Value::Kind kind);
  Value* pop();
  Value* top();
  std::vector<Value*> pop_mark();
  void push(Value* v) { stack_.push_back(v); }

  Value* global(const std::string& module, const std::string& name);
  Value* reduce(const Value* callable, const Value* args);
  Value* rebuild_tensor(const std::string& fn, const Value& args);
  Value* persistent_load(const Value* pid);
  void set_item(Value* dict, const Value* key, const Value* value);
  Value* mutable_container(const Value* v, Value::Kind kind, const char* what);
};

const unsigned char* Parser::take(std::size_t n) {
  if (n > size_ - pos_) {
    fail("needs " + std::to_string(n) + " bytes but only " + std::to_string(size_ - pos_) +
         " remain (truncated pickle?)");
  }
  const unsigned char* p = data_ + pos_;
  pos_ += n;
  return p;
}

uint64_t Parser::take_le(std::size_t n) {
  const unsigned char* p = take(n);
  uint64_t v = 0;
  for (std::size_t i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

std::string Parser::take_line() {
  const void* nl = std::memchr(data_ + pos_, '\n', size_ - pos_);
  if (nl == nullptr) fail("line without a terminating newline (truncated pickle?)");
  const std::size_t n = static_cast<const unsigned char*>(nl) - (data_ + pos_);
  std::string line(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n + 1;
  return line;
}

std::string Parser::take_text(uint64_t n) {
  if (n > size_ - pos_) {
    fail("string of " + std::to_string(n) + " bytes but only " + std::to_string(size_ - pos_) +
         " remain (truncated pickle?)");
  }
  const unsigned char* p = take(static_cast<std::size_t>(n));
  return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
}

Value* Parser::make(Value::Kind kind) {
  if (out_.values.size() >= max_values_) {
    fail("the pickle builds more than " + std::to_string(max_values_) + " values");
  }
  out_.values.push_back(std::make_unique<Value>());
  out_.values.back()->kind = kind;
  return out_.values.back().get();
}

Value* Parser::pop() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) {
    fail("stack underflow");
  }
  Value* v = stack_.back();
  stack_.pop_back();
  return v;
}

Value* Parser::top() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back())) {
    fail("stack underflow");
  }
  return stack_.back();
}

std::vector<Value*> Parser::pop_mark() {
  if (marks_.empty()) fail("no MARK to pop to");
  const std::size_t mark = marks_.back();
  marks_.pop_back();
  std::vector<Value*> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
  stack_.resize(mark);
  return items;
}

Value* Parser::mutable_container(const Value* v, Value::Kind kind, const char* what) {
  if (v->kind != kind) {
    fail(std::string(what) + " on a " + kind_name(v->kind) + ", expected a " + kind_name(kind));
  }
  // Every Value is owned by out_ and was created mutable; the graph stores const pointers only
  // so that readers cannot change it.
  return const_cast<Value*>(v);
}

void Parser::set_item(Value* dict, const Value* key, const Value* value) {
  std::string canonical;
  if (key->kind == Value::Kind::String) {
    canonical = "s" + key->text;
  } else if (key->kind == Value::Kind::Int) {
    canonical = "i" + std::to_string(key->integer);
  } else {
    fail(std::string("dict key of type ") + kind_name(key->kind) +
         " is not supported (only str and int keys)");
  }
  const auto [it, inserted] = key_index_[dict].emplace(canonical, dict->entries.size());
  if (inserted) {
    dict->entries.emplace_back(key, value);
  } else {
    dict->entries[it->second].second = value;  // Python: d[k] = v keeps the key's position
  }
}

Value* Parser::global(const std::string& module, const std::string& name) {
  static const char* const kRebuilders[] = {"_rebuild_tensor_v2", "_rebuild_tensor",
                                            "_rebuild_parameter",
                                            "_rebuild_parameter_with_state"};
  bool allowed = module == "collections" && name == "OrderedDict";
  for (const char* fn : kRebuilders) allowed = allowed || (module == "torch._utils" && name == fn);
  StoredDType dtype = StoredDType::F32;
  if (module == "torch" && name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0) {
    if (!storage_dtype(name, &dtype)) {
      fail("storage type torch." + name + " is not supported (supported: Float, Half, BFloat16, "
           "Double, Long, Int, Short, Char, Byte and Bool storages)");
    }
    allowed = true;
  }
  if (!allowed) {
    throw Error(where_ + ": refusing to load global \"" + module + "." + name +
                "\" (only a plain state_dict of tensors can be read)");
  }
  Value* g = make(Value::Kind::Global);
  g->text = module + "." + name;
  g->dtype = dtype;
  return g;
}

Value* Parser::rebuild_tensor(const std::string& fn, const Value& args) {
  const std::size_t n = args.items.size();
  const bool v2 = fn == "torch._utils._rebuild_tensor_v2";
  if (v2 ? (n != 6 && n != 7) : n != 4) {
    fail(fn + " called with " + std::to_string(n) + " arguments, expected " +
         (v2 ? "6 or 7" : "4"));
  }
  const Value* storage = args.items[0];
  const Value* offset = args.items[1];
  const Value* size = args.items[2];
  const Value* stride = args.items[3];
  auto expect = [&](const Value* v, Value::Kind kind, const char* what) {
    if (v->kind != kind) {
      fail(fn + " argument " + what + " is a " + kind_name(v->kind) + ", expected a " +
           kind_name(kind));
    }
  };
  expect(storage, Value::Kind::Storage, "storage");
  expect(offset, Value::Kind::Int, "storage_offset");
  expect(size, Value::Kind::Tuple, "size");
  expect(stride, Value::Kind::Tuple, "stride");
  if (v2) expect(args.items[4], Value::Kind::Bool, "requires_grad");
  // backward_hooks (an empty OrderedDict) and metadata are not needed to read the values.
  Value* t = make(Value::Kind::Tensor);
  t->storage = storage;
  t->storage_offset = offset->integer;
  for (const Value* d : size->items) {
    expect(d, Value::Kind::Int, "size element");
    t->size.push_back(d->integer);
  }
  for (const Value* d : stride->items) {
    expect(d, Value::Kind::Int, "stride element");
    t->stride.push_back(d->integer);
  }
  return t;
}

Value* Parser::reduce(const Value* callable, const Value* args) {
  if (callable->kind != Value::Kind::Global) {
    fail(std::string("cannot call a ") + kind_name(callable->kind));
  }
  if (args->kind != Value::Kind::Tuple) {
    fail("arguments of " + callable->text + " are a " + kind_name(args->kind) +
         ", expected a tuple");
  }
  const std::string& fn = callable->text;
  const std::size_t n = args->items.size();
  if (fn == "collections.OrderedDict") {
    if (n != 0) fail("collections.OrderedDict called with arguments; expected ()");
    return make(Value::Kind::Dict);
  }
  if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor") {
    return rebuild_tensor(fn, *args);
  }
  if (fn == "torch._utils._rebuild_parameter" ||
      fn == "torch._utils._rebuild_parameter_with_state") {
    const std::size_t expected = fn == "torch._utils._rebuild_parameter" ? 3 : 4;
    if (n != expected || args->items[0]->kind != Value::Kind::Tensor) {
      fail(fn + " expects (tensor, requires_grad, backward_hooks" +
           (expected == 4 ? ", state)" : ")"));
    }
    return const_cast<Value*>(args->items[0]);  // a Parameter reads as its data tensor
  }
  fail("global " + fn + " cannot be called");  // a storage type
}

Value* Parser::persistent_load(const Value* pid) {
  const auto& it = pid->items;
  if (pid->kind != Value::Kind::Tuple || it.size() != 5 || it[0]->kind != Value::Kind::String ||
      it[0]->text != "storage" || it[1]->kind != Value::Kind::Global ||
      it[2]->kind != Value::Kind::String || it[3]->kind != Value::Kind::String ||
      it[4]->kind != Value::Kind::Int) {
    fail("persistent id is not ('storage', storage type, key, location, numel)");
  }
  if (it[1]->text.rfind("torch.", 0) != 0 || it[1]->text.find("Storage") == std::string::npos) {
    fail("persistent id names " + it[1]->text + " where a storage type belongs");
  }
  if (it[4]->integer < 0) fail("storage with negative numel " + std::to_string(it[4]->integer));
  Value* s = make(Value::Kind::Storage);
  s->dtype = it[1]->dtype;
  s->text = it[2]->text;  // it[3], the device it was saved from, is not needed on the CPU
  s->numel = it[4]->integer;
  return s;
}

Unpickled Parser::run() {
  while (pos_ < size_) {
    op_pos_ = pos_;
    op_ = data_[pos_++];
    switch (op_) {
      case 0x80: {  // PROTO
        const unsigned version = *take(1);
        if (version < 2 || version > 5) fail("protocol " + std::to_string(version));
        break;
      }
      case 0x95:  // FRAME: the frame length is only a buffering hint
        take(8);
        break;
      case '.': {  // STOP
        if (stack_.size() != 1 || !marks_.empty()) {
          fail("STOP leaves " + std::to_string(stack_.size()) + " values and " +
               std::to_string(marks_.size()) + " open MARKs, expected one value");
        }
        out_.root = stack_.back();
        return std::move(out_);
      }
      case '(':  // MARK
        marks_.push_back(stack_.size());
        break;
      case 'N':
        push(make(Value::Kind::None));
        break;
      case 0x88:    // NEWTRUE
      case 0x89: {  // NEWFALSE
        Value* v = make(Value::Kind::Bool);
        v->boolean = op_ == 0x88;
        push(v);
        break;
      }
      case 'J':    // BININT: signed 32-bit
      case 'K':    // BININT1: unsigned 8-bit
      case 'M': {  // BININT2: unsigned 16-bit
        Value* v = make(Value::Kind::Int);
        if (op_ == 'J') {
          v->integer = static_cast<int32_t>(static_cast<uint32_t>(take_le(4)));
        } else {
          v->integer = static_cast<int64_t>(take_le(op_ == 'K' ? 1 : 2));
        }
        push(v);
        break;
      }
      case 0x8a: {  // LONG1: n bytes, little-endian two's complement
        const std::size_t n = *take(1);
        if (n > 8) fail("integer of " + std::to_string(n) + " bytes does not fit in 64 bits");
        uint64_t u = n == 0 ? 0 : take_le(n);
        if (n > 0 && n < 8 && (u >> (8 * n - 1)) != 0) u |= ~uint64_t{0} << (8 * n);  // sign
        Value* v = make(Value::Kind::Int);
        std::memcpy(&v->integer, &u, sizeof u);
        push(v);
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        const unsigned char* p = take(8);
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
        Value* v = make(Value::Kind::Float);
        std::memcpy(&v->real, &u, sizeof u);
        push(v);
        break;
      }
      case 'X':     // BINUNICODE
      case 0x8c:    // SHORT_BINUNICODE
      case 0x8d: {  // BINUNICODE8
        const uint64_t n = take_le(op_ == 'X' ? 4 : op_ == 0x8c ? 1 : 8);
        Value* v = make(Value::Kind::String);
        v->text = take_text(n);
        push(v);
        break;
      }
      case ')':
        push(make(Value::Kind::Tuple));
        break;
      case 't':
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE, TUPLE1, TUPLE2, TUPLE3
        Value* v = make(Value::Kind::Tuple);
        if (op_ == 't') {
          for (Value* item : pop_mark()) v->items.push_back(item);
        } else {
          v->items.resize(op_ - 0x84);
          for (std::size_t i = v->items.size(); i-- > 0;) v->items[i] = pop();
        }
        push(v);
        break;
      }
      case ']':
        push(make(Value::Kind::List));
        break;
      case 'a': {  // APPEND
        Value* item = pop();
        mutable_container(top(), Value::Kind::List, "APPEND")->items.push_back(item);
        break;
      }
      case 'e': {  // APPENDS
        const std::vector<Value*> items = pop_mark();
        Value* list = mutable_container(top(), Value::Kind::List, "APPENDS");
        list->items.insert(list->items.end(), items.begin(), items.end());
        break;
      }
      case '}':
        push(make(Value::Kind::Dict));
        break;
      case 's': {  // SETITEM
        Value* value = pop();
        Value* key = pop();
        set_item(mutable_container(top(), Value::Kind::Dict, "SETITEM"), key, value);
        break;
      }
      case 'u': {  // SETITEMS
        const std::vector<Value*> items = pop_mark();
        if (items.size() % 2 != 0) fail("odd number of values for key/value pairs");
        Value* dict = mutable_container(top(), Value::Kind::Dict, "SETITEMS");
        for (std::size_t i = 0; i < items.size(); i += 2) set_item(dict, items[i], items[i + 1]);
        break;
      }
      case 'q':     // BINPUT
      case 'r':     // LONG_BINPUT
      case 0x94: {  // MEMOIZE: the next free index
        const uint64_t index = op_ == 0x94 ? memo_.size() : take_le(op_ == 'q' ? 1 : 4);
        memo_[index] = top();
        break;
      }
      case 'h':    // BINGET
      case 'j': {  // LONG_BINGET
        const uint64_t index = take_le(op_ == 'h' ? 1 : 4);
        const auto it = memo_.find(index);
        if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " was never stored");
        push(it->second);
        break;
      }
      case 'c': {  // GLOBAL "module\nname\n"
        const std::string module = take_line();
        const std::string name = take_line();
        push(global(module, name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const Value* name = pop();
        const Value* module = pop();
        if (module->kind != Value::Kind::String || name->kind != Value::Kind::String) {
          fail("module and name must be str");
        }
        push(global(module->text, name->text));
        break;
      }
      case 'R': {  // REDUCE
        const Value* args = pop();
        const Value* callable = pop();
        push(reduce(callable, args));
        break;
      }
      case 'b': {  // BUILD: only the OrderedDict's attributes (state_dict._metadata)
        pop();     // the state is not needed
        mutable_container(top(), Value::Kind::Dict, "BUILD");
        break;
      }
      case 'Q':  // BINPERSID
        push(persistent_load(pop()));
        break;
      default: {
        const char* name = opcode_name(op_);
        throw Error(where_ + ": " + (name ? "unsupported" : "unknown") + " pickle opcode " +
                    hex_byte(op_) + (name ? std::string(" (") + name + ")" : std::string()) +
                    " at offset " + std::to_string(op_pos_) +
                    " (a state_dict of tensors needs none)");
      }
    }
  }
  throw Error(where_ + ": pickle ends at offset " + std::to_string(size_) +
              " without STOP (truncated?)");
}

}  // namespace

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::Tuple: return "tuple";
    case Value::Kind::List: return "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Global: return "global";
    case Value::Kind::Storage: return "storage";
    case Value::Kind::Tensor: return "tensor";
  }
  return "?";
}

Unpickled unpickle_restricted(const unsigned char* data, std::size_t size,
                              const std::string& where, std::size_t max_values) {
  return Parser(data, size, where, max_values).run();
}

}  // namespace poslens::pickle
