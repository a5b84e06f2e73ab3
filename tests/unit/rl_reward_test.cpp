// RLVR reward post-processing (docs/rl.md): token-level rewards, batch/group/running normalisation, clip,
// RLOO, DAPO overlong shaping, compute_token_reward with the KL penalty and controllers.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "roll/core/error.h"
#include "roll/rl/overlong.h"
#include "roll/rl/reward.h"

namespace roll::rl {
namespace {

at::Tensor vec(std::vector<float> v) { return at::tensor(v); }
at::Tensor rows(std::vector<std::vector<float>> v) {
  std::vector<at::Tensor> r;
  for (auto& x : v) r.push_back(at::tensor(x));
  return at::stack(r);
}
// fp32 means/stds over ≤ 4 rewards of |r| ≤ 12 against double hand values: a few ulp (≲ 3e-6) -> 1e-5.
void expect_close(const at::Tensor& got, const at::Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol)) << got << "\nwant\n" << want;
}
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RlRewardTokenLevel, LastRealTokenOfEachRow) {
  at::Tensor attn = rows({{1, 1, 1, 0}, {1, 1, 1, 1}}).to(at::kLong);
  at::Tensor pos = at::clamp(attn.cumsum(1) - 1, 0);
  expect_close(expand_to_token_level(vec({5, 7}), attn, pos), rows({{0, 5, 0}, {0, 0, 7}}));
  // mRoPE position ids [B, 3, S]: channel 0 decides.
  at::Tensor pos3 = pos.unsqueeze(1).repeat({1, 3, 1});
  expect_close(expand_to_token_level(vec({5, 7}), attn, pos3), rows({{0, 5, 0}, {0, 0, 7}}));
}

TEST(RlRewardNorm, BatchGroupAndNone) {
  at::Tensor r = vec({1, 2, 3, 4});
  double sd = std::sqrt(5.0 / 3.0);
  expect_close(reward_norm(r, 2, NormType::batch, NormType::batch),
               (r - 2.5) / (sd + 1e-6));
  expect_close(reward_norm(r, 2, NormType::group, NormType::group),
               vec({-0.70710677f, 0.70710677f, -0.70710677f, 0.70710677f}), 1e-4);
  expect_close(reward_norm(r, 2, NormType::group, NormType::none), vec({-0.5f, 0.5f, -0.5f, 0.5f}));
  expect_close(reward_norm(r, 2, NormType::none, NormType::none), r);
  // Mixed types broadcast per sample: batch mean, group std.
  expect_close(reward_norm(r, 2, NormType::batch, NormType::group),
               (r - 2.5) / (std::sqrt(0.5) + 1e-6), 1e-4);
}

TEST(RlRewardNorm, GroupsMustTileTheBatch) {
  std::string msg = message_of([] { reward_norm(vec({1, 2, 3}), 2, NormType::group, NormType::group); });
  EXPECT_NE(msg.find("num_return_sequences"), std::string::npos);
  EXPECT_NE(msg.find("response_level_rewards"), std::string::npos);
}

TEST(RlRewardRunning, WelfordMergeMatchesTheWholeStream) {
  RunningMoments rm;
  auto [m1, s1] = rm.update(vec({1, 2, 3, 4}));
  EXPECT_NEAR(m1, 2.5, 1e-9);
  EXPECT_NEAR(s1, std::sqrt(5.0 / 3.0), 1e-9);
  EXPECT_NEAR(rm.mean(), 2.5, 1e-9);
  EXPECT_NEAR(rm.std(), std::sqrt(5.0 / 3.0), 1e-9);
  rm.update(vec({5, 6}));
  EXPECT_NEAR(rm.mean(), 3.5, 1e-9);
  EXPECT_NEAR(rm.var(), 35.0 / 12.0, 1e-9);
  EXPECT_NEAR(rm.std(), std::sqrt(3.5), 1e-9);
  RunningMoments single;
  single.update(vec({3}));
  EXPECT_TRUE(std::isfinite(single.std()));
}

