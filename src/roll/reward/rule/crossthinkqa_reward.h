#pragma once
// ROLL's CrossThinkQARuleRewardWorker (docs/rewards.md, "crossthinkqa"): multiple-choice answers
// scored by the first capital letter of the answer against the first character of the ground
// truth, with a format bonus for \boxed{}.
//   answer text  special tokens removed, then the text after the last </think>
//   extracted    the content of the last \boxed{...} (no nested braces) -> format ok; else the
//                text after the last "answer is" (case-insensitive); else the whole answer text
//   correct      the first uppercase character of `extracted` equals ground_truth's first character
//   rule reward  by reward_type            correct+format  correct  format  neither
//                  loose                         1            1       -1      -1
//                  soft                          1           0.5     -0.5     -1
//                  strict                        1           -1       -1      -1
//   score        1 when the rule reward > 0, else 0
//   response-level reward  rule + repetition penalty (of the whole response) +
//                coef x response_length_reward(responses width), in float16 as ROLL sums it
#include <cstdint>
#include <string>
#include <string_view>

namespace roll::reward {

enum class CrossThinkQaRewardType { loose, soft, strict };

// "loose" | "soft" | "strict"; anything else is a roll::ConfigError naming `key`.
CrossThinkQaRewardType parse_crossthinkqa_reward_type(const std::string& name, const std::string& key);

struct CrossThinkQaResult {
  double score = 0;                  // 0 / 1 (ROLL's `scores`)
  double response_level_reward = 0;  // ROLL's `response_level_rewards`, fp16-rounded
  double rule_reward = 0;            // the table above
  double repetition_penalty = 0;
  double length_reward = 0;
  bool format_ok = false;            // a \boxed{} answer
  bool correct = false;
  std::string extracted;             // the text the letter was taken from
};

class CrossThinkQaReward {
 public:
  CrossThinkQaReward(CrossThinkQaRewardType type, double response_length_penalty_coef)
      : type_(type), length_coef_(response_length_penalty_coef) {}

  // `responses_width`: the length ROLL's length reward sees, the width of the padded `responses`
  // tensor (not the sample's own token count).
  CrossThinkQaResult score(std::string_view response, std::string_view ground_truth, int64_t responses_width) const;

 private:
  CrossThinkQaRewardType type_;
  double length_coef_;
};

// The \boxed{} / "answer is" extraction; `format_ok` is set when a \boxed{} answer was found.
std::string crossthinkqa_extract(std::string_view answer_text, bool& format_ok);

}  // namespace roll::reward
