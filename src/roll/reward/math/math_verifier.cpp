// MathVerifier (see math_verifier.h): posix_spawn, a socket pair, poll() with a deadline, SIGKILL.
#include "roll/reward/math/math_verifier.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "roll/reward/math/math_verifier_protocol.h"

extern char** environ;

namespace roll::reward {
namespace {

using Clock = std::chrono::steady_clock;

bool executable(const std::string& path) { return !path.empty() && ::access(path.c_str(), X_OK) == 0; }

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

enum class Io { kOk, kTimeout, kClosed };

Io send_all(int fd, std::string_view data, Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t w = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += static_cast<std::size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const int ms = remaining_ms(deadline);
      if (ms == 0) return Io::kTimeout;
      pollfd p{fd, POLLOUT, 0};
      int r = ::poll(&p, 1, ms);
      if (r == 0) return Io::kTimeout;
      if (r < 0 && errno != EINTR) return Io::kClosed;
      if (r > 0 && (p.revents & (POLLERR | POLLHUP)) && !(p.revents & POLLOUT)) return Io::kClosed;
      continue;
    }
    return Io::kClosed;
  }
  return Io::kOk;
}

Io recv_all(int fd, char* out, std::size_t n, Clock::time_point deadline) {
  std::size_t off = 0;
  while (off < n) {
    const int ms = remaining_ms(deadline);
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, ms);
    if (r == 0) return Io::kTimeout;
    if (r < 0) {
      if (errno == EINTR) continue;
      return Io::kClosed;
    }
    ssize_t got = ::recv(fd, out + off, n - off, MSG_DONTWAIT);
    if (got > 0) {
      off += static_cast<std::size_t>(got);
      continue;
    }
    if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    return Io::kClosed;  // EOF or error: the helper died
  }
  return Io::kOk;
}

}  // namespace

std::string find_math_verifier_helper() {
  if (const char* env = std::getenv("ROLL_MATH_VERIFIER"); env && executable(env)) return env;
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    std::string dir(self);
    dir = dir.substr(0, dir.rfind('/'));
    for (const std::string& p : {dir + "/roll-math-verifier", dir + "/../libexec/roll-math-verifier"})
      if (executable(p)) return p;
  }
#ifdef ROLL_MATH_VERIFIER_PATH
  if (executable(ROLL_MATH_VERIFIER_PATH)) return ROLL_MATH_VERIFIER_PATH;
#endif
  return "";
}

MathVerifier::MathVerifier(MathVerifierOptions options) : options_(std::move(options)) {
  if (options_.helper_path.empty()) options_.helper_path = find_math_verifier_helper();
}

MathVerifier::~MathVerifier() {
  std::lock_guard<std::mutex> lock(mu_);
  if (pid_ <= 0) return;
  // Closing the socket makes the helper exit; give it a moment, then make sure.
  ::close(fd_);
  fd_ = -1;
  for (int i = 0; i < 50; ++i) {
    int status;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || r < 0) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill_helper();
}

