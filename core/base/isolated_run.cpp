#include "core/base/isolated_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>

#include "core/base/error.h"

namespace poslens {
namespace {

/// The child's side: run the work, send its result (exit 0) or a failure's message (exit 1)
/// through `fd`, never return.
[[noreturn]] void child_main(const std::function<std::string()>& work, int fd) {
  // A crash here must end the child at once. With core dumps on (`ulimit -c`), the kernel would
  // first write the child's whole memory — a copy of the parent's, gigabytes for a GUI with a model
  // loaded — which can outlast the timeout (the crash then reads as a hang) and litters the disk.
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::prctl(PR_SET_DUMPABLE, 0);  // also stops a piped core_pattern, which ignores RLIMIT_CORE
  int code = 0;
  std::string sent;  // the result, or the failure's message
  try {
    sent = work();
  } catch (const std::exception& e) {
    code = 1;
    sent = e.what();
  } catch (...) {
    code = 1;
    sent = "an exception that is not a std::exception";
  }
  for (size_t done = 0; done < sent.size();) {
    const ssize_t n = ::write(fd, sent.data() + done, sent.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::_exit(code);
}

/// Ends the child at once and reaps it.
void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

IsolatedOutcome run_isolated(const std::function<void()>& work, double timeout_s,
                             const std::function<bool()>& cancelled) {
  return run_isolated(std::function<std::string()>([&work] {
                        work();
                        return std::string();
                      }),
                      timeout_s, cancelled);
}

IsolatedOutcome run_isolated(const std::function<std::string()>& work, double timeout_s,
                             const std::function<bool()>& cancelled) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error(std::string("cannot start a child process: pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(std::string("cannot start a child process: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(work, fds[1]);
  }
  ::close(fds[1]);

  // Read what the child sends (its result or its failure's message) until it closes the pipe,
  // the time is up or the user cancels. The pipe closes when the child ends, however it ends.
  IsolatedOutcome out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::string received;
  bool open = true, overflow = false;
  while (open) {
    if (cancelled && cancelled()) {
      ::close(fds[0]);
      kill_and_reap(pid);
      out.kind = IsolatedOutcome::Kind::Cancelled;
      return out;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::close(fds[0]);
      kill_and_reap(pid);
      out.kind = IsolatedOutcome::Kind::TimedOut;
      return out;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, 50);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0 && received.size() + static_cast<size_t>(n) <= kMaxIsolatedOutput)
      received.append(buffer, static_cast<size_t>(n));
    else if (n > 0)
      overflow = true;  // keep draining, so the child is not blocked writing
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) open = false;
  }
  ::close(fds[0]);

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error(std::string("waiting for a child process: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) {
    out.kind = IsolatedOutcome::Kind::Crashed;
    out.signal = WTERMSIG(status);
    out.message = ::strsignal(out.signal);
  } else if (overflow) {
    out.kind = IsolatedOutcome::Kind::Failed;
    out.message = "the child process sent more than " + std::to_string(kMaxIsolatedOutput >> 20) + " MiB";
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    out.kind = IsolatedOutcome::Kind::Succeeded;
    out.output = std::move(received);
  } else {
    out.kind = IsolatedOutcome::Kind::Failed;
    // A sanitizer's or libhdf5's abort path may exit non-zero without a message.
    out.message = received.empty() ? "the child process exited with status " +
                                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1)
                                   : received.substr(0, 1u << 16);
  }
  return out;
}

}  // namespace poslens
