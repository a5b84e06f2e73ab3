#include "roll/runtime/daemon_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "roll/core/error.h"
#include "roll/runtime/child_process.h"

extern char** environ;

namespace roll::runtime {
namespace {
constexpr int kReadyFd = 3;  // in the daemon
}

std::string start_detached(const std::vector<std::string>& argv, const std::string& log_file,
                           std::chrono::milliseconds timeout) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(fmt::format("roll start: pipe: {}", std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], kReadyFd);  // dup2 clears O_CLOEXEC on the copy
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "ROLL_READY_FD=", 14) != 0) env_store.emplace_back(*e);
  env_store.push_back(fmt::format("ROLL_READY_FD={}", kReadyFd));
  std::vector<char*> envp, args;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& a : argv_copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw Error(fmt::format("roll start: cannot start {}: {}", argv.front(), std::strerror(rc)));
  }
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fds[0], POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
      close(fds[0]);
      kill(pid, SIGTERM);
      throw Error(fmt::format("roll start: the daemon (pid {}) did not report ready within {:.0f} s; see {}", pid,
                              std::chrono::duration<double>(timeout).count(), log_file));
    }
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (got.rfind("ready ", 0) == 0) return got.substr(6);
  if (got.rfind("error ", 0) == 0) {
    waitpid(pid, nullptr, 0);
    throw Error(fmt::format("{} (log: {})", got.substr(6), log_file));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  throw Error(fmt::format("roll start: the daemon exited ({}) before it was ready; see {}",
                          WIFEXITED(status) ? fmt::format("status {}", WEXITSTATUS(status))
                                            : fmt::format("signal {}", WTERMSIG(status)),
                          log_file));
}

int ready_fd_from_env() {
  const char* v = getenv("ROLL_READY_FD");
  if (!v || !*v) return -1;
  const int fd = std::atoi(v);
  unsetenv("ROLL_READY_FD");  // not for the workers
  return fcntl(fd, F_GETFD) == -1 ? -1 : fd;
}

void report_ready(int fd, bool ok, const std::string& message) {
  if (fd < 0) return;
  const std::string s = (ok ? "ready " : "error ") + message;
  for (size_t off = 0; off < s.size();) {
    const ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  close(fd);
}

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

bool StopSignals::wait(std::chrono::milliseconds timeout) {
  if (got_) return true;
  timespec ts{static_cast<time_t>(timeout.count() / 1000), static_cast<long>((timeout.count() % 1000) * 1000000)};
  got_ = sigtimedwait(&set_, nullptr, &ts) > 0;
  return got_;
}

void ensure_no_daemon(const std::string& dir, DaemonRole role) {
  auto r = read_daemon_record(dir, role);
  if (!r) return;
  if (roll_process_alive(r->pid))
    throw Error(fmt::format("a roll {} daemon already runs on this machine (pid {}, cluster {}; state {}); "
                            "`roll stop` first",
                            daemon_role_name(role), r->pid, r->address, state_file(dir, role)));
  remove_daemon_record(dir, role);
}

}  // namespace roll::runtime
