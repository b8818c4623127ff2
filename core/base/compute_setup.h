#pragma once
// Process-wide settings that decide how fast LibTorch runs on the CPU here (docs/performance.md
// has the measurements):
//   - Threads. LibTorch defaults to one intra-op thread in a plain C++ program; PosLens uses
//     every core it may run on (the affinity mask: a Slurm job's or taskset's CPUs), but not
//     beside OpenBLAS's pthread build: its worker threads spin (sched_yield) between products
//     while OpenMP's threads spin between elementwise operators, and on a small machine the two
//     pools take turns stealing the cores
//     (GPT-2-small shape at 512 tokens on 2 cores: 1.7 s instead of 0.63 s). scripts/setup.sh
//     selects Debian's OpenMP build (one shared pool); where the pthread build is loaded
//     anyway, LibTorch's operators run on one thread and the products keep every core.
//     OMP_NUM_THREADS, where set to a positive number, wins (as in PyTorch): runs side by side
//     each given their share of the cores do not stall on each other's spinning threads.
//   - The allocator. Attention blocks are tens of MB, allocated and freed per block; glibc
//     serves those with mmap/munmap, so every block paid its page faults again (stories260K,
//     8192 tokens: `heads` 9.9 s -> 5.0 s, the forward 2.3 s -> 1.6 s, same peak). Freed memory
//     is kept for reuse instead, in one arena for every thread (the GUI worker's own arena
//     mapped its blocks anew: the GUI's first position map at 2048 tokens 9.4 s -> 6.7 s), and
//     handed back with release_free_memory() after a job.
//   - oneDNN's primitive cache, which kept one primitive per product shape (bf16 models:
//     +1.5 GB at 4096 tokens of the Llama-3.2-1B shape), is limited to 8 primitives.
#include <string>

namespace poslens {

/// Applies both settings (call once, early in main) and returns a line saying what was
/// chosen, e.g. "2 threads (OpenBLAS with OpenMP)".
std::string set_up_compute();

/// The line set_up_compute() returns, for the settings in force now, e.g. "2 threads (OpenBLAS
/// with OpenMP)".
std::string describe_compute();

/// The CPUs this process may run on (its affinity mask; all online cores where that cannot be
/// read), at least 1.
int usable_cores();

/// Returns memory freed by the last job to the system (malloc_trim), e.g. after a GUI job.
void release_free_memory();

}  // namespace poslens
