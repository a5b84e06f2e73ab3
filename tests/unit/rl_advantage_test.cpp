// Advantage estimators (docs/rl.md): ROLL's test vectors (test_compute_advantage.py, test_functionals.py GAE),
// hand-derived cases per estimator, and properties (GRPO zero mean per group, RLOO baseline).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/rl/advantage.h"
#include "roll/rl/reward.h"

namespace roll::rl {
namespace {

at::Tensor vec(std::vector<float> v) { return at::tensor(v); }
at::Tensor rows(std::vector<std::vector<float>> v) {
  std::vector<at::Tensor> r;
  for (auto& x : v) r.push_back(at::tensor(x));
  return at::stack(r);
}
AdvantageInputs inputs(at::Tensor rewards, at::Tensor mask, at::Tensor values = {}) {
  AdvantageInputs in;
  in.token_level_rewards = rewards;
  in.mask = mask;
  in.values = values;
  return in;
}
// fp32 returns/whitening over ≤ 64 O(1) values against hand values: ~sqrt(64)·eps·|x| ≲ 3e-6 -> 1e-5.
void expect_close(const at::Tensor& got, const at::Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol)) << got << "\nwant\n" << want;
}

AdvantageResult reinforce_whitened(std::vector<float> mask) {
  AdvantageParams p;
  p.estimator = AdvEstimator::reinforce;
  p.gamma = 0.0;
  p.whiten_rewards = p.whiten_advantages = true;
  return compute_advantage(inputs(rows({{1, 3, 0}}), rows({mask})), p);
}

// ROLL tests/utils/test_compute_advantage.py (compute_advantage and agentic_compute_advantage share
// this function in rollcpp).
TEST(RlAdvantageSpecVector, WhitenBothTwoTokens) {
  AdvantageResult r = reinforce_whitened({1, 1, 0});
  expect_close(r.advantages, rows({{-0.70710677f, 0.70710677f, 0.f}}));
  EXPECT_TRUE(at::isfinite(r.advantages).all().item<bool>());
  EXPECT_FALSE(r.whitening_skipped);
}
TEST(RlAdvantageSpecVector, SingleTokenSkipsWhitening) {
  AdvantageResult r = reinforce_whitened({0, 1, 0});
  expect_close(r.advantages, rows({{0, 3, 0}}));
  EXPECT_TRUE(r.whitening_skipped);
}
TEST(RlAdvantageSpecVector, AllMaskedGivesZeros) {
  AdvantageResult r = reinforce_whitened({0, 0, 0});
  expect_close(r.advantages, rows({{0, 0, 0}}));
  EXPECT_TRUE(at::isfinite(r.advantages).all().item<bool>());
}

// ROLL tests/utils/test_functionals.py: values are masked before the GAE bootstrap.
TEST(RlAdvantageGae, MasksValuesBeforeBootstrap) {
  AdvantageParams p;
  p.estimator = AdvEstimator::gae;
  p.gamma = 1.0;
  p.lambd = 0.95;
  AdvantageInputs in = inputs(rows({{0, 1, 0}}), rows({{1, 1, 0}}), rows({{0, 0, 100}}));
  AdvantageResult r = compute_advantage(in, p);
  expect_close(r.values, rows({{0, 0, 0}}));
  expect_close(r.advantages, rows({{0.95f, 1.0f, 0.f}}));
  expect_close(r.returns, rows({{0.95f, 1.0f, 0.f}}));
}

TEST(RlAdvantageGae, HandDerivedDiscounting) {
  auto [A, ret] = gae_advantage_return(rows({{0, 0, 1}}), rows({{0.5f, 0.2f, 0.1f}}), 0.9, 0.8);
  expect_close(A, rows({{0.06736f, 0.538f, 0.9f}}));
  expect_close(ret, rows({{0.56736f, 0.738f, 1.0f}}));
}

TEST(RlAdvantageGae, NeedsValues) {
  AdvantageParams p;
  p.estimator = AdvEstimator::gae;
  EXPECT_THROW(compute_advantage(inputs(rows({{1, 0}}), rows({{1, 1}})), p), Error);
}

