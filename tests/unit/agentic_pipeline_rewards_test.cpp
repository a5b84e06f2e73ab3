// The agentic step's reward wiring (pipeline/agentic_rewards.h) on a hand-made StepEnvManager batch:
// discounted step returns, gigpo and step_reinforce against values computed by hand from docs/rl.md
// (plain formulas, independent of rl/: see the comments), and the errors for batches without
// per-turn samples.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "roll/config/node.h"
#include "roll/config/schema.h"
#include "roll/core/batch.h"
#include "roll/core/error.h"
#include "roll/pipeline/agentic_rewards.h"

using namespace roll;
using namespace roll::pipeline;

namespace {

// Two traj groups A, B; trajectories A0 (2 turns), A1 (3), B0 (1), B1 (2); rows scrambled so the
// returns must follow `step`, not row order. Both groups have a state "s0": rollcpp keys state
// groups by traj_group_id|state_hash, so they stay apart.
struct Row {
  const char* group;
  const char* traj;
  int64_t step;
  double step_score;
  const char* state;
};
const std::vector<Row> kRows = {
    {"A", "A1", 2, 2.0, "s1"}, {"A", "A0", 0, 0.0, "s0"}, {"B", "B1", 1, 0.0, "s3"}, {"A", "A1", 0, 0.0, "s0"},
    {"B", "B0", 0, 1.0, "s0"}, {"A", "A0", 1, 1.0, "s1"}, {"A", "A1", 1, 0.5, "s2"}, {"B", "B1", 0, 0.0, "s0"},
};

Batch step_batch() {
  const int64_t B = static_cast<int64_t>(kRows.size()), T = 3;
  std::map<std::string, double> episode;
  for (const auto& r : kRows) episode[r.traj] += r.step_score;
  at::Tensor scores = at::zeros({B, T}, at::kFloat);
  NonTensorColumn group, traj, step, step_scores, episode_scores, state, tags;
  for (int64_t i = 0; i < B; ++i) {
    const Row& r = kRows[i];
    scores[i][T - 1] = r.step_score;  // the turn's reward at its last token
    group.push_back(r.group);
    traj.push_back(std::string(r.group) + "_" + r.traj);
    step.push_back(r.step);
    step_scores.push_back(r.step_score);
    episode_scores.push_back(episode[r.traj]);
    state.push_back(r.state);
    tags.push_back("FrozenLake");
  }
  Batch b(B);
  b.set_tensor("scores", scores);
  b.set_column("traj_group_id", group);
  b.set_column("traj_id", traj);
  b.set_column("step", step);
  b.set_column("step_scores", step_scores);
  b.set_column("episode_scores", episode_scores);
  b.set_column("state_hash", state);
  b.set_column("tags", tags);
  return b;
}

config::PipelineConfig step_config(const std::string& estimator) {
  config::PipelineConfig c;
  c.adv_estimator = estimator;
  c.reward_normalization.grouping = "traj_group_id";
  c.reward_normalization.method = "mean_std";
  c.step_reward_gamma = 0.5;
  c.episode_reward_weight = 1.0;
  c.step_reward_weight = 0.5;
  return c;
}

void expect_near(const at::Tensor& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size())) << what;
  at::Tensor g = got.to(at::kDouble).contiguous();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(g[i].item<double>(), want[i], tol) << what << " row " << i;
}

// Returns with γ = 0.5, per trajectory from its last turn back (G_t = s_t + γ G_{t+1}):
// A0 [0, 1] -> [0.5, 1]; A1 [0, 0.5, 2] -> [0.75, 1.5, 2]; B0 [1] -> [1]; B1 [0, 0] -> [0, 0].
const std::vector<double> kReturns = {2.0, 0.5, 0.0, 0.75, 1.0, 1.0, 1.5, 0.0};

}  // namespace

TEST(AgenticPipelineRewards, DiscountedStepReturnsFollowTheTurnOrder) {
  Batch b = step_batch();
  add_step_returns(b, step_config("gigpo"));
  expect_near(b.tensor("step_rewards"), kReturns, 1e-6, "step_rewards");

  Batch plain = step_batch();
  add_step_returns(plain, step_config("grpo"));
  EXPECT_FALSE(plain.has_tensor("step_rewards"));
}

