// Actor policy losses (docs/rl.md): PPO clip by hand, asymmetric and dual clip, GSPO and segment
// ratios, every pg_variant with its knobs, KL/entropy/rl_loss_coef composition, sample weights, metrics,
// Dr.GRPO, and the autograd property that clipped tokens get no gradient.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/rl/policy_loss.h"
#include "roll/rl/reward.h"
#include "roll/workers/loss_params_from_config.h"

namespace roll::rl {
namespace {

at::Tensor vec(std::vector<float> v) { return at::tensor(v); }
at::Tensor rows(std::vector<std::vector<float>> v) {
  std::vector<at::Tensor> r;
  for (auto& x : v) r.push_back(at::tensor(x));
  return at::stack(r);
}
// Hand values against fp32 results of a few elementwise ops (exp/log ≤ 1 ulp on any CPU) and ≤ 9-term
// sums of |x| ≤ 3: a few roundings of ulp(3) = 2.4e-7 -> 1e-6 for scalars, 1e-5 for tensors.
void expect_close(const at::Tensor& got, const at::Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol)) << got << "\nwant\n" << want;
}

// The parameters an RLVR actor gets from a config that sets nothing: ROLL's defaults (pg_clip 0.2,
// tis [0, 1], cispo ε 0.1, kimi15 τ 0.1), taken from where they are kept.
PolicyLossParams roll_defaults() { return workers::policy_loss_params(config::PipelineConfig{}, config::WorkerConfig{}); }

// ℓ_old = 0 and ℓ = log ρ, so the ratio is exactly ρ.
PolicyLossInputs with_ratios(std::vector<std::vector<float>> ratio, std::vector<std::vector<float>> adv) {
  PolicyLossInputs in;
  in.log_probs = at::log(rows(ratio)).set_requires_grad(true);
  in.old_log_probs = at::zeros_like(in.log_probs);
  in.advantages = rows(adv);
  in.response_mask = at::ones_like(in.advantages);
  return in;
}

TEST(RlPolicyLossPpo, SymmetricClipByHand) {
  PolicyLossInputs in = with_ratios({{1.5f, 0.5f, 1.1f}}, {{1, 1, -1}});
  PolicyLossParams p = roll_defaults();
  PolicyLossResult r = policy_loss(in, p);
  // −min(ρA, clip(ρ)A) = [−1.2, −0.5, 1.1]; seq-mean-token-mean of one row.
  EXPECT_NEAR(r.pg_loss.item<double>(), (-1.2 - 0.5 + 1.1) / 3.0, 1e-6);
  EXPECT_NEAR(r.total_loss.item<double>(), r.pg_loss.item<double>(), 1e-7);
  EXPECT_NEAR(r.metrics.last("actor/ppo_ratio_high_clipfrac@sum"), 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/ppo_ratio_low_clipfrac@sum"), 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/ppo_ratio_clipfrac@sum"), 2.0 / 3.0, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/clipfrac@sum"), 1.0 / 3.0, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/ratio_max@max"), 1.5, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/ratio_min@min"), 0.5, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/ratio_mean@sum"), (1.5 + 0.5 + 1.1) / 3.0, 1e-6);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/total_samples@sum"), 1.0);
}

TEST(RlPolicyLossParams, NeutralUntilSetAndRollDefaultsFromTheConfig) {
  PolicyLossParams bare;  // no clip: ρ = 3 with A = 1 keeps its gradient and the clip fractions stay 0
  PolicyLossResult r = policy_loss(with_ratios({{3.0f}}, {{1.0f}}), bare);
  EXPECT_NEAR(r.pg_loss.item<double>(), -3.0, 1e-6);
  EXPECT_EQ(r.metrics.last("actor/ppo_ratio_clipfrac@sum"), 0.0);
  const PolicyLossParams d = roll_defaults();
  EXPECT_EQ(d.pg_clip, 0.2);
  EXPECT_EQ(d.pg_clip_low, 0.2);
  EXPECT_EQ(d.pg_clip_high, 0.2);
  EXPECT_EQ(d.tis_upper_bound, 1.0);
  EXPECT_EQ(d.cispo_epsilon_low, 0.1);
  EXPECT_EQ(d.kimi15_tau, 0.1);
  r = policy_loss(with_ratios({{3.0f}}, {{1.0f}}), d);  // clipped at 1.2
  EXPECT_NEAR(r.pg_loss.item<double>(), -1.2, 1e-6);
}

