#include "core/base/compute_setup.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
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

int usable_cores() {
  // The affinity mask, not the machine's cores: Slurm (cpuset cgroups, task/affinity), taskset
  // and containers give a process fewer CPUs than the machine has, and threads beyond them
  // only wait on each other (libgomp, and so PyTorch, counts the same way).
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string set_up_compute() {
  // Blocks below 1 GB come from the heap, and freed heap memory is kept for the next block. One
  // arena: a thread's own arena (the GUI worker's) maps its large blocks anew each time.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_ARENA_MAX, 1);
  // oneDNN (LibTorch's bf16/f16 products on CPUs with AVX-512 BF16) caches a primitive, with its
  // buffers, per product shape, 1024 of them by default; causal query blocks each see another
  // number of keys, so a bf16 Llama-3.2-1B shape at 4096 tokens kept ~1.5 GB of them. Read
  // once, when oneDNN makes its first primitive; a value the user set wins.
  setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "8", /*overwrite=*/0);
  setenv("DNNL_PRIMITIVE_CACHE_CAPACITY", "8", /*overwrite=*/0);
  const int cores = usable_cores();
  const int mode = openblas_parallel_mode();
  int threads = mode == 1 ? 1 : cores;
  // OMP_NUM_THREADS, where set, as PyTorch honours it: e.g. 1 for each of several runs side by
  // side, which otherwise oversubscribe the cores and wait on each other's spinning threads.
  const char* requested = std::getenv("OMP_NUM_THREADS");
  if (requested && std::atoi(requested) > 0) threads = std::min(std::atoi(requested), 1024);
  at::set_num_threads(threads);
  return describe_compute();
}

std::string describe_compute() {
  const int mode = openblas_parallel_mode();
  const int threads = at::get_num_threads();
  const char* blas = mode == 1   ? "OpenBLAS with pthreads, its own pool beside LibTorch's"
                     : mode == 2 ? "OpenBLAS with OpenMP"
                     : mode == 0 ? "sequential OpenBLAS"
                                 : "BLAS other than OpenBLAS";
  return std::to_string(threads) + (threads == 1 ? " thread (" : " threads (") + blas + ")";
}

void release_free_memory() { malloc_trim(0); }

}  // namespace poslens
