#pragma once
// Running a piece of work in a forked child process, so that a library that crashes, hangs or
// runs out of memory on hostile input takes down the child, not the program. Used where a
// reader's failure modes are outside PosLens's control (libhdf5 1.10 crashes and loops on some
// hostile files: docs/reliability.md).
#include <functional>
#include <string>

namespace poslens {

/// What became of work run by run_isolated().
struct IsolatedOutcome {
  enum class Kind { Succeeded, Failed, Crashed, TimedOut, Cancelled };
  Kind kind = Kind::Succeeded;
  /// Failed: the exception's message (what()); Crashed: the signal's name ("Segmentation fault").
  std::string message;
  /// Succeeded: the bytes the work returned (the overload whose work returns a string).
  std::string output;
  int signal = 0;  ///< Crashed: the signal that ended the child
};

/// Runs `work` in a child made by fork() and waits for it: Succeeded when it returns, Failed
/// with the message of the std::exception it throws, Crashed when a signal ends the child,
/// TimedOut (child killed) after `timeout_s` seconds, Cancelled (child killed) as soon as
/// `cancelled` returns true (polled every 50 ms).
///
/// The child has only the calling thread (POSIX fork), so `work` must not use other threads'
/// state: no LibTorch operations (its OpenMP pool does not survive fork), no Qt. Plain library
/// calls on the calling thread's own objects and malloc are fine (glibc resets its locks in the
/// child). The child ends with _exit: no atexit handlers or static destructors run there.
/// Throws poslens::Error when the child cannot be started.
IsolatedOutcome run_isolated(const std::function<void()>& work, double timeout_s,
                             const std::function<bool()>& cancelled = {});

/// As above, for work that returns a result: its bytes come back through a pipe as `output`
/// (at most kMaxIsolatedOutput; more is Failed with a message saying so).
IsolatedOutcome run_isolated(const std::function<std::string()>& work, double timeout_s,
                             const std::function<bool()>& cancelled = {});

/// The most bytes a child's result may have (64 MiB).
inline constexpr size_t kMaxIsolatedOutput = size_t{64} << 20;

}  // namespace poslens
