#pragma once
// Shared by the torch.save reader tests (test_torch_zip*.cpp): scratch files, the error text a
// call throws, raw tensor bytes, and hand-made archives written with LibTorch's own
// PyTorchStreamWriter plus pickles assembled opcode by opcode.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <caffe2/serialize/inline_container.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/error.h"
#include "core/formats/restricted_unpickler.h"
#include "core/formats/torch_zip.h"
#include "fixtures.h"

namespace poslens::torch_zip_test {

using test::Contains;
using test::error_of;

namespace fs = std::filesystem;

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}


/// Little-endian bytes of float values (the test host is little-endian, as is the format).
inline std::string f32_bytes(const std::vector<float>& values) {
  std::string out(values.size() * 4, '\0');
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

/// Raw bytes of a tensor's elements in row-major order.
inline std::string tensor_bytes(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()),
                     static_cast<std::size_t>(c.numel()) * c.element_size());
}

/// A zip in the torch.save layout: every record under "<file stem>/", written by LibTorch's
/// own PyTorchStreamWriter (which adds the "version" record and the 64-byte alignment).
inline void write_archive(const fs::path& path,
                   const std::vector<std::pair<std::string, std::string>>& records) {
  caffe2::serialize::PyTorchStreamWriter writer(path.string());
  for (const auto& [name, bytes] : records) writer.writeRecord(name, bytes.data(), bytes.size());
  writer.writeEndOfFile();
}

/// Assembles pickle bytes opcode by opcode (names as in Python's pickletools).
class Pickle {
 public:
  Pickle() { bytes_ = std::string("\x80\x02", 2); }  // PROTO 2
  Pickle& op(unsigned char code) {
    bytes_ += static_cast<char>(code);
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    return op('c').raw(module + "\n" + name + "\n");
  }
  Pickle& str(const std::string& s) {  // BINUNICODE
    op('X');
    for (int i = 0; i < 4; ++i) bytes_ += static_cast<char>((s.size() >> (8 * i)) & 0xff);
    return raw(s);
  }
  Pickle& integer(int64_t v) {  // LONG1 with 8 bytes: any int64
    op(0x8a).op(8);
    for (int i = 0; i < 8; ++i) bytes_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    return *this;
  }
  Pickle& ints(const std::vector<int64_t>& values) {  // a tuple of ints
    op('(');
    for (int64_t v : values) integer(v);
    return op('t');
  }
  Pickle& raw(const std::string& s) {
    bytes_ += s;
    return *this;
  }
  /// _rebuild_tensor_v2(storage pid, offset, size, stride, False, OrderedDict()) as torch.save
  /// writes it; the persistent id is ('storage', torch.<storage>, key, 'cpu', numel).
  Pickle& tensor(const std::string& storage, const std::string& key, int64_t numel,
                 int64_t offset, const std::vector<int64_t>& size,
                 const std::vector<int64_t>& stride) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').str("storage").global("torch", storage).str(key).str("cpu").integer(numel).op('t');
    op('Q').integer(offset).ints(size).ints(stride).op(0x89);
    global("collections", "OrderedDict").op(')').op('R');
    return op('t').op('R');
  }
  std::string done() { return bytes_ + "."; }
  std::string unfinished() const { return bytes_; }

 private:
  std::string bytes_;
};

/// A state_dict pickle {name: tensor view of FloatStorage "0" with 6 elements}.
inline std::string one_tensor_pickle(const std::string& name, int64_t numel, int64_t offset,
                              const std::vector<int64_t>& size,
                              const std::vector<int64_t>& stride) {
  return Pickle().op('}').str(name).tensor("FloatStorage", "0", numel, offset, size, stride)
      .op('s').done();
}

/// Writes an archive with data.pkl = `pkl` and data/0 = the floats 1..6; returns its path.
inline fs::path archive_with(const std::string& pkl, const std::string& file = "model.pt") {
  const fs::path path = test::scratch_dir() / file;
  write_archive(path, {{"data.pkl", pkl}, {"data/0", f32_bytes({1, 2, 3, 4, 5, 6})}});
  return path;
}

inline std::string open_error(const fs::path& path) {
  return error_of([&] { TorchZipFile file(path.string()); });
}

}  // namespace poslens::torch_zip_test
