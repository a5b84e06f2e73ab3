#pragma once
// MathVerifier: the worker-side handle on one roll-math-verifier process (GiNaC is not thread-safe
// and can hang, so it never runs in a worker). Each call sends one (ground truth, answer) pair over
// a socket pair and waits at most `time_limit`; on timeout the helper is SIGKILLed and a fresh one
// is started on the next call. Every failure scores 0 and is counted. Thread-safe (calls are
// serialised). The helper is started with posix_spawn, never fork, so threaded workers are safe.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "roll/reward/math/math_answer.h"
#include "roll/reward/math/math_verdict.h"

namespace roll::reward {

struct MathVerifierOptions {
  std::string helper_path;  // empty: find_math_verifier_helper()
  std::chrono::milliseconds time_limit{5000};  // per sample (ROLL's 5 s guard)
  std::size_t memory_limit_mb = 2048;          // RLIMIT_AS of the helper; 0 = none
};

struct MathVerifyResult {
  MathVerdict verdict = MathVerdict::kError;
  std::string detail;
};

struct MathVerifierStats {
  std::uint64_t requests = 0, correct = 0, wrong = 0, no_answer = 0, parse_failures = 0, refused = 0,
                timeouts = 0, errors = 0, restarts = 0;
};

// $ROLL_MATH_VERIFIER, else roll-math-verifier next to the running executable, else the build
// tree's copy. Empty when none exists.
std::string find_math_verifier_helper();

class MathVerifier {
 public:
  explicit MathVerifier(MathVerifierOptions options = {});
  ~MathVerifier();
  MathVerifier(const MathVerifier&) = delete;
  MathVerifier& operator=(const MathVerifier&) = delete;

  MathVerifyResult verify(std::string_view gold, std::string_view answer, AnswerForm form);

  MathVerifierStats stats() const;
  pid_t helper_pid() const;  // -1 when no helper is running
  const MathVerifierOptions& options() const { return options_; }

  // Tests: make the helper spin forever ('H') or abort ('C'); expect kTimeout / kError.
  MathVerifyResult debug_request(char op);

 private:
  MathVerifyResult call(char op, std::string_view gold, std::string_view answer, AnswerForm form);
  bool ensure_started(std::string* error);
  void kill_helper();
  void count(const MathVerifyResult& r);

  MathVerifierOptions options_;
  mutable std::mutex mu_;
  pid_t pid_ = -1;
  int fd_ = -1;
  bool started_once_ = false;
  MathVerifierStats stats_;
};

}  // namespace roll::reward