TEST(AgenticPipelineRewards, GigpoAgainstHandComputedValues) {
  Batch b = step_batch();
  const auto c = step_config("gigpo");
  add_step_returns(b, c);
  rl::AgenticRewardResult r = agentic_response_rewards(b, c);
  // E: episode scores per row, normalised per traj group (mean, unbiased std, (x - μ)/(σ + 1e-6)):
  //   A rows [2.5, 1, 2.5, 1, 2.5]: μ 1.9, σ 0.821584 -> 0.730296 / -1.095444;
  //   B rows [0, 1, 0]: μ 1/3, σ 0.577350 -> -0.577349 / 1.154699.
  const std::vector<double> E = {0.7302959, -1.0954438, -0.5773493, 0.7302959,
                                 1.1546985, -1.0954438, 0.7302959,  -0.5773493};
  // S: returns per state group (traj group | state): A|s0 [0.5, 0.75] -> ∓0.707103, A|s1 [2, 1]
  // -> ±0.707106, A|s2 and B|s3 alone -> 0, B|s0 [1, 0] -> ±0.707106.
  const std::vector<double> S = {0.7071058, -0.7071028, 0.0, 0.7071028, 0.7071058, -0.7071058, 0.0, -0.7071058};
  expect_near(r.episode_rewards_norm, E, 1e-5, "episode_rewards_norm");
  expect_near(r.step_rewards_norm, S, 1e-5, "step_rewards_norm");
  std::vector<double> total;
  for (size_t i = 0; i < E.size(); ++i) total.push_back(1.0 * E[i] + 0.5 * S[i]);
  expect_near(r.response_level_rewards, total, 1e-5, "response_level_rewards");
  EXPECT_EQ(r.state_group_id.at(1), "A|s0");
  EXPECT_EQ(r.state_group_id.at(4), "B|s0");
}

TEST(AgenticPipelineRewards, StepReinforceNormalisesTheReturnsByTheConfig) {
  Batch b = step_batch();
  const auto c = step_config("step_reinforce");
  add_step_returns(b, c);
  rl::AgenticRewardResult r = agentic_response_rewards(b, c);
  // Returns per traj group: A [2, 0.5, 0.75, 1, 1.5] μ 1.15 σ 0.602080; B [0, 1, 0] as above.
  expect_near(r.response_level_rewards,
              {1.4117708, -1.0795894, -0.5773493, -0.6643627, 1.1546985, -0.2491360, 0.5813174, -0.5773493}, 1e-5,
              "response_level_rewards");
  EXPECT_FALSE(r.episode_rewards_norm.defined());
}

TEST(AgenticPipelineRewards, DefaultEstimatorsSumTheTokenScores) {
  Batch b = step_batch();
  auto c = step_config("grpo");
  c.reward_normalization.grouping = "tags";  // one group: the batch's 8 turn rewards
  rl::AgenticRewardResult r = agentic_response_rewards(b, c);
  // [2, 0, 0, 0, 1, 1, 0.5, 0]: μ 0.5625, σ 0.728869.
  std::vector<double> want;
  const double mean = 0.5625, sd = 0.7288690;
  for (const auto& row : kRows) want.push_back((row.step_score - mean) / (sd + 1e-6));
  expect_near(r.response_level_rewards, want, 1e-5, "response_level_rewards");
}

TEST(AgenticPipelineRewards, TrajectoryBatchesAreRefusedForStepEstimators) {
  // TrajEnvManager's samples: no step, a list of step scores, no state hash.
  Batch b(2);
  b.set_tensor("scores", at::ones({2, 3}, at::kFloat));
  b.set_column("traj_id", {"t0", "t1"});
  b.set_column("step_scores", {nlohmann::json::array({0.0, 1.0}), nlohmann::json::array({1.0})});
  b.set_column("episode_scores", {1.0, 1.0});
  for (const char* est : {"gigpo", "step_reinforce"}) {
    Batch x = b;
    try {
      add_step_returns(x, step_config(est));
      FAIL() << est << " accepted a trajectory batch";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("StepEnvManager"), std::string::npos) << e.what();
      EXPECT_EQ(e.key(), "adv_estimator");
    }
  }
  // Without the returns the reward step says what is missing instead of reading garbage.
  EXPECT_THROW(agentic_response_rewards(b, step_config("step_reinforce")), Error);
}

