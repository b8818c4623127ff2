#pragma once
// CSV text the analyses write (the CLI's --out x.csv and the GUI's CSV export make the same
// bytes): numbers with 9 significant digits, empty for NaN; fields quoted per RFC 4180. Plain
// std types, header only: the GUI includes it without LibTorch.
#include <cmath>
#include <cstdio>
#include <string>

namespace poslens {

/// `v` with 9 significant digits ("%.9g"); "" for NaN.
inline std::string csv_number(double v) {
  if (std::isnan(v)) return "";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

/// `s` as one quoted CSV field, inner quotes doubled (RFC 4180).
inline std::string csv_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace poslens
