#pragma once
// The strings of an HDF5 file, read once in a child process (check_hdf5_in_child) and handed to
// the reader in the program's own process. libhdf5 1.10 keeps variable-length strings in a
// "global heap" whose corruption makes it read out of bounds; whether that crashes depends on
// the memory of the process reading, so a child that read a file "cleanly" is no promise the
// program would. With the child's strings, the program never reads the heap itself.
#include <map>
#include <string>
#include <vector>

namespace poslens {

struct Hdf5Strings {
  /// Key of a string dataset's values (row-major, as Hdf5Reader::read_strings returns them).
  static std::string dataset_key(const std::string& dataset) { return "d" + dataset; }
  /// Key of attribute `name` of `object`: one value for a scalar string, the list for a 1-D one.
  static std::string attribute_key(const std::string& object, const std::string& name) {
    return "a" + object + '\0' + name;
  }

  std::map<std::string, std::vector<std::string>> values;

  /// The bytes that carry `values` through a pipe: for each key, its length, the key, the count
  /// of strings, and each string's length and bytes (lengths as 8-byte little-endian).
  std::string serialise() const;
  /// The inverse of serialise(). Throws poslens::Error naming `source` when `bytes` are not
  /// what serialise() writes (lengths past the end, trailing bytes).
  static Hdf5Strings parse(const std::string& bytes, const std::string& source);
};

}  // namespace poslens