TEST(RlPolicyLossPpo, AsymmetricClipRange) {
  PolicyLossInputs in = with_ratios({{1.5f, 0.5f}}, {{1, -1}});
  PolicyLossParams p = roll_defaults();
  p.use_pg_clip_range = true;
  p.pg_clip_low = 0.2;
  p.pg_clip_high = 0.28;
  p.loss_agg_mode = LossAggMode::seq_mean_token_sum;
  // ρ=1.5,A=1 -> −1.28; ρ=0.5,A=−1: min(−0.5, −0.8) -> 0.8.
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), -1.28 + 0.8, 1e-6);
}

TEST(RlPolicyLossPpo, DualClipBoundsNegativeAdvantages) {
  PolicyLossInputs in = with_ratios({{3.0f}}, {{-1}});
  PolicyLossParams p = roll_defaults();
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), 3.0, 1e-6);
  p.dual_clip_loss = true;  // −max(−3, (1 + 2·0.2)·(−1)) = 1.4
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), 1.4, 1e-6);
  PolicyLossInputs pos = with_ratios({{3.0f}}, {{1}});
  EXPECT_NEAR(policy_loss(pos, p).pg_loss.item<double>(), -1.2, 1e-6);  // A > 0 untouched
}

TEST(RlPolicyLossRatio, SequenceGspoAndSegment) {
  at::Tensor lp = rows({{0.1f, 0.3f, 9.f, 0.5f}}), old = at::zeros_like(lp);
  at::Tensor m = rows({{1, 1, 0, 1}});
  float g = std::exp((0.1f + 0.3f + 0.5f) / 3.f);
  expect_close(policy_ratio(lp, old, m, RatioType::seq), rows({{g, g, g, g}}));
  expect_close(policy_ratio(lp, old, m, RatioType::segment),
               rows({{std::exp(0.2f), std::exp(0.2f), 1.f, std::exp(0.5f)}}));
  expect_close(policy_ratio(lp, old, m, RatioType::token), at::exp(lp));
  EXPECT_EQ(parse_importance_sampling("seq"), RatioType::seq);
  EXPECT_EQ(parse_ratio_type("segment"), RatioType::segment);
  EXPECT_THROW(parse_importance_sampling("segment"), Error);
}

TEST(RlPolicyLossRatio, GspoLossUsesTheSequenceRatio) {
  PolicyLossInputs in;
  in.log_probs = rows({{0.3f, -0.1f}}).set_requires_grad(true);
  in.old_log_probs = at::zeros({1, 2});
  in.advantages = rows({{1, 1}});
  in.response_mask = rows({{1, 1}});
  PolicyLossParams p = roll_defaults();
  p.ratio_type = RatioType::seq;
  double rho = std::exp(0.1);  // within [0.8, 1.2]
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), -rho, 1e-6);
}

