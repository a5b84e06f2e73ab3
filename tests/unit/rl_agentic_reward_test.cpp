// Agentic reward normalisation (docs/rl.md): grouping by non-tensor keys, discounted step returns, GiGPO
// state groups and the episode/step combination.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/core/error.h"
#include "roll/rl/agentic_reward.h"

namespace roll::rl {
namespace {

at::Tensor vec(std::vector<float> v) { return at::tensor(v); }
// fp32 group mean/std over ≤ 6 values and (x − μ)/(σ + 1e-6) against double: a few ulp (≲ 1e-6) -> 1e-4.
void expect_close(const at::Tensor& got, const at::Tensor& want, double tol = 1e-4) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol)) << got << "\nwant\n" << want;
}

TEST(RlAgenticRewardConfig, MethodFillsUnsetTypes) {
  auto r = resolve_reward_normalization({"batch", "identity", std::nullopt, std::nullopt});
  EXPECT_EQ(r.mean_type, NormType::none);
  EXPECT_EQ(r.std_type, NormType::none);
  r = resolve_reward_normalization({"traj_group_id", "mean_std", std::nullopt, std::nullopt});
  EXPECT_EQ(r.mean_type, NormType::group);
  EXPECT_EQ(r.std_type, NormType::group);
  r = resolve_reward_normalization({"batch", "mean", std::nullopt, std::nullopt});
  EXPECT_EQ(r.mean_type, NormType::batch);
  EXPECT_EQ(r.std_type, NormType::none);
  r = resolve_reward_normalization({"tags", "asym_clip", NormType::batch, std::nullopt});
  EXPECT_EQ(r.mean_type, NormType::batch);
  EXPECT_EQ(r.std_type, NormType::group);
  r = resolve_reward_normalization({"tags", "whatever", std::nullopt, std::nullopt});
  EXPECT_EQ(r.mean_type, NormType::none);
  EXPECT_THROW(resolve_reward_normalization({"batch", "identity", NormType::running, std::nullopt}), Error);
}

TEST(RlAgenticRewardNorm, GroupMeanStdWithGuards) {
  Columns cols{{"traj_group_id", {"a", "a", "b", "b", "c"}}};
  at::Tensor x = vec({1, 3, 2, 2, 5});
  // a: (x − 2)/(√2 + 1e-6); b: all equal -> 0; c: a single sample -> 0.
  expect_close(agentic_reward_norm(x, cols, "traj_group_id", NormType::group, NormType::group),
               vec({-0.70710677f, 0.70710677f, 0, 0, 0}));
  expect_close(agentic_reward_norm(x, cols, "traj_group_id", NormType::group, NormType::none),
               vec({-1, 1, 0, 0, 0}));
  expect_close(agentic_reward_norm(x, cols, "traj_group_id", NormType::none, NormType::none), x);
}

TEST(RlAgenticRewardNorm, BatchGrouping) {
  at::Tensor x = vec({1, 2, 3, 4});
  expect_close(agentic_reward_norm(x, {}, "batch", NormType::batch, NormType::batch),
               (x - 2.5) / (std::sqrt(5.0 / 3.0) + 1e-6));
  // Batch statistics inside groups: a one-sample group still gets 0.
  Columns cols{{"tags", {"s", "s", "s", "f"}}};
  at::Tensor y = agentic_reward_norm(x, cols, "tags", NormType::batch, NormType::batch);
  EXPECT_NEAR(y[3].item<double>(), 0.0, 1e-9);
  EXPECT_NEAR(y[0].item<double>(), (1 - 2.5) / (std::sqrt(5.0 / 3.0) + 1e-6), 1e-5);
}