TEST(RlAdvantageReinforce, DiscountedReturn) {
  expect_close(discounted_return(rows({{1, 2, 4}}), 0.5), rows({{3, 4, 4}}));
  AdvantageParams p;
  p.estimator = AdvEstimator::reinforce;
  p.gamma = 1.0;
  AdvantageResult r = compute_advantage(inputs(rows({{0, 0, 2, 0}}), rows({{1, 1, 1, 0}})), p);
  expect_close(r.advantages, rows({{2, 2, 2, 0}}));
  expect_close(r.returns, r.raw_advantages);
}

TEST(RlAdvantageReinforce, GrpoGigpoStepReinforceRlooShareTheReturn) {
  for (AdvEstimator e : {AdvEstimator::grpo, AdvEstimator::gigpo, AdvEstimator::step_reinforce, AdvEstimator::rloo}) {
    AdvantageParams p;
    p.estimator = e;
    p.gamma = 0.5;
    AdvantageResult r = compute_advantage(inputs(rows({{1, 2, 4}}), rows({{1, 1, 1}})), p);
    expect_close(r.advantages, rows({{3, 4, 4}}));
  }
}

TEST(RlAdvantageAgenticReinforce, PerTurnReturns) {
  expect_close(segment_discounted_return(rows({{0, 1, 0, 0, 2, 0}}), rows({{1, 1, 0, 1, 1, 0}}), 0.5),
               rows({{2, 2, 0, 2, 2, 0}}));
  AdvantageParams p;
  p.estimator = AdvEstimator::agentic_reinforce;
  p.gamma = 0.9;
  AdvantageResult r = compute_advantage(inputs(rows({{0, 0.5f, 0, 0, 1}}), rows({{1, 1, 0, 1, 1}})), p);
  expect_close(r.advantages, rows({{1.4f, 1.4f, 0, 1, 1}}));
}

TEST(RlAdvantageClip, FractionOverAllEntries) {
  AdvantageParams p;
  p.estimator = AdvEstimator::reinforce;
  p.gamma = 0.0;
  p.advantage_clip = 1.0;
  AdvantageResult r = compute_advantage(inputs(rows({{3, -3, 0}, {0.5f, 0, 0}}), rows({{1, 1, 0}, {1, 0, 0}})), p);
  EXPECT_DOUBLE_EQ(r.metrics.last("critic/advantage_clip_frac"), 2.0 / 6.0);
  expect_close(r.advantages, rows({{1, -1, 0}, {0.5f, 0, 0}}));
}

TEST(RlAdvantageMasking, AllMaskedRowAndSingleTokenRows) {
  AdvantageParams p;
  p.estimator = AdvEstimator::reinforce;
  p.whiten_advantages = true;
  at::Tensor R = rows({{0, 0, 1}, {0, 2, 0}, {5, 5, 5}});
  at::Tensor M = rows({{0, 0, 1}, {0, 1, 0}, {0, 0, 0}});
  AdvantageResult r = compute_advantage(inputs(R, M), p);
  // Two masked tokens in all: returns 1 and 2 whiten to -/+ 1/sqrt(2); the masked row stays 0.
  expect_close(r.advantages, rows({{0, 0, -0.70710677f}, {0, 0.70710677f, 0}, {0, 0, 0}}));
}

TEST(RlAdvantageOpd, MixedSubtractsAndPureReplaces) {
  AdvantageParams p;
  p.estimator = AdvEstimator::reinforce;
  AdvantageInputs in = inputs(rows({{0, 1}}), rows({{1, 1}}));
  in.opd_penalty = rows({{0.25f, 0.5f}});
  AdvantageResult mixed = compute_advantage(in, p);
  expect_close(mixed.raw_advantages, rows({{1, 1}}));
  expect_close(mixed.advantages, rows({{0.75f, 0.5f}}));
  in.pure_opd = true;
  AdvantageResult pure = compute_advantage(in, p);
  expect_close(pure.advantages, rows({{-0.25f, -0.5f}}));
  expect_close(pure.returns, rows({{-0.25f, -0.5f}}));
}