// The gradient of −min(ρA, clip(ρ)A) vanishes exactly where the clipped branch is active.
TEST(RlPolicyLossProperty, NoGradientWhereClipped) {
  at::manual_seed(17);
  for (int trial = 0; trial < 10; ++trial) {
    const int64_t B = 6, T = 9;
    at::Tensor lp = (at::randn({B, T}) * 0.4).set_requires_grad(true);
    at::Tensor old = at::zeros({B, T});
    at::Tensor A = at::randn({B, T});
    PolicyLossInputs in;
    in.log_probs = lp;
    in.old_log_probs = old;
    in.advantages = A;
    in.response_mask = at::ones({B, T});
    PolicyLossParams p = roll_defaults();
    p.loss_agg_mode = trial % 2 ? LossAggMode::token_mean : LossAggMode::seq_mean_token_sum;
    policy_loss(in, p).total_loss.backward();
    at::Tensor rho = lp.detach().exp();
    at::Tensor clipped = at::logical_or(at::logical_and(A > 0, rho > 1.2), at::logical_and(A < 0, rho < 0.8));
    at::Tensor g = lp.grad();
    EXPECT_EQ(g.masked_select(clipped).abs().max().item<float>(), 0.0f);
    EXPECT_TRUE((g.masked_select(at::logical_not(clipped)).abs() > 0).all().item<bool>());
    ASSERT_GT(clipped.sum().item<int64_t>(), 0);
  }
}

TEST(RlPolicyLossComposition, KlLossEntropyAndRlLossCoef) {
  PolicyLossInputs in;
  in.log_probs = at::full({1, 2}, std::log(0.5)).set_requires_grad(true);
  in.old_log_probs = in.log_probs.detach().clone();
  in.ref_log_probs = at::full({1, 2}, std::log(0.25));
  in.advantages = rows({{1, 1}});
  in.response_mask = rows({{1, 1}});
  in.entropy = rows({{0.5f, 1.5f}});
  PolicyLossParams p = roll_defaults();
  p.use_kl_loss = true;
  p.kl_loss_coef = 0.1;
  p.rl_loss_coef = 2.0;
  p.entropy_loss_coef = 0.01;
  PolicyLossResult r = policy_loss(in, p);
  double k3 = 0.5 + std::log(2.0) - 1.0;
  EXPECT_NEAR(r.kl_loss.item<double>(), k3, 1e-6);
  EXPECT_NEAR(r.pg_loss.item<double>(), -1.0, 1e-6);
  EXPECT_NEAR(r.entropy_loss.item<double>(), 1.0, 1e-6);
  EXPECT_NEAR(r.total_loss.item<double>(), (-1.0 + 0.1 * k3) * 2.0 - 0.01 * 1.0, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/kl_loss@sum"), k3, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/total_loss@sum"), r.total_loss.item<double>(), 1e-6);
  p.use_kl_loss = false;  // kl_loss still reported, not added
  EXPECT_NEAR(policy_loss(in, p).total_loss.item<double>(), -2.0 - 0.01, 1e-6);
}

TEST(RlPolicyLossComposition, IsWeightMultipliesTheTokenLoss) {
  PolicyLossInputs in = with_ratios({{1.0f, 1.0f}}, {{1, 2}});
  PolicyLossParams p = roll_defaults();
  double base = policy_loss(in, p).pg_loss.item<double>();
  in.is_weight = rows({{2, 1}});
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), (-2.0 - 2.0) / 2.0, 1e-6);
  EXPECT_NEAR(base, -1.5, 1e-6);
}

TEST(RlPolicyLossComposition, FinalMaskAndSampleWeights) {
  PolicyLossInputs in = with_ratios({{1, 1}, {1, 1}, {1, 1}}, {{1, 1}, {2, 2}, {4, 4}});
  in.final_response_mask = rows({{1, 1}, {1, 0}, {0, 0}});  // row 2 masked out entirely
  in.sample_weights = vec({2, 1, 0});
  PolicyLossParams p = roll_defaults();
  PolicyLossResult r = policy_loss(in, p);
  // seq-mean-token-mean, G = 3 rows: (−1 + −2 + 0)/3 and weighted (−2 − 2)/3.
  EXPECT_NEAR(r.pg_loss.item<double>(), -1.0, 1e-6);
  EXPECT_NEAR(r.weighted_pg_loss.item<double>(), -4.0 / 3.0, 1e-6);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/valid_samples@sum"), 2.0);
  EXPECT_NEAR(r.metrics.last("actor/valid_sample_ratio@sum"), 2.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/sample_weights_max@max"), 2.0);
  // token-mean with filtered tokens: the loss is masked by fm before aggregation.
  p.loss_agg_mode = LossAggMode::token_mean;
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), (-1 - 1 - 2) / 3.0, 1e-6);
}

