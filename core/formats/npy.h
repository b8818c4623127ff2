#pragma once
// NumPy's .npy file (format versions 1.0–3.0, numpy.lib.format), read as untrusted input: token
// ids saved with numpy.save for `poslens-cli … --tokens-file ids.npy`.
#include <cstdint>
#include <string>
#include <vector>

namespace poslens {

/// The integers of the .npy file `path`: a C-order array of int8/16/32/64 or uint8/16/32
/// (little-endian or one byte; `<i8`, `<i4`, `|u1`, …) holding one sequence — shape (T,) or
/// (1, T) — in order. At most `limit` bytes of file. Throws poslens::Error naming the file and
/// what is wrong: no .npy magic, an unknown version, a header that is not the dict numpy writes,
/// a dtype other than those (floats, big-endian, uint64, objects), Fortran order, another shape,
/// or data shorter or longer than the shape says. Format: numpy.lib.format (NEP 1).
std::vector<int64_t> read_npy_integers(const std::string& path, std::uint64_t limit);

}  // namespace poslens