TEST(RlAgenticRewardNorm, UnknownGroupingKeyIsNamed) {
  Columns cols{{"traj_group_id", {"a", "b"}}};
  try {
    agentic_reward_norm(vec({1, 2}), cols, "tags", NormType::group, NormType::group);
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("Grouping key 'tags'"), std::string::npos);
    EXPECT_NE(m.find("traj_group_id"), std::string::npos);
  }
  Columns short_col{{"tags", {"a"}}};
  EXPECT_THROW(agentic_reward_norm(vec({1, 2}), short_col, "tags", NormType::group, NormType::group), Error);
  EXPECT_THROW(agentic_reward_norm(vec({1, NAN}), {}, "batch", NormType::batch, NormType::none), Error);
}

TEST(RlAgenticRewardSteps, DiscountedStepReturnsPerTrajectory) {
  at::Tensor r = discounted_step_returns({"t1", "t2", "t1", "t1"}, {2, 0, 0, 1}, vec({1, 5, 0, 0.5f}), 0.5);
  expect_close(r, vec({1, 5, 0.5f, 1}));
  EXPECT_THROW(discounted_step_returns({"t1"}, {0, 1}, vec({1, 2}), 0.5), Error);
}

TEST(RlAgenticRewardStateGroups, KeyedByTrajGroupAndHash) {
  StateGroups sg = build_state_groups({"g1", "g1", "g2", "g2"}, {"h", "h", "h", "x"});
  EXPECT_EQ(sg.state_group_id[0], sg.state_group_id[1]);
  EXPECT_NE(sg.state_group_id[0], sg.state_group_id[2]);  // same state, other traj group
  EXPECT_DOUBLE_EQ(sg.metrics.last("system/state_batch_size/max"), 2.0);
  EXPECT_NEAR(sg.metrics.last("system/state_batch_size/mean"), 4.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(sg.metrics.last("system/state_batch_size/min"), 1.0);
}

TEST(RlAgenticRewardGigpo, EpisodePlusWeightedStepTerm) {
  AgenticRewardInputs in;
  in.episode_scores = vec({1, 0, 1, 0});
  in.step_rewards = vec({1, 1, 0, 2});
  in.columns = {{"traj_group_id", {"g", "g", "g", "g"}}, {"state_hash", {"s1", "s1", "s2", "s2"}}};
  AgenticRewardParams p;
  p.adv_estimator = AdvEstimator::gigpo;
  p.reward_normalization = {"traj_group_id", "mean_std", std::nullopt, std::nullopt};
  p.step_reward_weight = 0.5;
  AgenticRewardResult r = compute_response_level_rewards(in, p);
  double e = 0.5 / (std::sqrt(1.0 / 3.0) + 1e-6);
  expect_close(r.episode_rewards_norm, vec({float(e), float(-e), float(e), float(-e)}));
  expect_close(r.step_rewards_norm, vec({0, 0, -0.70710677f, 0.70710677f}));
  expect_close(r.response_level_rewards, r.episode_rewards_norm + 0.5 * r.step_rewards_norm);
  EXPECT_EQ(r.state_group_id[0], "g|s1");
  EXPECT_TRUE(r.metrics.contains("system/state_batch_size/mean"));
}

TEST(RlAgenticRewardDefault, SumOfTokenScoresThenClip) {
  AgenticRewardInputs in;
  in.scores = at::stack({vec({0, 0, 3}), vec({0, 0, -1}), vec({0, 1, 0})});
  AgenticRewardParams p;
  p.reward_normalization = {"batch", "identity", std::nullopt, std::nullopt};
  p.reward_clip = 2.0;
  AgenticRewardResult r = compute_response_level_rewards(in, p);
  expect_close(r.response_level_rewards, vec({2, -1, 1}));
  EXPECT_NEAR(r.metrics.last("critic/reward_clip_frac"), 1.0 / 3.0, 1e-12);
  p.adv_estimator = AdvEstimator::step_reinforce;
  in.step_rewards = vec({4, 2, 0});
  p.reward_normalization.method = "mean";
  expect_close(compute_response_level_rewards(in, p).response_level_rewards, vec({2, 0, -2}));
}

}  // namespace
}  // namespace roll::rl
