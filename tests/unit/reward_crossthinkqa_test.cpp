// CrossThinkQaReward (docs/rewards.md, "crossthinkqa") against tests/data/rule_rewards/
// crossthinkqa_cases.jsonl: 30 cases whose expected values come from running ROLL's own
// crossthinkqa_rule_reward_worker.py functions (tests/oracles/rule_rewards.py regenerates them).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "read_jsonl.h"
#include "roll/core/error.h"
#include "roll/reward/rule/crossthinkqa_reward.h"
#include "roll/reward/rule/rule_shaping.h"

namespace roll::reward {
namespace {

std::vector<nlohmann::json> cases() {
  return roll::testing::read_jsonl(std::string(ROLL_SOURCE_DIR) + "/tests/data/rule_rewards/crossthinkqa_cases.jsonl");
}

TEST(RewardCrossthinkqa, MatchesRollOnEveryTableCase) {
  const auto rows = cases();
  ASSERT_GE(rows.size(), 20u);
  for (const auto& c : rows) {
    SCOPED_TRACE(c.dump());
    const CrossThinkQaReward reward(parse_crossthinkqa_reward_type(c["reward_type"], "reward_type"),
                                    c["response_length_penalty_coef"].get<double>());
    const CrossThinkQaResult r = reward.score(c["response"].get<std::string>(), c["ground_truth"].get<std::string>(),
                                              c["responses_width"].get<int64_t>());
    EXPECT_EQ(r.score, c["score"].get<double>());
    EXPECT_EQ(r.rule_reward, c["rule_reward"].get<double>());
    EXPECT_EQ(r.format_ok, c["format"].get<bool>());
    EXPECT_EQ(r.correct, c["correct"].get<bool>());
    EXPECT_EQ(r.extracted, c["extracted"].get<std::string>());
    // Python float64 arithmetic on the same formula: a few ulps of the double sum.
    EXPECT_NEAR(r.repetition_penalty, c["repetition_penalty"].get<double>(), 1e-12);
    EXPECT_NEAR(r.length_reward, c["length_reward"].get<double>(), 1e-12);
    // The response-level reward is an fp16 value: exact once both sides round to half precision.
    EXPECT_EQ(r.response_level_reward, c["response_level_reward"].get<double>());
  }
}

TEST(RewardCrossthinkqa, TableCoversEveryRewardTypeAndOutcome) {
  int types[3] = {0, 0, 0}, outcomes[4] = {0, 0, 0, 0};
  for (const auto& c : cases()) {
    const std::string t = c["reward_type"];
    ++types[t == "loose" ? 0 : t == "soft" ? 1 : 2];
    ++outcomes[(c["correct"].get<bool>() ? 2 : 0) + (c["format"].get<bool>() ? 1 : 0)];
  }
  for (int n : types) EXPECT_GT(n, 0);
  for (int n : outcomes) EXPECT_GT(n, 0);
}

TEST(RewardCrossthinkqa, UnknownRewardTypeNamesTheKey) {
  try {
    parse_crossthinkqa_reward_type("lenient", "rewards.crossthinkqa.reward_type");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "rewards.crossthinkqa.reward_type");
    EXPECT_NE(std::string(e.what()).find("lenient"), std::string::npos);
  }
}

TEST(RewardCrossthinkqaShaping, Fp16RoundingAndLengthRamp) {
  EXPECT_EQ(rule::to_fp16(1.0 / 3.0), 0.333251953125);
  EXPECT_EQ(rule::to_fp16(-1.0 / 9.0), -0.111083984375);
  EXPECT_EQ(rule::to_fp16(65520.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(rule::response_length_reward(50), -0.5);
  EXPECT_EQ(rule::response_length_reward(400), 0.0);
  EXPECT_DOUBLE_EQ(rule::response_length_reward(250), -0.25);
  EXPECT_EQ(rule::repetition_penalty("a b"), 0.0);
  EXPECT_DOUBLE_EQ(rule::repetition_penalty("x y z x y z"), -0.5 * (1.0 - 3.0 / 4.0));
}

}  // namespace
}  // namespace roll::reward
