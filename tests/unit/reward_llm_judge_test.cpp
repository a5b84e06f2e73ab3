// The text side of the llm_judge reward (docs/rewards.md): the question cut from the policy's prompt, the
// judge template filled, and verdicts parsed from judge answers (YES -> 1, anything else -> 0).
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/reward/llm_judge.h"

namespace roll::reward {
namespace {

TEST(RewardLlmJudge, QuestionIsTheLastUserTurn) {
  const std::string prompt =
      "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+3?<|im_end|>\n"
      "<|im_start|>assistant\n";
  EXPECT_EQ(judge_question(prompt), "What is 2+3?");
  EXPECT_EQ(judge_question("User: no chat markers"), "User: no chat markers");  // no "user\n": all of it
  EXPECT_EQ(judge_question("user\nfirst\nuser\nsecond"), "second");
  EXPECT_EQ(judge_response("The answer is 5.<|im_end|><|endoftext|><pad><pad>"), "The answer is 5.");
}

TEST(RewardLlmJudge, TemplatesFillAndRefuseUnknownNames) {
  const std::string t = judge_template("", "rewards.llm_judge.judge_prompt");
  EXPECT_EQ(t, judge_template("Qwen2.5-7B-Instruct-RLVR-prompt", "k"));
  const std::string filled = fill_judge_template(t, "Q?", "R.", "42");
  EXPECT_NE(filled.find("Question:\nQ?\n"), std::string::npos) << filled;
  EXPECT_NE(filled.find("R.\n"), std::string::npos);
  EXPECT_NE(filled.find("Reference answer:\n42\n"), std::string::npos);
  EXPECT_EQ(filled.find('{'), std::string::npos);
  EXPECT_EQ(fill_judge_template("{{x}} {question}|{response}|{reference}", "a", "b", "c"), "{x} a|b|c");
  EXPECT_EQ(judge_template("Is {response} right? {reference}", "k"), "Is {response} right? {reference}");
  try {
    judge_template("Some-Unknown-prompt", "rewards.llm_judge.judge_prompt");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "rewards.llm_judge.judge_prompt");
    EXPECT_NE(std::string(e.what()).find("Qwen2.5-7B-Instruct-RLVR-prompt"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fill_judge_template("{answer}", "a", "b", "c"), Error);
  EXPECT_THROW(fill_judge_template("{question", "a", "b", "c"), Error);
}

TEST(RewardLlmJudge, VerdictIsTheWordYes) {
  for (const char* yes : {"YES", "yes", "Yes.", " YES\n", "**YES**", "Yes, it matches", "<think>no idea</think>YES",
                          "The answer: yes"})
    EXPECT_EQ(judge_verdict(yes), 1.0) << yes;
  for (const char* no : {"NO", "no", "No.", "", "eyes", "yesterday", "YESNO", "nope",
                         "<think>yes, maybe</think>NO", "I cannot tell"})
    EXPECT_EQ(judge_verdict(no), 0.0) << no;
}

}  // namespace
}  // namespace roll::reward
