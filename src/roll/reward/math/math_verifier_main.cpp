// roll-math-verifier: the process that owns GiNaC for one reward worker (GiNaC is not thread-safe
// and can run for unbounded time). It reads requests on stdin and answers on stdout (a socket pair
// set up by MathVerifier), one at a time, and exits when the worker closes the socket or dies.
// It links GiNaC and the math sources only (no libtorch), so a restart after a kill takes ~20 ms.
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "roll/reward/math/math_grader.h"
#include "roll/reward/math/math_verifier_protocol.h"

namespace {

using namespace roll::reward;

bool read_full(int fd, char* p, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool write_full(int fd, const std::string& s) {
  const char* p = s.data();
  std::size_t n = s.size();
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  long memory_mb = 0, max_seconds = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--memory-mb") == 0) memory_mb = std::atol(argv[i + 1]);
    if (std::strcmp(argv[i], "--max-seconds") == 0) max_seconds = std::atol(argv[i + 1]);
  }
  // No PR_SET_PDEATHSIG: it fires when the *thread* that spawned us exits, and workers spawn from
  // short-lived threads. A dead worker closes the socket (read returns 0 and we exit); a request
  // still running when it dies is ended by the alarm below (SIGALRM's default action kills us).
  if (memory_mb > 0) {
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = static_cast<rlim_t>(memory_mb) << 20;
    ::setrlimit(RLIMIT_AS, &lim);
  }
  std::signal(SIGPIPE, SIG_DFL);

  std::string gold, answer;
  for (;;) {
    char header[wire::kRequestHeaderBytes];
    if (!read_full(0, header, sizeof header)) return 0;  // worker closed the socket
    const auto request = wire::decode_request_header(header);
    if (!request) return 2;
    const auto op = request->op;
    const auto form = static_cast<AnswerForm>(request->form);
    gold.resize(request->gold_bytes);
    answer.resize(request->answer_bytes);
    if (!read_full(0, gold.data(), gold.size()) || !read_full(0, answer.data(), answer.size())) return 0;

    if (max_seconds > 0) ::alarm(static_cast<unsigned>(max_seconds));
    GradeResult result;
    switch (op) {
      case wire::kVerify:
        try {
          result = grade_math_answer(gold, answer, form);
        } catch (const std::bad_alloc&) {
          result.verdict = MathVerdict::kRefused;
          result.detail = "out of memory";
        } catch (const std::exception& e) {
          result.verdict = MathVerdict::kWrong;
          result.detail = std::string("unexpected: ") + e.what();
        }
        break;
      case wire::kPing:
        result.verdict = MathVerdict::kCorrect;
        result.detail = "pong";
        break;
      case wire::kHangForTest:
        for (;;) {
          asm volatile("" ::: "memory");  // busy, like a runaway evaluation
        }
      case wire::kCrashForTest:
        std::abort();
      default:
        return 2;
    }
    ::alarm(0);
    if (!write_full(1, wire::encode_response(static_cast<std::uint8_t>(result.verdict), result.detail))) return 0;
  }
}