TEST(RlPolicyLossSampleWeights, DifficultyAndLength) {
  at::Tensor m = at::ones({4, 3});
  at::Tensor w = compute_sample_weights(m, vec({0, 1, 0.5f, 2}), true, false);
  expect_close(w, vec({0.5f, 2, 1.25f, 2}) * (4.0 / 5.75));
  EXPECT_NEAR(w.sum().item<double>(), 4.0, 1e-5);
  at::Tensor lm = rows({{1, 0, 0}, {1, 1, 0}, {1, 1, 1}});
  expect_close(compute_sample_weights(lm, {}, false, true), vec({1.5f, 1.0f, 0.5f}));
  expect_close(compute_sample_weights(lm, vec({1, 1, 1}), false, false), vec({1, 1, 1}));
}

TEST(RlPolicyLossVariants, VanillaTisAndTheirKnobs) {
  PolicyLossInputs in = with_ratios({{2.0f, 0.5f}}, {{1, 1}});
  PolicyLossParams p = roll_defaults();
  p.loss_agg_mode = LossAggMode::seq_mean_token_sum;
  p.pg_variant = PgVariant::vanilla;
  double lp0 = std::log(2.0), lp1 = std::log(0.5);
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), -(lp0 + lp1), 1e-6);
  p.pg_variant = PgVariant::tis;  // ratio clipped to [0, 1]
  PolicyLossResult t = policy_loss(in, p);
  EXPECT_NEAR(t.pg_loss.item<double>(), -(1.0 * lp0 + 0.5 * lp1), 1e-6);
  EXPECT_NEAR(t.metrics.last("actor/tis_upper_clipfrac@sum"), 0.5, 1e-9);
  p.tis_upper_bound = 1.5;  // read, not dropped
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), -(1.5 * lp0 + 0.5 * lp1), 1e-6);
  EXPECT_DOUBLE_EQ(policy_loss(in, p).metrics.last("actor/tis_upper_bound"), 1.5);
}

TEST(RlPolicyLossVariants, RatioTypeAppliesToEveryVariant) {
  PolicyLossInputs in = with_ratios({{2.0f, 0.5f}}, {{0, 1}});
  PolicyLossParams p = roll_defaults();
  p.pg_variant = PgVariant::tis;
  p.loss_agg_mode = LossAggMode::seq_mean_token_sum;
  double l = std::log(2.0);
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), 0.5 * l, 1e-6);  // token ratio 0.5 at token 1
  p.ratio_type = RatioType::segment;  // one turn: mean log-ratio 0, ratio 1
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), l, 1e-6);
}

TEST(RlPolicyLossVariants, ToprSplitsBySign) {
  PolicyLossInputs in = with_ratios({{2.0f}, {2.0f}}, {{1}, {-1}});
  in.scores = vec({1, 0});
  PolicyLossParams p = roll_defaults();
  p.pg_variant = PgVariant::topr;
  p.loss_agg_mode = LossAggMode::seq_mean_token_sum;
  p.topr_negative_weight = 0.5;
  double l = std::log(2.0);
  // positive: −A·ℓ; negative: −clip(ρ,0,1)·A·ℓ·w⁻ = +0.5·ℓ.
  PolicyLossResult r = policy_loss(in, p);
  EXPECT_NEAR(r.pg_loss.item<double>(), (-l + 0.5 * l) / 2.0, 1e-6);
  EXPECT_DOUBLE_EQ(r.metrics.last("actor/topr_positive_samples"), 1.0);
  in.scores = at::Tensor();
  EXPECT_THROW(policy_loss(in, p), Error);
}

