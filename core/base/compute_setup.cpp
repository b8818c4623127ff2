#include "core/base/compute_setup.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <thread>

namespace poslens {
namespace {

/// OpenBLAS's threading model as openblas_get_parallel() reports it (0 sequential, 1 pthreads,
/// 2 OpenMP), or -1 when the loaded BLAS is not OpenBLAS. Looked up at run time: PosLens links
/// LibTorch, which links whatever libblas.so.3 the system selects.
int openblas_parallel_mode() {
  using Fn = int (*)();
  const auto fn = reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, "openblas_get_parallel"));
  return fn ? fn() : -1;
}

}  // namespace

std::string set_up_compute() {
  // Blocks below 1 GB come from the heap, and freed heap memory is kept for the next block. One
  // arena: a thread's own arena (the GUI worker's) maps its large blocks anew each time.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_ARENA_MAX, 1);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int mode = openblas_parallel_mode();
  const int threads = mode == 1 ? 1 : cores;
  at::set_num_threads(threads);
  const char* blas = mode == 1   ? "OpenBLAS with pthreads: LibTorch's operators on one thread"
                     : mode == 2 ? "OpenBLAS with OpenMP"
                     : mode == 0 ? "sequential OpenBLAS"
                                 : "BLAS other than OpenBLAS";
  return std::to_string(threads) + (threads == 1 ? " thread (" : " threads (") + blas + ")";
}

void release_free_memory() { malloc_trim(0); }

}  // namespace poslens
