#pragma once
// MathRuleReward: ROLL's MathRuleRewardWorker scoring (docs/rewards.md) for one sample. Given the decoded
// response and prompt (special tokens included; "<|endoftext|>" and "<pad>" are removed here) and
// the ground truth, returns 1 when the answer is equivalent to the ground truth and 0 otherwise;
// response_level_rewards = scores = that value. The failure class says why a 0 is a 0. The unused
// extras of ROLL's worker (repetition, format and length penalties) are not computed.
#include <map>
#include <string>
#include <string_view>

#include "roll/reward/math/math_verifier.h"

namespace roll::reward {

struct MathRuleResult {
  double score = 0.0;
  MathVerdict verdict = MathVerdict::kNoAnswer;
  std::string answer;  // what was compared: the last \boxed content, else the answer region
  bool boxed = false;
  std::string detail;
};

class MathRuleReward {
 public:
  explicit MathRuleReward(MathVerifierOptions options = {});

  MathRuleResult score(std::string_view response, std::string_view prompt, std::string_view ground_truth);

  // Counters since construction, named for the metrics of the reward worker:
  // math_verify/{requests,correct,wrong,no_answer,parse_failures,refused,timeouts,errors,restarts}.
  std::map<std::string, double> metrics() const;
  MathVerifierStats stats() const;
  MathVerifier& verifier() { return verifier_; }

 private:
  MathVerifier verifier_;
  mutable std::mutex mu_;
  std::uint64_t no_answer_ = 0;
};

}  // namespace roll::reward
