#pragma once
// Reading back the HDF5 files PosLens writes (docs/hdf5-layout.md): `poslens-cli merge` reads
// its items' results with it. Read-only, with limits: a hostile file cannot make it allocate
// more than kMaxReadBytes for one dataset.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace poslens {

struct Hdf5Strings;

/// The most bytes read() and read_strings() load from one dataset (1 GiB).
inline constexpr int64_t kMaxReadBytes = int64_t{1} << 30;

class Hdf5Reader {
 public:
  /// Opens `path` read-only. Throws poslens::Error "<path>: …" when it is missing, not an HDF5
  /// file or unreadable.
  explicit Hdf5Reader(const std::string& path);
  /// As above, with the file's strings as check_hdf5_in_child read them: read_strings(),
  /// string_attribute() and string_list_attribute() return those and read no string from the
  /// file (a string missing from `strings` is an error). For a file from outside.
  Hdf5Reader(const std::string& path, std::shared_ptr<const Hdf5Strings> strings);
  ~Hdf5Reader();
  Hdf5Reader(const Hdf5Reader&) = delete;
  Hdf5Reader& operator=(const Hdf5Reader&) = delete;

  /// Whether the group or dataset at absolute `object` ("/analysis/probe/vaf") exists.
  bool exists(const std::string& object) const;
  /// Names of the objects in group `group`, in HDF5's (alphabetical) order.
  std::vector<std::string> children(const std::string& group) const;
  /// The dataset's shape.
  std::vector<int64_t> shape(const std::string& dataset) const;
  /// A numeric dataset as a CPU tensor of its shape: float64 for floating-point data, int64 for
  /// integers (bool is stored as uint8: int64 too). Throws poslens::Error naming the file and
  /// dataset when it is missing, not numeric, or larger than kMaxReadBytes.
  at::Tensor read(const std::string& dataset) const;
  /// The sub-array of a numeric dataset at the leading indices `index` (e.g. {layer, head} of a
  /// [layer, head, q, k] map: [q, k]), float64 or int64 as read(); only that part is read.
  /// Throws poslens::Error for an index out of range or more indices than dimensions.
  at::Tensor read_slice(const std::string& dataset, const std::vector<int64_t>& index) const;
  /// A variable-length UTF-8 string dataset, row-major (/tokens/text [batch, pos] too).
  std::vector<std::string> read_strings(const std::string& dataset) const;
  /// A scalar string attribute of `object`, "" where absent.
  std::string string_attribute(const std::string& object, const std::string& name) const;
  /// A 1-D list of UTF-8 strings attribute of `object`, empty where absent or of another type.
  std::vector<std::string> string_list_attribute(const std::string& object, const std::string& name) const;
  /// A scalar integer attribute of `object`, `fallback` where absent or not an integer.
  int64_t int_attribute(const std::string& object, const std::string& name, int64_t fallback = 0) const;
  const std::string& path() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace poslens
