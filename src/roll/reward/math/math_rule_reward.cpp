// MathRuleReward (docs/rewards.md): extraction here, parsing and comparison in the verifier process.
#include "roll/reward/math/math_rule_reward.h"

namespace roll::reward {

MathRuleReward::MathRuleReward(MathVerifierOptions options) : verifier_(std::move(options)) {}

MathRuleResult MathRuleReward::score(std::string_view response, std::string_view prompt,
                                     std::string_view ground_truth) {
  MathRuleResult out;
  const std::string clean_response = remove_special_tokens(response);
  const std::string clean_prompt = remove_special_tokens(prompt);
  SelectedAnswer selected = select_answer(clean_response, clean_prompt);
  out.answer = selected.text;
  out.boxed = selected.form == AnswerForm::kLatex;
  if (selected.text.empty()) {
    // Malformed think tags, or no "</think>" and no blank line (quirk 14): nothing to verify.
    std::lock_guard<std::mutex> lock(mu_);
    ++no_answer_;
    out.verdict = MathVerdict::kNoAnswer;
    out.detail = "no answer region (think tags, or no </think> and no blank line)";
    return out;
  }
  MathVerifyResult r = verifier_.verify(ground_truth, selected.text, selected.form);
  out.verdict = r.verdict;
  out.detail = std::move(r.detail);
  out.score = r.verdict == MathVerdict::kCorrect ? 1.0 : 0.0;
  return out;
}

MathVerifierStats MathRuleReward::stats() const {
  MathVerifierStats s = verifier_.stats();
  std::lock_guard<std::mutex> lock(mu_);
  s.no_answer += no_answer_;
  s.requests += no_answer_;
  return s;
}

std::map<std::string, double> MathRuleReward::metrics() const {
  const MathVerifierStats s = stats();
  return {
      {"math_verify/requests", static_cast<double>(s.requests)},
      {"math_verify/correct", static_cast<double>(s.correct)},
      {"math_verify/wrong", static_cast<double>(s.wrong)},
      {"math_verify/no_answer", static_cast<double>(s.no_answer)},
      {"math_verify/parse_failures", static_cast<double>(s.parse_failures)},
      {"math_verify/refused", static_cast<double>(s.refused)},
      {"math_verify/timeouts", static_cast<double>(s.timeouts)},
      {"math_verify/errors", static_cast<double>(s.errors)},
      {"math_verify/restarts", static_cast<double>(s.restarts)},
  };
}

}  // namespace roll::reward
