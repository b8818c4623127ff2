#pragma once
// Small text helpers for error messages, shared by every layer.
#include <cerrno>
#include <cstring>
#include <string>

namespace poslens {

/// `s` in double quotes, as error messages name keys, tensors and files: "q_proj.weight".
inline std::string quoted(const std::string& s) { return "\"" + s + "\""; }

/// The C library's text for the current errno ("No such file or directory").
inline std::string errno_text() { return std::strerror(errno); }

}  // namespace poslens
