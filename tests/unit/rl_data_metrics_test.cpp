// Data metrics with ROLL's names (docs/pipelines.md): token lengths, critic statistics, group statistics, masks.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/core/error.h"
#include "roll/rl/data_metrics.h"

namespace roll::rl {
namespace {

at::Tensor lens_mask(std::vector<int64_t> lens, int64_t T) {
  return (at::arange(T).unsqueeze(0) < at::tensor(lens).unsqueeze(1)).to(at::kLong);
}

// Two prompts × two samples: lengths 4, 2 | 3, 1 (cap 4), scores 1, 0 | 1, 1.
DataMetricsInputs batch() {
  DataMetricsInputs in;
  in.response_mask = lens_mask({4, 2, 3, 1}, 4);
  in.prompt_mask = lens_mask({2, 3, 2, 1}, 6);
  in.max_response_length = 4;
  in.scores = at::tensor(std::vector<float>{1, 0, 1, 1});
  in.token_level_rewards = at::zeros({4, 4});
  in.token_level_rewards[0][3] = 1;
  in.token_level_rewards[2][2] = 1;
  in.token_level_rewards[3][0] = 1;
  in.advantages = at::tensor(std::vector<float>{0.5f, -0.5f, 0, 0}).unsqueeze(1) * in.response_mask;
  in.returns = in.advantages;
  in.raw_advantages = in.advantages * 2;
  return in;
}

TEST(RlDataMetricsToken, LengthsAndClips) {
  auto m = token_metrics(batch()).reduce();
  EXPECT_DOUBLE_EQ(m.at("token/prompt_length/mean"), 2.0);
  EXPECT_DOUBLE_EQ(m.at("token/prompt_length/max"), 3.0);
  EXPECT_DOUBLE_EQ(m.at("token/response_length/mean"), 2.5);
  EXPECT_DOUBLE_EQ(m.at("token/response_length/diff"), 3.0);
  EXPECT_DOUBLE_EQ(m.at("token/total_length/mean"), 4.5);
  EXPECT_DOUBLE_EQ(m.at("token/total_length/diff"), 4.0);
  EXPECT_DOUBLE_EQ(m.at("token/total_response_length/clip"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("token/right_response_length/clip"), 1.0);
  EXPECT_DOUBLE_EQ(m.at("token/right_response_length/mean"), 2.0);
  EXPECT_DOUBLE_EQ(m.at("token/right_response_length/max"), 3.0);
  EXPECT_DOUBLE_EQ(m.at("token/error_response_length/clip"), 0.0);
  EXPECT_DOUBLE_EQ(m.at("token/error_response_length/min"), 2.0);
}

TEST(RlDataMetricsCritic, ScoresRewardsAdvantages) {
  DataMetricsInputs in = batch();
  in.entropy = 1.25;
  auto m = value_metrics(in).reduce();
  EXPECT_DOUBLE_EQ(m.at("critic/entropy/mean"), 1.25);
  EXPECT_DOUBLE_EQ(m.at("critic/correct/mean"), 0.75);
  EXPECT_DOUBLE_EQ(m.at("critic/score_distribution/incorrect_samples_ratio"), 0.25);
  EXPECT_DOUBLE_EQ(m.at("critic/score/min"), 0.0);
  EXPECT_DOUBLE_EQ(m.at("critic/rewards/mean"), 0.75);
  EXPECT_DOUBLE_EQ(m.at("critic/token_level_rewards_mean/mean"), 0.1875);
  EXPECT_NEAR(m.at("critic/advantages/mean"), 0.1, 1e-7);
  EXPECT_DOUBLE_EQ(m.at("critic/advantages/min"), -0.5);
  EXPECT_NEAR(m.at("critic/right_response/advantages/mean"), 0.25, 1e-7);
  EXPECT_NEAR(m.at("critic/right_response/advantages/std"), std::sqrt(0.5 / 7.0), 1e-6);
  EXPECT_DOUBLE_EQ(m.at("critic/error_response/advantages/mean"), -0.5);
  EXPECT_DOUBLE_EQ(m.at("critic/error_response/advantages/std"), 0.0);
  EXPECT_NEAR(m.at("critic/raw_advantages/mean"), 0.2, 1e-7);
  EXPECT_NEAR(m.at("critic/returns/mean"), 0.1, 1e-7);
  EXPECT_EQ(m.count("critic/values/mean"), 0u);
  in.values = at::ones({4, 4});
  EXPECT_NEAR(value_metrics(in).reduce().at("critic/values/mean"), 1.0, 1e-7);  // masked means carry ROLL's 1e-8
}

TEST(RlDataMetricsCritic, NothingSelectedLeavesOutMaxMin) {
  DataMetricsInputs in = batch();
  in.final_response_mask = at::zeros({4, 4});
  auto m = value_metrics(in).reduce();
  EXPECT_DOUBLE_EQ(m.at("critic/advantages/mean"), 0.0);
  EXPECT_EQ(m.count("critic/advantages/max"), 0u);
  EXPECT_EQ(m.count("critic/right_response/advantages/mean"), 0u);
}

TEST(RlDataMetricsGroup, PerPromptStatistics) {
  auto m = group_metrics(batch(), 2).reduce();
  EXPECT_DOUBLE_EQ(m.at("group/response_length_diff/mean"), 2.0);
  EXPECT_DOUBLE_EQ(m.at("group/correct_ratio/mean"), 0.75);
  EXPECT_NEAR(m.at("group/correct_ratio/std"), std::sqrt(0.125), 1e-9);
  EXPECT_DOUBLE_EQ(m.at("group/all_correct_groups_ratio"), 0.5);
  EXPECT_DOUBLE_EQ(m.at("group/all_incorrect_groups_ratio"), 0.0);
  EXPECT_DOUBLE_EQ(m.at("group/mixed_groups_ratio"), 0.5);
  EXPECT_NEAR(m.at("group/advantage_diff/max"), 1.0, 1e-7);
  EXPECT_NEAR(m.at("group/advantage_diff/mean"), 0.5, 1e-7);
  EXPECT_NEAR(m.at("group/correct_vs_incorrect_advantage_diff/mean"), 1.0, 1e-7);
  EXPECT_TRUE(group_metrics(batch(), 1).empty());
  EXPECT_THROW(group_metrics(batch(), 3), Error);
}

TEST(RlDataMetricsMask, UsageAndTokenKeepRatio) {
  at::Tensor m = lens_mask({4, 2, 3, 1}, 4);
  at::Tensor fm = m.clone();
  fm[3].zero_();
  auto r = mask_metrics(m, fm).reduce();
  EXPECT_DOUBLE_EQ(r.at("actor/samples_used"), 3.0);
  EXPECT_DOUBLE_EQ(r.at("actor/samples_total"), 4.0);
  EXPECT_DOUBLE_EQ(r.at("actor/final_mask_ratio"), 0.75);
  EXPECT_NEAR(r.at("actor/token_keep_ratio"), 0.9, 1e-8);
}

}  // namespace
}  // namespace roll::rl