TEST(RlPolicyLossVariants, CispoAndUnifiedMask) {
  PolicyLossInputs in = with_ratios({{1.5f, 0.5f, 1.05f}}, {{1, -1, 1}});
  PolicyLossParams p = roll_defaults();
  p.pg_variant = PgVariant::cispo;
  p.loss_agg_mode = LossAggMode::seq_mean_token_sum;
  double l0 = std::log(1.5), l1 = std::log(0.5), l2 = std::log(1.05);
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), -(1.1 * l0) + 0.9 * l1 - 1.05 * l2, 1e-6);
  p.cispo_use_unified_mask = true;  // drops token 0 (A>0, ρ>1.1) and token 1 (A<0, ρ<0.9)
  PolicyLossResult r = policy_loss(in, p);
  EXPECT_NEAR(r.pg_loss.item<double>(), -1.05 * l2, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/cispo_kept_tokens"), 1.0 / 3.0, 1e-6);
  p.cispo_use_unified_mask = false;
  p.cispo_epsilon_high = 0.6;  // read, not dropped
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), -(1.5 * l0) + 0.9 * l1 - 1.05 * l2, 1e-6);
}

TEST(RlPolicyLossVariants, Kimi15Tau) {
  PolicyLossInputs in;
  in.log_probs = rows({{-0.5f}}).set_requires_grad(true);
  in.old_log_probs = rows({{-1.0f}});
  in.advantages = rows({{2}});
  in.response_mask = rows({{1}});
  PolicyLossParams p = roll_defaults();
  p.pg_variant = PgVariant::kimi15;
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), -2 * -0.5 + 0.1 / 2 * 0.25, 1e-6);
  p.kimi15_tau = 1.0;
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), 1.0 + 0.5 * 0.25, 1e-6);
  EXPECT_EQ(parse_pg_variant("kimi15"), PgVariant::kimi15);
  EXPECT_THROW(parse_pg_variant("grpo"), Error);
}

// Dr.GRPO = group mean without std (norm_std_type: ~) + seq-mean-token-sum-norm.
TEST(RlPolicyLossDrGrpo, NoStdNoLengthNormalisation) {
  RewardPostprocessParams rp;
  rp.adv_estimator = AdvEstimator::reinforce;
  rp.norm_mean_type = NormType::group;
  rp.norm_std_type = NormType::none;
  rp.num_return_sequences = 2;
  at::Tensor r = reward_postprocess(vec({1, 0, 0, 1}), rp).rewards;
  expect_close(r, vec({0.5f, -0.5f, -0.5f, 0.5f}));
  at::Tensor M = rows({{1, 0, 0, 0}, {1, 1, 1, 1}, {1, 1, 0, 0}, {1, 1, 1, 0}});
  PolicyLossInputs in;
  in.log_probs = at::zeros({4, 4}).set_requires_grad(true);
  in.advantages = r.unsqueeze(1) * M;
  in.response_mask = M;
  PolicyLossParams p = roll_defaults();
  p.loss_agg_mode = parse_loss_agg_mode("seq-mean-token-sum-norm");
  // ratio 1: L = −A per token; Σ_b Σ_t L / T with T = 4.
  double want = -(0.5 * 1 - 0.5 * 4 - 0.5 * 2 + 0.5 * 3) / 4.0;
  EXPECT_NEAR(policy_loss(in, p).pg_loss.item<double>(), want, 1e-6);
}

TEST(RlPolicyLossErrors, NamesTheTensor) {
  PolicyLossInputs in = with_ratios({{1, 1}}, {{1, 1}});
  in.advantages = rows({{1, 1, 1}});
  try {
    policy_loss(in, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("advantages"), std::string::npos);
  }
  PolicyLossInputs k = with_ratios({{1, 1}}, {{1, 1}});
  PolicyLossParams p = roll_defaults();
  p.use_kl_loss = true;
  EXPECT_THROW(policy_loss(k, p), Error);
  p.use_kl_loss = false;
  p.entropy_loss_coef = 0.1;
  EXPECT_THROW(policy_loss(k, p), Error);
}

}  // namespace
}  // namespace roll::rl
