// set_up_compute's thread choice (core/base/compute_setup.h).
#include <ATen/Parallel.h>

#include <gtest/gtest.h>
#include <sched.h>

#include <cstdlib>
#include <string>

#include "core/base/compute_setup.h"

namespace poslens {
namespace {

/// Sets OMP_NUM_THREADS for one scope and puts the variable and LibTorch's threads back after.
class ThreadsRequested {
 public:
  explicit ThreadsRequested(const char* value) : threads_before_(at::get_num_threads()) {
    if (const char* old = std::getenv("OMP_NUM_THREADS")) old_ = old, had_ = true;
    setenv("OMP_NUM_THREADS", value, 1);
  }
  ~ThreadsRequested() {
    if (had_) setenv("OMP_NUM_THREADS", old_.c_str(), 1);
    else unsetenv("OMP_NUM_THREADS");
    at::set_num_threads(threads_before_);
  }

 private:
  int threads_before_;
  std::string old_;
  bool had_ = false;
};

TEST(ComputeSetup, OmpNumThreadsChoosesTheThreads) {
  ThreadsRequested one("1");
  const auto line = set_up_compute();
  EXPECT_EQ(at::get_num_threads(), 1);
  EXPECT_EQ(line.rfind("1 thread (", 0), 0u) << line;
}

TEST(ComputeSetup, ANonsenseOrZeroOmpNumThreadsIsIgnored) {
  std::string chosen;
  {
    ThreadsRequested unset("");  // empty: not a positive number, as if unset
    chosen = set_up_compute();
  }
  for (const char* value : {"many", "0", "-3"}) {
    ThreadsRequested nonsense(value);
    EXPECT_EQ(set_up_compute(), chosen) << "OMP_NUM_THREADS=" << value;
  }
}

TEST(ComputeSetup, ThreadsFollowTheCpusTheProcessMayUse) {
  // As under `taskset -c 0` or a one-CPU Slurm job: one thread, not one per machine core.
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &before)) {
      CPU_SET(cpu, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  std::string line;
  int cores = 0;
  {
    ThreadsRequested unset("");
    cores = usable_cores();
    line = set_up_compute();
    EXPECT_EQ(at::get_num_threads(), 1);
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof before, &before), 0);
  EXPECT_EQ(cores, 1);
  EXPECT_EQ(line.rfind("1 thread (", 0), 0u) << line;
  EXPECT_EQ(usable_cores(), CPU_COUNT(&before));
}

}  // namespace
}  // namespace poslens
