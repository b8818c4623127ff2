#pragma once
// One HDF5 C++ call with its failure as a poslens::Error — shared by the HDF5 writer
// (hdf5_export.cpp) and reader (hdf5_reader.cpp), the only translation units that include
// HDF5's headers.
#include <H5Cpp.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/base/error.h"

namespace poslens::hdf5 {

/// The variable-length UTF-8 string type PosLens writes and reads strings as (HDF5 does not
/// convert between character sets).
inline H5::StrType utf8_string_type() {
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  return type;
}

/// Variable-length strings HDF5 allocated into `raw`, reclaimed on every path out: a read that
/// fails part-way leaves some allocated (found by fuzz_analysis_hdf5).
struct VlenStrings {
  VlenStrings(size_t n, hid_t space) : raw(n, nullptr), space(space) {}
  ~VlenStrings() {
    if (!raw.empty()) H5Dvlen_reclaim(type.getId(), space, H5P_DEFAULT, raw.data());
  }
  VlenStrings(const VlenStrings&) = delete;
  VlenStrings& operator=(const VlenStrings&) = delete;
  std::vector<std::string> strings() const {
    std::vector<std::string> out;
    for (const char* s : raw) out.emplace_back(s ? s : "");
    return out;
  }
  H5::StrType type = utf8_string_type();
  std::vector<char*> raw;
  hid_t space;
};

/// Throws poslens::Error "<path>: no such file" / "<path>: not an HDF5 file" before HDF5 parses
/// anything of it (H5Fis_hdf5 reads the signature only).
inline void require_hdf5_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw Error(path + ": no such file");
  bool hdf5 = false;
  try {
    hdf5 = H5::H5File::isHdf5(path);
  } catch (const H5::Exception&) {
  }
  if (!hdf5) throw Error(path + ": not an HDF5 file");
}

/// Collects the descriptions of the current HDF5 error stack, outermost first (H5Ewalk2).
inline herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (err && err->desc && *err->desc) out->emplace_back(err->desc);
  return 0;
}

/// Runs `f`; an H5::Exception becomes poslens::Error "`where`: `what` failed (function:
/// detail: innermost message of HDF5's error stack)". `f` must hold a single HDF5 call, so that
/// no HDF5 object is destroyed (which would clear the error stack) between the failure and the
/// catch.
template <typename F>
auto call(const std::string& where, const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const H5::Exception& e) {
    std::vector<std::string> stack;
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &stack);
    std::string msg = where + ": " + what + " failed (" + e.getFuncName() + ": " + e.getDetailMsg();
    if (!stack.empty()) msg += ": " + stack.back();
    throw Error(msg + ")");
  }
}

}  // namespace poslens::hdf5
