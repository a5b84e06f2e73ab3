// MathRuleReward end to end (docs/rewards.md): decoded response + prompt + ground truth -> 1/0 and the
// failure class, with the verifier process behind it.
#include <gtest/gtest.h>

#include "roll/reward/math/math_rule_reward.h"

namespace roll::reward {
namespace {

TEST(RewardMathRule, ScoresBoxedAnswerAfterThink) {
  MathRuleReward reward;
  MathRuleResult r = reward.score("<think>\n7*6 is 42\n</think>\n\nThe answer is \\boxed{42}.<|endoftext|>",
                                  "<|im_start|>user\nWhat is 7*6?<|im_end|>\n<|im_start|>assistant\n", "42");
  EXPECT_EQ(r.score, 1.0);
  EXPECT_EQ(r.verdict, MathVerdict::kCorrect);
  EXPECT_TRUE(r.boxed);
  EXPECT_EQ(r.answer, "42");
}

TEST(RewardMathRule, BlankLineRegionAndTextFallback) {
  MathRuleReward reward;
  EXPECT_EQ(reward.score("Half of 1 is small.\n\nSo the answer is $\\frac{1}{2}$.", "Q", "0.5").score, 1.0);
  EXPECT_EQ(reward.score("Work.\n\n\\boxed{\\sqrt{8}}", "Q", "2\\sqrt{2}").score, 1.0);
  MathRuleResult wrong = reward.score("Work.\n\n\\boxed{3.14}", "Q", "\\pi");
  EXPECT_EQ(wrong.score, 0.0);
  EXPECT_EQ(wrong.verdict, MathVerdict::kWrong);
}

TEST(RewardMathRule, Quirk14AndThinkTagRulesScoreZero) {
  MathRuleReward reward;
  MathRuleResult one_line = reward.score("\\boxed{42}", "Q", "42");  // no </think>, no blank line
  EXPECT_EQ(one_line.score, 0.0);
  EXPECT_EQ(one_line.verdict, MathVerdict::kNoAnswer);
  EXPECT_EQ(reward.score("<think>a</think>b</think>\\boxed{42}", "Q", "42").score, 0.0);
  EXPECT_EQ(reward.score("<think>a</think>\\boxed{42}", "prompt <think>\n", "42").score, 0.0);
  EXPECT_EQ(reward.score("a</think>\\boxed{42}", "prompt <think>\n", "42").score, 1.0);
}

TEST(RewardMathRule, MetricsCountEveryFailureClass) {
  MathRuleReward reward;
  reward.score("x\n\n\\boxed{1}", "Q", "1");                 // correct
  reward.score("x\n\n\\boxed{2}", "Q", "1");                 // wrong
  reward.score("\\boxed{1}", "Q", "1");                      // no answer
  reward.score("x\n\n\\boxed{\\frac{1}{}", "Q", "1");        // unparsable
  reward.score("x\n\n\\boxed{10^{10^{9}}}", "Q", "1");       // refused
  const auto m = reward.metrics();
  EXPECT_EQ(m.at("math_verify/requests"), 5);
  EXPECT_EQ(m.at("math_verify/correct"), 1);
  EXPECT_EQ(m.at("math_verify/wrong"), 1);
  EXPECT_EQ(m.at("math_verify/no_answer"), 1);
  EXPECT_EQ(m.at("math_verify/parse_failures"), 1);
  EXPECT_EQ(m.at("math_verify/refused"), 1);
  EXPECT_EQ(m.at("math_verify/timeouts"), 0);
}

}  // namespace
}  // namespace roll::reward
