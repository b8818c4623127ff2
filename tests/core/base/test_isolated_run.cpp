// run_isolated: work in a forked child — what it returns, throws, crashes on, hangs in.
#include <gtest/gtest.h>

#include <sys/prctl.h>
#include <sys/resource.h>

#include <csignal>
#include <functional>
#include <stdexcept>
#include <thread>

#include "core/base/error.h"
#include "core/base/isolated_run.h"

namespace poslens {
namespace {

using Kind = IsolatedOutcome::Kind;

TEST(IsolatedRun, ReturningWorkSucceedsAndLeavesTheParentUntouched) {
  int touched = 0;
  const auto out = run_isolated([&] { touched = 1; }, 30);
  EXPECT_EQ(out.kind, Kind::Succeeded);
  EXPECT_EQ(touched, 0);  // the child's memory is its own
}

TEST(IsolatedRun, AnExceptionComesBackAsItsMessage) {
  const auto out = run_isolated([] { throw Error("file.h5: no dataset /x"); }, 30);
  EXPECT_EQ(out.kind, Kind::Failed);
  EXPECT_EQ(out.message, "file.h5: no dataset /x");
}

TEST(IsolatedRun, WorkThatReturnsBytesHandsThemBack) {
  const std::string big(3 << 20, 'x');  // larger than a pipe's buffer
  const auto out = run_isolated(std::function<std::string()>([&] { return big + "end"; }), 30);
  EXPECT_EQ(out.kind, Kind::Succeeded) << out.message;
  EXPECT_EQ(out.output, big + "end");
  const auto too_much = run_isolated(
      std::function<std::string()>([] { return std::string(kMaxIsolatedOutput + 1, 'x'); }), 30);
  EXPECT_EQ(too_much.kind, Kind::Failed);
  EXPECT_NE(too_much.message.find("more than 64 MiB"), std::string::npos) << too_much.message;
}

TEST(IsolatedRun, ACrashEndsTheChildNotTheParent) {
  const auto out = run_isolated([] { std::raise(SIGSEGV); }, 30);
  EXPECT_EQ(out.kind, Kind::Crashed);
  EXPECT_EQ(out.signal, SIGSEGV);
  EXPECT_FALSE(out.message.empty());
}

TEST(IsolatedRun, TheChildWritesNoCoreDump) {
  // Even where the user allows core dumps: writing the child's copy of a large parent can outlast
  // the timeout (a crash would read as a hang) and fills the disk.
  rlimit before{};
  ::getrlimit(RLIMIT_CORE, &before);
  rlimit allowed = before;
  allowed.rlim_cur = before.rlim_max;
  ::setrlimit(RLIMIT_CORE, &allowed);
  const auto out = run_isolated(
      [] {
        rlimit limit{};
        ::getrlimit(RLIMIT_CORE, &limit);
        if (limit.rlim_cur != 0) throw Error("core dumps allowed in the child");
        if (::prctl(PR_GET_DUMPABLE) != 0) throw Error("the child is dumpable");
      },
      30);
  ::setrlimit(RLIMIT_CORE, &before);
  EXPECT_EQ(out.kind, Kind::Succeeded) << out.message;
}

TEST(IsolatedRun, WorkThatDoesNotFinishIsKilledAtTheTimeout) {
  const auto out = run_isolated([] { for (;;) std::this_thread::sleep_for(std::chrono::seconds(1)); }, 0.3);
  EXPECT_EQ(out.kind, Kind::TimedOut);
}

TEST(IsolatedRun, CancellingKillsTheChild) {
  int polls = 0;
  const auto out = run_isolated([] { for (;;) std::this_thread::sleep_for(std::chrono::seconds(1)); }, 600,
                                [&] { return ++polls > 3; });
  EXPECT_EQ(out.kind, Kind::Cancelled);
}

}  // namespace
}  // namespace poslens