TEST(RlRewardRunning, KeyedByDomainNotTheLiteralWordDomain) {
  RunningMomentsMap running;
  RewardPostprocessParams p;
  p.norm_mean_type = NormType::running;
  p.norm_std_type = NormType::running;
  RewardPostprocessResult a = reward_postprocess(vec({1, 2, 3, 4}), p, running, "math");
  RewardPostprocessResult b = reward_postprocess(vec({10, 10, 12, 12}), p, running, "code");
  ASSERT_EQ(running.size(), 2u);
  EXPECT_EQ(running.count("domain"), 0u);
  EXPECT_NEAR(running.at("math").mean(), 2.5, 1e-9);
  EXPECT_NEAR(running.at("code").mean(), 11.0, 1e-9);
  expect_close(a.rewards, (vec({1, 2, 3, 4}) - 2.5) / (std::sqrt(5.0 / 3.0) + 1e-6));
  reward_postprocess(vec({5, 6}), p, running, "math");
  EXPECT_NEAR(running.at("math").mean(), 3.5, 1e-9);
  EXPECT_THROW(reward_norm(vec({1, 2}), 1, NormType::running, NormType::none, nullptr), Error);
}

TEST(RlRewardPostprocess, GrpoForcesGroupNormWithoutTouchingParams) {
  RewardPostprocessParams p;
  p.adv_estimator = AdvEstimator::grpo;
  p.num_return_sequences = 2;
  RewardPostprocessResult r = reward_postprocess(vec({1, 0, 0, 0}), p);
  EXPECT_EQ(r.mean_type, NormType::group);
  EXPECT_EQ(r.std_type, NormType::group);
  EXPECT_EQ(p.norm_mean_type, NormType::none);
  expect_close(r.rewards, vec({0.70710677f, -0.70710677f, 0, 0}), 1e-4);
  EXPECT_DOUBLE_EQ(r.metrics.last("critic/reward_clip_frac"), 0.0);
}

TEST(RlRewardPostprocess, ClipAndFraction) {
  RewardPostprocessParams p;
  p.reward_clip = 1.0;
  RewardPostprocessResult r = reward_postprocess(vec({-3, 0.5f, 2}), p);
  expect_close(r.rewards, vec({-1, 0.5f, 1}));
  EXPECT_NEAR(r.metrics.last("critic/reward_clip_frac"), 2.0 / 3.0, 1e-12);
}

TEST(RlRewardPostprocess, NaNRewardIsAnErrorNamingTheTensor) {
  RewardPostprocessParams p;
  std::string msg = message_of([&] { reward_postprocess(vec({1, NAN, 0}), p); });
  EXPECT_NE(msg.find("response_level_rewards"), std::string::npos);
  EXPECT_NE(msg.find("index 1"), std::string::npos);
}

TEST(RlRewardRloo, LeaveOneOutBaseline) {
  expect_close(leave_one_out_baseline(vec({1, 0, 0, 1}), 2), vec({1, -1, -1, 1}));
  expect_close(leave_one_out_baseline(vec({1, 2, 3, 6}), 4), vec({-8.f / 3, -4.f / 3, 0, 4}));
  RewardPostprocessParams p;
  p.adv_estimator = AdvEstimator::rloo;
  p.num_return_sequences = 2;
  p.norm_mean_type = NormType::batch;  // replaced by the leave-one-out mean
  expect_close(reward_postprocess(vec({1, 0, 0, 1}), p).rewards, vec({1, -1, -1, 1}));
  p.norm_std_type = NormType::group;
  expect_close(reward_postprocess(vec({1, 0, 0, 1}), p).rewards,
               vec({1, -1, -1, 1}) / (std::sqrt(0.5) + 1e-6), 1e-4);
  p.num_return_sequences = 1;
  std::string msg = message_of([&] { reward_postprocess(vec({1, 0}), p); });
  EXPECT_NE(msg.find("rloo"), std::string::npos);
}

TEST(RlRewardOverlong, DapoPenalty) {
  OverlongParams p{true, 4, 1.0};
  expect_close(overlong_penalty(vec({6, 8, 10, 12}), 10, p), vec({0, -0.5f, -1, -1}));
  p.penalty_factor = 0.5;
  OverlongResult r = apply_overlong_penalty(vec({1, 1, 1, 1}), vec({6, 8, 10, 12}), 10, p);
  expect_close(r.rewards, vec({1, 0.75f, 0.5f, 0.5f}));
  EXPECT_NEAR(r.metrics.last("critic/overlong_penalized_ratio"), 0.75, 1e-9);
  OverlongParams off;
  expect_close(overlong_penalty(vec({100}), 10, off), vec({0}));
  p.buffer_len = 0;
  std::string msg = message_of([&] { overlong_penalty(vec({1}), 10, p); });
  EXPECT_NE(msg.find("overlong_reward.buffer_len"), std::string::npos);
}

