#pragma once
// Shared by the libFuzzer targets in this folder (see fuzz/CMakeLists.txt).
//
// Rules every target follows:
//  - poslens::Error is the documented refusal of a damaged or hostile input: it is caught and
//    the input counts as handled (refuse()).
//  - Nothing else is caught. Another exception (nlohmann::json::type_error, c10::Error,
//    std::out_of_range, H5::Exception, std::bad_alloc) escapes LLVMFuzzerTestOneInput, the
//    program aborts ("uncaught exception") and libFuzzer saves the input as a crash: it is a
//    finding (the readers are documented to throw poslens::Error only). ASan/UBSan reports,
//    libFuzzer's -rss_limit_mb / -malloc_limit_mb (out-of-memory from a hostile size claim),
//    -timeout and leaks are findings too.
//  - Readers that only take a path get the input written to a file in a per-process folder
//    under /dev/shm (tmpfs: no disk I/O), /dev/shm/poslens-fuzz-<pid>/, removed at exit.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "core/base/error.h"

namespace poslens::fuzz {

/// The per-process scratch folder /dev/shm/poslens-fuzz-<pid>, created on first use and
/// removed (with what the targets wrote there) when the process exits normally.
inline const std::string& scratch_dir() {
  static const std::string dir = [] {
    std::string d = "/dev/shm/poslens-fuzz-" + std::to_string(::getpid());
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec) {
      std::fprintf(stderr, "fuzz: cannot create %s: %s\n", d.c_str(), ec.message().c_str());
      std::abort();
    }
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all("/dev/shm/poslens-fuzz-" + std::to_string(::getpid()), ignored);
    });
    return d;
  }();
  return dir;
}

/// scratch_dir()/name.
inline std::string scratch_path(const std::string& name) { return scratch_dir() + "/" + name; }

/// Writes `size` bytes to `path` (created or truncated). Aborts on an I/O error: that is the
/// harness failing, not the reader.
inline void write_file(const std::string& path, const void* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n <= 0) {
      std::perror(path.c_str());
      std::abort();
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  ::close(fd);
}

inline void write_file(const std::string& path, std::string_view bytes) {
  write_file(path, bytes.data(), bytes.size());
}

/// Runs `f`; a poslens::Error (a clean refusal) is swallowed, anything else propagates.
/// Returns true when `f` finished without an Error.
template <class F>
bool refuse(F&& f) {
  try {
    f();
    return true;
  } catch (const poslens::Error&) {
    return false;
  }
}

/// A broken invariant of a reader that accepted its input: print it and abort, so that
/// libFuzzer keeps the input as a crash.
[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "\n==FUZZ FINDING== %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Reads every element a CPU tensor view reaches, byte by byte, from this (instrumented)
/// translation unit: a view that reaches outside its allocation is reported by ASan (heap
/// memory) or faults (a memory map), instead of going unnoticed in LibTorch's uninstrumented
/// kernels. At most `max_elements` elements are visited. Returns a checksum so the reads
/// cannot be optimised away.
inline uint64_t touch_tensor(const at::Tensor& t, int64_t max_elements = int64_t{1} << 20) {
  if (!t.defined() || t.numel() == 0) return 0;
  const auto* base = static_cast<const volatile unsigned char*>(t.data_ptr());
  const int64_t esize = static_cast<int64_t>(t.element_size());
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  const int64_t dims = t.dim();
  std::vector<int64_t> index(static_cast<std::size_t>(dims), 0);
  uint64_t sum = 0;
  for (int64_t visited = 0; visited < t.numel() && visited < max_elements; ++visited) {
    int64_t offset = 0;
    for (int64_t d = 0; d < dims; ++d) offset += index[static_cast<std::size_t>(d)] * strides[d];
    for (int64_t b = 0; b < esize; ++b) sum = sum * 31 + base[offset * esize + b];
    for (int64_t d = dims - 1; d >= 0; --d) {  // next index, row-major
      if (++index[static_cast<std::size_t>(d)] < sizes[d]) break;
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
  return sum;
}

/// Keeps a value alive for the optimiser.
template <class T>
inline void keep(const T& value) {
  asm volatile("" : : "g"(&value) : "memory");
}

}  // namespace poslens::fuzz
