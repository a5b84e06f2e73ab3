// math_rule answer extraction (docs/rewards.md steps 1-2): ROLL's _extract_after_last_end_think with
// quirk 14 reproduced, the last \boxed with brace matching, and formula candidates in free text.
#include <gtest/gtest.h>

#include "roll/reward/math/math_answer.h"

namespace roll::reward {
namespace {

TEST(RewardMathAnswer, TextAfterLastEndThinkIsStripped) {
  EXPECT_EQ(extract_after_last_end_think("<think>work</think>  The answer is 5.\n", "Q"), "The answer is 5.");
  EXPECT_EQ(extract_after_last_end_think("reasoning</think>\n\\boxed{3}", "Q"), "\\boxed{3}");
}

TEST(RewardMathAnswer, PromptEndingInThinkForbidsThinkInResponse) {
  const std::string prompt = "<|im_start|>assistant\n<think>\n\n";
  EXPECT_EQ(extract_after_last_end_think("work</think> 7", prompt), "7");
  EXPECT_EQ(extract_after_last_end_think("<think>work</think> 7", prompt), "");
  EXPECT_EQ(extract_after_last_end_think("a</think>b</think> 7", prompt), "");
}

TEST(RewardMathAnswer, ThinkOnlyAllowedAtPositionZero) {
  EXPECT_EQ(extract_after_last_end_think("<think>x</think>7", "Q"), "7");
  EXPECT_EQ(extract_after_last_end_think(" <think>x</think>7", "Q"), "");
  EXPECT_EQ(extract_after_last_end_think("<think>x<think>y</think>7", "Q"), "");
  EXPECT_EQ(extract_after_last_end_think("x</think>y</think>7", "Q"), "");
}

TEST(RewardMathAnswer, BlankLineFallbackAndQuirk14) {
  EXPECT_EQ(extract_after_last_end_think("step one\n\nstep two\n\n The answer is 4 ", "Q"), "The answer is 4");
  // Quirk 14 (reproduced): no </think> and no blank line -> no answer, even with a \boxed.
  EXPECT_EQ(extract_after_last_end_think("\\boxed{4}", "Q"), "");
  EXPECT_EQ(extract_after_last_end_think("one line\nanother \\boxed{4}", "Q"), "");
  SelectedAnswer none = select_answer("\\boxed{4}", "Q");
  EXPECT_TRUE(none.text.empty());
}

TEST(RewardMathAnswer, LastBoxedWithBraceMatching) {
  EXPECT_EQ(extract_last_boxed("\\boxed{1} then \\boxed{\\frac{1}{2}}").value(), "\\frac{1}{2}");
  EXPECT_EQ(extract_last_boxed("\\boxed{\\{1,2\\}}").value(), "\\{1,2\\}");
  EXPECT_EQ(extract_last_boxed("x \\boxed\\{1,2\\}").value(), "1,2");
  EXPECT_EQ(extract_last_boxed("\\boxed{\\text{\"}\"} x}").value(), "\\text{\"}\"} x");  // braces in quotes ignored
  EXPECT_FALSE(extract_last_boxed("\\boxed{\\frac{1}{2}").has_value());            // never closed
  EXPECT_FALSE(extract_last_boxed("no box").has_value());
}

TEST(RewardMathAnswer, SelectFallsBackToRegion) {
  SelectedAnswer boxed = select_answer("<think>t</think> so \\boxed{x^2}", "Q");
  EXPECT_EQ(boxed.form, AnswerForm::kLatex);
  EXPECT_EQ(boxed.text, "x^2");
  SelectedAnswer unclosed = select_answer("<think>t</think> so \\boxed{x^2", "Q");
  EXPECT_EQ(unclosed.form, AnswerForm::kText);
  EXPECT_EQ(unclosed.text, "so \\boxed{x^2");
}

TEST(RewardMathAnswer, SpecialTokensRemoved) {
  EXPECT_EQ(remove_special_tokens("a<|endoftext|>b<pad><pad>c"), "abc");
}

TEST(RewardMathAnswer, CandidatesPreferAnchorsThenRightmost) {
  auto c = find_answer_candidates("The answer is 5. Check: 5 + 3 = 8");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].text, "5");
  EXPECT_EQ(c[0].priority, 200);
  c = find_answer_candidates("first 3, then $\\frac{1}{2}$ and finally 9");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].text, "9");
  c = find_answer_candidates("The final answer is $x=2$. I hope it is correct. 7");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].text, "x=2");
  EXPECT_TRUE(c[0].latex);
  c = find_answer_candidates("It costs $1,234.50 in total");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].text, "1234.50");
  c = find_answer_candidates("rate 12,5 percent");
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c[0].text, "12.5%");
}

TEST(RewardMathAnswer, CandidateScanIsLinearOnHugeText) {
  std::string text;
  for (int i = 0; i < 100000; ++i) text += "$ 1 + ( ";
  text += " so 7";
  auto c = find_answer_candidates(text, 8);
  EXPECT_LE(c.size(), 8u);
}

}  // namespace
}  // namespace roll::reward