TEST(RlRewardKl, EstimatorsByHand) {
  at::Tensor lp = vec({0.5f, -0.5f}), base = vec({0, 0});
  expect_close(compute_approx_kl(lp, base, {}, KlType::kl), vec({0.5f, -0.5f}));
  expect_close(compute_approx_kl(lp, base, {}, KlType::abs), vec({0.5f, 0.5f}));
  expect_close(compute_approx_kl(lp, base, {}, KlType::mse), vec({0.125f, 0.125f}));
  expect_close(compute_approx_kl(lp, base, {}, KlType::k3),
               vec({static_cast<float>(std::exp(-0.5) - 0.5), static_cast<float>(std::exp(0.5) - 1.5)}));
  expect_close(compute_approx_kl(vec({-20}), vec({0}), {}, KlType::k3), vec({10}));  // clamped
  expect_close(compute_approx_kl(lp, base, vec({1, 0}), KlType::abs), vec({0.5f, 0}));
  // full: KL(p || q) over the vocabulary.
  at::Tensor p = at::log(vec({0.5f, 0.5f})).view({1, 1, 2}), q = at::log(vec({0.25f, 0.75f})).view({1, 1, 2});
  EXPECT_NEAR(compute_approx_kl(p, q, {}, KlType::full).item<double>(),
              0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75), 1e-6);
  std::string msg = message_of([&] { compute_approx_kl(lp.view({1, 2}), base.view({1, 2}), {}, KlType::full); });
  EXPECT_NE(msg.find("[B, T, V]"), std::string::npos);
  EXPECT_THROW(parse_kl_type("k2"), Error);
  EXPECT_EQ(parse_kl_type("mse"), KlType::mse);
}

TEST(RlRewardKl, Controllers) {
  KlController fixed = KlController::from_config(0.2, std::nullopt, 10000);
  fixed.update(5.0, 64);
  EXPECT_DOUBLE_EQ(fixed.value(), 0.2);
  KlController ad = KlController::from_config(0.2, 0.1, 10);
  ad.update(0.25, 1);  // error clipped to +0.2
  EXPECT_NEAR(ad.value(), 0.2 * (1 + 0.2 * 1 / 10.0), 1e-12);
  ad.update(0.09, 5);  // error −0.1
  EXPECT_NEAR(ad.value(), 0.204 * (1 - 0.1 * 5 / 10.0), 1e-12);
}

TEST(RlRewardTokenReward, KlPenaltyMetricsAndClip) {
  TokenRewardInputs in;
  in.response_level_rewards = vec({2});
  in.attention_mask = rows({{1, 1, 1, 0}}).to(at::kLong);
  in.position_ids = at::clamp(in.attention_mask.cumsum(1) - 1, 0);
  in.response_mask = rows({{1, 1, 0}});
  in.old_log_probs = rows({{-1, -1, -1}});
  in.ref_log_probs = rows({{-1.5f, -1, -0.5f}});
  TokenRewardParams p;
  p.add_token_level_kl = true;
  KlController ctrl = KlController::fixed(0.1);
  TokenRewardResult r = compute_token_reward(in, p, ctrl);
  expect_close(r.kl, rows({{0.5f, 0, 0}}));
  expect_close(r.token_level_rewards, rows({{-0.05f, 2, 0}}));
  EXPECT_NEAR(r.metrics.last("critic/kl"), 0.25, 1e-7);
  EXPECT_NEAR(r.metrics.last("critic/kl_coef"), 0.1, 1e-12);
  p.reward_clip = 1.0;
  TokenRewardResult c = compute_token_reward(in, p, ctrl);
  expect_close(c.token_level_rewards, rows({{-0.05f, 1, 0}}));
  EXPECT_NEAR(c.metrics.last("critic/token_reward_clip_frac"), 1.0 / 3.0, 1e-9);
  // No reference: β is 0 and the KL is 0.
  in.ref_log_probs = at::Tensor();
  TokenRewardResult n = compute_token_reward(in, p, ctrl);
  EXPECT_DOUBLE_EQ(n.metrics.last("critic/kl_coef"), 0.0);
  expect_close(n.kl, rows({{0, 0, 0}}));
}

TEST(RlRewardTokenReward, ShapeMismatchNamesTensor) {
  TokenRewardInputs in;
  in.response_level_rewards = vec({2});
  in.attention_mask = rows({{1, 1, 1, 0}});
  in.position_ids = rows({{0, 1, 2, 2}});
  in.response_mask = rows({{1, 1}});
  in.old_log_probs = rows({{-1, -1, -1}});
  KlController ctrl = KlController::fixed(0.0);
  std::string msg = message_of([&] { compute_token_reward(in, {}, ctrl); });
  EXPECT_NE(msg.find("response_mask"), std::string::npos);
}

}  // namespace
}  // namespace roll::rl
