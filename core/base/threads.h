#pragma once
// How many threads LibTorch's own operators use. LibTorch defaults to one intra-op thread in a
// plain C++ program; PosLens uses every core, but not beside OpenBLAS's pthread build: its
// worker threads spin (sched_yield) between products while OpenMP's threads spin between
// elementwise operators, and on a small machine the two pools take turns stealing the cores
// (GPT-2-small shape at 512 tokens on 2 cores: 1.7 s instead of 0.63 s; docs/performance.md).
// scripts/setup.sh selects Debian's OpenMP build of OpenBLAS (one shared thread pool); where
// the pthread build is loaded anyway, LibTorch's operators run on one thread and the products
// keep every core.
#include <string>

namespace poslens {

/// Sets LibTorch's intra-op threads as above and returns a line saying what was chosen, e.g.
/// "2 threads (OpenBLAS with OpenMP)".
std::string use_all_cores();

}  // namespace poslens
