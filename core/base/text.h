#pragma once
// Small text helpers for error messages, shared by every layer.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace poslens {

/// `s` in double quotes, as error messages name keys, tensors and files: "q_proj.weight".
inline std::string quoted(const std::string& s) { return "\"" + s + "\""; }

/// The C library's text for the current errno ("No such file or directory").
inline std::string errno_text() { return std::strerror(errno); }

/// `x` with at most `digits` significant digits, printf's %g: 0.25, 1.5e+03.
inline std::string significant(double x, int digits = 3) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*g", digits, x);
  return text;
}

}  // namespace poslens