namespace {

// The step batch with per-turn response lengths, and a FrozenLake env whose turns may take 10 tokens.
const std::vector<int64_t> kTurnLengths = {10, 9, 8, 7, 2, 10, 6, 0};

Batch step_batch_with_lengths() {
  Batch b = step_batch();
  at::Tensor mask = at::zeros({b.size(), 14}, at::kLong);
  for (int64_t i = 0; i < b.size(); ++i) mask[i].slice(0, 2, 2 + kTurnLengths[static_cast<size_t>(i)]).fill_(1);
  b.set_tensor("response_mask", mask);
  return b;
}

config::PipelineConfig overlong_config(const std::string& estimator) {
  config::PipelineConfig c = step_config(estimator);
  c.overlong_reward.enable = true;
  c.overlong_reward.buffer_len = 4;
  c.overlong_reward.penalty_factor = 0.5;
  c.custom_envs = {{"FrozenLake", config::parse_yaml_text("{env_type: frozen_lake, max_steps: 5, max_tokens_per_step: 10, "
                                                          "agent_template: 'x', env_manager_cls: "
                                                          "roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager}",
                                                          {})}};
  return c;
}

// DAPO's penalty by hand: L_max 10, buffer 4, factor 0.5: 0 up to 6 tokens, then -0.125 per token.
std::vector<double> hand_penalty() {
  std::vector<double> out;
  for (int64_t len : kTurnLengths) out.push_back(0.5 * std::clamp((10.0 - 4.0 - static_cast<double>(len)) / 4.0, -1.0, 0.0));
  return out;
}

// (x - μ)/(σ + 1e-6) with the unbiased σ over the rows of `rows`.
std::vector<double> normalised(const std::vector<double>& x, const std::vector<size_t>& rows) {
  double mean = 0, var = 0;
  for (size_t r : rows) mean += x[r] / static_cast<double>(rows.size());
  for (size_t r : rows) var += (x[r] - mean) * (x[r] - mean) / static_cast<double>(rows.size() - 1);
  std::vector<double> out(x.size(), 0.0);
  for (size_t r : rows) out[r] = (x[r] - mean) / (std::sqrt(var) + 1e-6);
  return out;
}

}  // namespace

TEST(AgenticPipelineRewards, OverlongPenaltyJoinsTheTurnScoreBeforeNormalisation) {
  Batch b = step_batch_with_lengths();
  auto c = overlong_config("grpo");
  c.reward_normalization.grouping = "tags";
  rl::AgenticRewardResult r = agentic_response_rewards(b, c);
  const std::vector<double> pen = hand_penalty();
  std::vector<double> shaped;
  for (size_t i = 0; i < kRows.size(); ++i) shaped.push_back(kRows[i].step_score + pen[i]);
  // Rewards of a few units through one normalisation: fp32 keeps ~1e-6 of them.
  expect_near(r.response_level_rewards, normalised(shaped, {0, 1, 2, 3, 4, 5, 6, 7}), 1e-5, "response_level_rewards");
  EXPECT_NEAR(r.metrics.last("critic/overlong_penalty_mean"), -1.75 / 8, 1e-7);
  EXPECT_NEAR(r.metrics.last("critic/overlong_penalized_ratio"), 5.0 / 8, 1e-7);
}

TEST(AgenticPipelineRewards, OverlongPenaltyJoinsTheStepReturnsOfStepEstimators) {
  Batch b = step_batch_with_lengths();
  const auto c = overlong_config("step_reinforce");
  add_step_returns(b, c);
  rl::AgenticRewardResult r = agentic_response_rewards(b, c);
  const std::vector<double> pen = hand_penalty();
  std::vector<double> shaped;
  for (size_t i = 0; i < kReturns.size(); ++i) shaped.push_back(kReturns[i] + pen[i]);
  std::vector<double> want = normalised(shaped, {0, 1, 3, 5, 6});  // traj group A
  const std::vector<double> group_b = normalised(shaped, {2, 4, 7});
  for (size_t row : {2, 4, 7}) want[row] = group_b[row];
  expect_near(r.response_level_rewards, want, 1e-5, "response_level_rewards");
}

TEST(AgenticPipelineRewards, OverlongPenaltyIsOffByDefault) {
  Batch b = step_batch_with_lengths();
  auto c = overlong_config("grpo");
  c.overlong_reward.enable = false;
  c.reward_normalization.grouping = "tags";
  rl::AgenticRewardResult r = agentic_response_rewards(b, c);
  std::vector<double> plain;
  for (const auto& row : kRows) plain.push_back(row.step_score);
  expect_near(r.response_level_rewards, normalised(plain, {0, 1, 2, 3, 4, 5, 6, 7}), 1e-5, "response_level_rewards");
  EXPECT_FALSE(r.metrics.contains("critic/overlong_penalty_mean"));
}
