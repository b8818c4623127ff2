#pragma once
// The one exception type of PosLens' core. The CLI's main and the GUI worker catch it at the
// boundary and show its message; nothing in core aborts on user input.
#include <stdexcept>
#include <string>

namespace poslens {

/// A user-facing error: the message says what is wrong and where (file, tensor, offset).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// Thrown when the user cancels a long operation (the progress callback returned false).
class Cancelled : public Error {
 public:
  Cancelled() : Error("cancelled") {}
};

}  // namespace poslens
