#include "roll/runtime/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "roll/core/error.h"

extern char** environ;

namespace roll::runtime {
namespace {

std::mutex& stderr_mutex() {
  static std::mutex m;
  return m;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return "killed by signal " + std::to_string(sig) + (abbrev ? std::string(" (SIG") + abbrev + ")" : "");
  }
  return "ended with wait status " + std::to_string(status);
}

int pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

}  // namespace

struct ChildProcess::Impl {
  SpawnOptions options;
  pid_t pid = -1;
  int pidfd = -1;
  int out_fd = -1;
  std::thread watcher;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::optional<int> status;  // raw wait status once reaped
  std::deque<std::string> lines;

  void keep(std::string line) {
    if (options.forward_output) {
      std::lock_guard<std::mutex> g(stderr_mutex());
      std::fprintf(stderr, "(%s pid=%d) %s\n", options.name.c_str(), pid, line.c_str());
    }
    std::lock_guard<std::mutex> g(mu);
    lines.push_back(std::move(line));
    while (lines.size() > options.keep_lines) lines.pop_front();
  }

  // Reads output until EOF and the exit, whichever comes last; after the exit, output still held
  // open by a grandchild is read for at most a moment more.
  void watch() {
    std::string partial;
    char buf[4096];
    bool eof = false, reaped = false;
    auto reap = [&] {
      int st = 0;
      if (waitpid(pid, &st, 0) == pid) {
        std::lock_guard<std::mutex> g(mu);
        status = st;
      }
      reaped = true;
    };
    while (!eof || !reaped) {
      pollfd fds[2];
      int n = 0;
      if (!eof) fds[n++] = {out_fd, POLLIN, 0};
      if (!reaped) fds[n++] = {pidfd, POLLIN, 0};
      int timeout = reaped ? 300 : -1;
      int r = poll(fds, n, timeout);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) break;  // exited; a grandchild keeps the pipe open: stop reading
      for (int i = 0; i < n; ++i) {
        if (!fds[i].revents) continue;
        if (fds[i].fd == pidfd) {
          reap();
        } else {
          ssize_t got = read(out_fd, buf, sizeof buf);
          if (got <= 0) {
            if (got < 0 && errno == EINTR) continue;
            eof = true;
            continue;
          }
          partial.append(buf, static_cast<size_t>(got));
          size_t nl;
          while ((nl = partial.find('\n')) != std::string::npos) {
            keep(partial.substr(0, nl));
            partial.erase(0, nl + 1);
          }
        }
      }
    }
    if (!partial.empty()) keep(partial);
    if (!reaped) reap();
    cv.notify_all();
    if (options.on_exit) options.on_exit(describe_status(*status));
  }
};

ChildProcess::ChildProcess(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::shared_ptr<ChildProcess> ChildProcess::spawn(SpawnOptions options) {
  if (options.argv.empty()) throw Error("spawning " + options.name + ": no executable given");
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) throw Error("spawning " + options.name + ": pipe: " + strerror(errno));

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  // Signals blocked or ignored in a driver thread must not stay blocked in the worker.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, all;
  sigemptyset(&empty);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env_strings;
  for (const auto& [k, v] : options.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : options.argv) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = -1;
  int rc = posix_spawn(&pid, options.argv[0].c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    throw Error("spawning " + options.name + " (" + options.argv[0] + ") failed: " + strerror(rc));
  }
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  impl->pid = pid;
  impl->out_fd = pipefd[0];
  impl->pidfd = pidfd_open(pid);
  if (impl->pidfd < 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    close(pipefd[0]);
    throw Error("spawning " + impl->options.name + ": pidfd_open failed: " + strerror(errno));
  }
  Impl* raw = impl.get();
  impl->watcher = std::thread([raw] { raw->watch(); });
  return std::shared_ptr<ChildProcess>(new ChildProcess(std::move(impl)));
}

ChildProcess::~ChildProcess() {
  if (!impl_) return;
  if (running()) stop(std::chrono::milliseconds(500));
  if (impl_->watcher.joinable()) impl_->watcher.join();
  close(impl_->out_fd);
  close(impl_->pidfd);
}

pid_t ChildProcess::pid() const { return impl_->pid; }
const std::string& ChildProcess::name() const { return impl_->options.name; }

bool ChildProcess::running() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return !impl_->status.has_value();
}

std::optional<std::string> ChildProcess::exit_description() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  if (!impl_->status) return std::nullopt;
  return describe_status(*impl_->status);
}

std::optional<int> ChildProcess::exit_code() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  if (!impl_->status) return std::nullopt;
  int st = *impl_->status;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

std::vector<std::string> ChildProcess::last_lines() const {
  std::lock_guard<std::mutex> g(impl_->mu);
  return {impl_->lines.begin(), impl_->lines.end()};
}

void ChildProcess::signal(int sig) {
  // The pidfd names this process even if its pid was reused after the exit.
  syscall(SYS_pidfd_send_signal, impl_->pidfd, sig, nullptr, 0);
}

bool ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lk(impl_->mu);
  return impl_->cv.wait_for(lk, timeout, [&] { return impl_->status.has_value(); });
}

void ChildProcess::stop(std::chrono::milliseconds grace) {
  if (!running()) return;
  signal(SIGTERM);
  if (wait_for(grace)) return;
  signal(SIGKILL);
  wait_for(std::chrono::seconds(10));
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

void die_with_parent(pid_t expected_parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != expected_parent) std::_Exit(3);
}

}  // namespace roll::runtime