TEST(RlAdvantageErrors, ShapesAndNaN) {
  AdvantageParams p;
  p.estimator = AdvEstimator::reinforce;
  try {
    compute_advantage(inputs(rows({{1, 2, 3}}), rows({{1, 1}})), p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mask"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("token_level_rewards"), std::string::npos);
  }
  try {
    compute_advantage(inputs(rows({{1, NAN}}), rows({{1, 1}})), p);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token_level_rewards"), std::string::npos);
  }
  EXPECT_THROW(parse_adv_estimator("ppo"), Error);
  EXPECT_EQ(parse_adv_estimator("agentic_reinforce"), AdvEstimator::agentic_reinforce);
  EXPECT_EQ(parse_adv_estimator("rloo"), AdvEstimator::rloo);
}

// Response-level GRPO rewards -> token rewards on the last token -> advantages (γ = 1): every token of a
// response carries its normalised reward, so advantages have zero mean within each prompt group.
TEST(RlAdvantageProperty, GrpoZeroMeanPerGroup) {
  at::manual_seed(3);
  const int64_t G = 16, n = 4, T = 7;
  for (int trial = 0; trial < 5; ++trial) {
    at::Tensor r = at::randn({G * n});
    RewardPostprocessParams rp;
    rp.adv_estimator = AdvEstimator::grpo;
    rp.num_return_sequences = n;
    at::Tensor norm = reward_postprocess(r, rp).rewards;
    at::Tensor len = at::randint(1, T + 1, {G * n});
    at::Tensor pos = at::arange(T).unsqueeze(0);
    at::Tensor M = (pos < len.unsqueeze(1)).to(at::kFloat);
    at::Tensor R = at::zeros({G * n, T});
    R.scatter_(1, (len - 1).unsqueeze(1), norm.unsqueeze(1));
    AdvantageParams p;
    p.estimator = AdvEstimator::grpo;
    at::Tensor A = compute_advantage(inputs(R, M), p).advantages;
    at::Tensor first = A.select(1, 0).reshape({G, n});
    EXPECT_LT(first.mean(1).abs().max().item<double>(), 1e-5);
    EXPECT_LT((norm.reshape({G, n}).mean(1)).abs().max().item<double>(), 1e-5);
  }
}

TEST(RlAdvantageProperty, GrpoEqualRewardsAndSingleSampleGroupsGiveZero) {
  RewardPostprocessParams rp;
  rp.adv_estimator = AdvEstimator::grpo;
  rp.num_return_sequences = 3;
  at::Tensor eq = reward_postprocess(vec({1, 1, 1, 0, 0, 0}), rp).rewards;
  expect_close(eq, vec({0, 0, 0, 0, 0, 0}));
  rp.num_return_sequences = 1;  // n = 1: ROLL divides 0 by NaN; rollcpp gives 0
  at::Tensor one = reward_postprocess(vec({1, 0, 3}), rp).rewards;
  EXPECT_TRUE(at::isfinite(one).all().item<bool>());
  expect_close(one, vec({0, 0, 0}));
}

TEST(RlAdvantageProperty, RlooBaselineExcludesTheSampleItself) {
  at::manual_seed(11);
  const int64_t n = 5;
  at::Tensor r = at::randn({4 * n});
  at::Tensor adj = leave_one_out_baseline(r, n);
  at::Tensor baseline = r - adj;
  for (int64_t i = 0; i < 4 * n; ++i) {
    at::Tensor r2 = r.clone();
    r2[i] += 10.0f;  // moving sample i must not move its own baseline ...
    at::Tensor b2 = r2 - leave_one_out_baseline(r2, n);
    EXPECT_NEAR(b2[i].item<double>(), baseline[i].item<double>(), 1e-5);
    // ... but moves the baseline of every other sample of its group by 10/(n-1).
    int64_t j = (i / n) * n + (i % n + 1) % n;
    EXPECT_NEAR(b2[j].item<double>() - baseline[j].item<double>(), 10.0 / (n - 1), 1e-4);
    // and the baseline is the mean of the others.
    double others = (r.reshape({4, n})[i / n].sum().item<double>() - r[i].item<double>()) / (n - 1);
    EXPECT_NEAR(baseline[i].item<double>(), others, 1e-5);
  }
}

}  // namespace
}  // namespace roll::rl