bool MathVerifier::ensure_started(std::string* error) {
  if (pid_ > 0) return true;
  if (!executable(options_.helper_path)) {
    *error = "math verifier helper not found (looked for $ROLL_MATH_VERIFIER, roll-math-verifier next to the "
             "executable, and the build tree): '" + options_.helper_path + "'";
    return false;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *error = std::string("socketpair: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // The helper's stdin and stdout are its end of the pair (dup2 clears close-on-exec); every
  // other descriptor of the worker stays out of it.
  posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
  posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGALRM, SIGCHLD, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  // The helper also ends itself when one request runs well past the limit (if we died meanwhile).
  const std::string seconds = std::to_string(2 + options_.time_limit.count() / 1000 * 2);
  const std::string mem = std::to_string(options_.memory_limit_mb);
  std::vector<char*> argv = {const_cast<char*>(options_.helper_path.c_str()), const_cast<char*>("--max-seconds"),
                             const_cast<char*>(seconds.c_str()), const_cast<char*>("--memory-mb"),
                             const_cast<char*>(mem.c_str()), nullptr};
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, options_.helper_path.c_str(), &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    *error = "posix_spawn " + options_.helper_path + ": " + std::strerror(rc);
    return false;
  }
  pid_ = pid;
  fd_ = sv[0];
  if (started_once_) ++stats_.restarts;
  started_once_ = true;
  return true;
}

void MathVerifier::kill_helper() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

void MathVerifier::count(const MathVerifyResult& r) {
  ++stats_.requests;
  switch (r.verdict) {
    case MathVerdict::kCorrect: ++stats_.correct; break;
    case MathVerdict::kWrong: ++stats_.wrong; break;
    case MathVerdict::kNoAnswer: ++stats_.no_answer; break;
    case MathVerdict::kGoldUnparsable:
    case MathVerdict::kAnswerUnparsable: ++stats_.parse_failures; break;
    case MathVerdict::kRefused: ++stats_.refused; break;
    case MathVerdict::kTimeout: ++stats_.timeouts; break;
    case MathVerdict::kError: ++stats_.errors; break;
  }
}

MathVerifyResult MathVerifier::call(char op, std::string_view gold, std::string_view answer, AnswerForm form) {
  MathVerifyResult result;
  if (gold.size() > wire::kMaxFieldBytes || answer.size() > wire::kMaxFieldBytes) {
    result.verdict = MathVerdict::kRefused;
    result.detail = "input larger than 64 MiB";
    return result;
  }
  std::string error;
  if (!ensure_started(&error)) {
    result.verdict = MathVerdict::kError;
    result.detail = error;
    return result;
  }
  const auto deadline = Clock::now() + options_.time_limit;
  const std::string request =
      wire::encode_request(static_cast<wire::Op>(op), static_cast<std::uint8_t>(form), gold, answer);
  Io io = send_all(fd_, request, deadline);
  char header[wire::kResponseHeaderBytes];
  if (io == Io::kOk) io = recv_all(fd_, header, sizeof header, deadline);
  std::string detail;
  if (io == Io::kOk) {
    if (const auto response = wire::decode_response_header(header)) {
      detail.resize(response->detail_bytes);
      io = recv_all(fd_, detail.data(), detail.size(), deadline);
    } else {
      io = Io::kClosed;
    }
  }
  if (io == Io::kTimeout) {
    kill_helper();
    result.verdict = MathVerdict::kTimeout;
    result.detail = "no verdict within " + std::to_string(options_.time_limit.count()) + " ms; helper killed";
    return result;
  }
  if (io == Io::kClosed) {
    kill_helper();
    result.verdict = MathVerdict::kError;
    result.detail = "math verifier process died or broke protocol; it will be restarted";
    return result;
  }
  result.verdict = static_cast<MathVerdict>(header[4]);
  result.detail = std::move(detail);
  return result;
}

MathVerifyResult MathVerifier::verify(std::string_view gold, std::string_view answer, AnswerForm form) {
  std::lock_guard<std::mutex> lock(mu_);
  MathVerifyResult r = call(wire::kVerify, gold, answer, form);
  // A helper killed from outside (the OOM killer, an operator) would score this answer 0: it gets
  // one more, fresh helper. An answer whose helper dies twice is taken to kill it (an error verdict).
  if (r.verdict == MathVerdict::kError) r = call(wire::kVerify, gold, answer, form);
  count(r);
  return r;
}

MathVerifyResult MathVerifier::debug_request(char op) {
  std::lock_guard<std::mutex> lock(mu_);
  MathVerifyResult r = call(op, "", "", AnswerForm::kLatex);
  count(r);
  return r;
}

MathVerifierStats MathVerifier::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

pid_t MathVerifier::helper_pid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pid_;
}

}  // namespace roll::reward
