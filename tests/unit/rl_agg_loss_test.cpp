// Loss aggregation (docs/rl.md): the four modes by hand, global normalisers, weights, all-masked rows,
// the token-mean == seq-mean-token-mean property, and the loss scale that makes DP × GA accumulation
// equal to the full-batch gradient (ROLL test_grad_accumulation_scaling).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/rl/agg_loss.h"

namespace roll::rl {
namespace {

at::Tensor rows(std::vector<std::vector<float>> v) {
  std::vector<at::Tensor> r;
  for (auto& x : v) r.push_back(at::tensor(x));
  return at::stack(r);
}
double agg(const at::Tensor& L, const at::Tensor& M, const char* mode, AggNorm n = {}, at::Tensor w = {}) {
  return agg_loss(L, M, parse_loss_agg_mode(mode), n, w).item<double>();
}

// Sums of ≤ 6 small integers in fp32 are exact; the divisions round once at |x| ≤ 8 (ulp 4.8e-7) -> 1e-6.
TEST(RlAggLossModes, HandValues) {
  at::Tensor L = rows({{1, 2, 3}, {4, 5, 0}});
  at::Tensor M = rows({{1, 1, 1}, {1, 1, 0}});
  EXPECT_NEAR(agg(L, M, "token-mean"), 15.0 / 5.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum"), (6.0 + 9.0) / 2.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-mean"), (2.0 + 4.5) / 2.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum-norm"), (6.0 + 9.0) / 3.0, 1e-6);
}

TEST(RlAggLossModes, GlobalNormalisersAndWeights) {
  at::Tensor L = rows({{1, 2, 3}, {4, 5, 0}});
  at::Tensor M = rows({{1, 1, 1}, {1, 1, 0}});
  EXPECT_NEAR(agg(L, M, "token-mean", {10.0, std::nullopt}), 1.5, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum", {std::nullopt, 4.0}), 15.0 / 4.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-mean", {std::nullopt, 4.0}), 6.5 / 4.0, 1e-6);
  at::Tensor w = at::tensor(std::vector<float>{2, 0});
  EXPECT_NEAR(agg(L, M, "token-mean", {}, w), 12.0 / 5.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-mean", {}, w), 4.0 / 2.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum-norm", {}, w), 12.0 / 3.0, 1e-6);
}

TEST(RlAggLossModes, AllMaskedRow) {
  at::Tensor L = rows({{1, 2, 3}, {4, 5, 6}});
  at::Tensor M = rows({{1, 1, 1}, {0, 0, 0}});
  // token-mean does not mask: ROLL assumes a pre-masked loss (policy_loss multiplies by the mask first).
  EXPECT_NEAR(agg(L, M, "token-mean"), 21.0 / 3.0, 1e-6);
  EXPECT_NEAR(agg(L * M, M, "token-mean"), 6.0 / 3.0, 1e-6);
  // The masked row has v_b = 0; G defaults to the number of rows.
  EXPECT_NEAR(agg(L, M, "seq-mean-token-mean"), 2.0 / 2.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-mean", {std::nullopt, 1.0}), 2.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum"), 6.0 / 2.0, 1e-6);
  AggNorm n = local_agg_norm(M);
  EXPECT_DOUBLE_EQ(*n.num_tokens, 3.0);
  EXPECT_DOUBLE_EQ(*n.num_valid_samples, 1.0);
}

TEST(RlAggLossModes, SingleTokenResponses) {
  at::Tensor L = rows({{0, 2, 0}, {3, 0, 0}});
  at::Tensor M = rows({{0, 1, 0}, {1, 0, 0}});
  EXPECT_NEAR(agg(L, M, "token-mean"), 2.5, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-mean"), 2.5, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum"), 2.5, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum-norm"), 5.0 / 3.0, 1e-6);
}

TEST(RlAggLossModes, NamesAndErrors) {
  EXPECT_EQ(to_string(parse_loss_agg_mode("seq-mean-token-sum-norm")), "seq-mean-token-sum-norm");
  try {
    parse_loss_agg_mode("seq-mean");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'seq-mean'"), std::string::npos);
  }
  try {
    agg_loss(rows({{1, 2}}), rows({{1, 1, 1}}), LossAggMode::token_mean);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("loss_mask"), std::string::npos);
  }
}

TEST(RlAggLossProperty, TokenMeanEqualsSeqMeanTokenMeanForEqualLengths) {
  at::manual_seed(5);
  for (int trial = 0; trial < 20; ++trial) {
    int64_t B = 1 + trial % 7, T = 3 + trial % 5, len = 1 + trial % T;
    at::Tensor M = (at::arange(T) < len).to(at::kFloat).unsqueeze(0).expand({B, T}).contiguous();
    at::Tensor L = at::randn({B, T}) * M;
    // Two fp32 groupings of ≤ 49 N(0,1) terms: ~sqrt(49)·eps·|L|max(4) ≈ 3e-6 -> 1e-5.
    EXPECT_NEAR(agg(L, M, "token-mean"), agg(L, M, "seq-mean-token-mean"), 1e-5);
  }
}

TEST(RlAggLossDrGrpo, DivisorIsThePaddedLengthNotTheResponseLength) {
  at::Tensor M = rows({{1, 0, 0, 0}, {1, 1, 1, 1}});
  at::Tensor L = rows({{1, 0, 0, 0}, {1, 1, 1, 1}});
  EXPECT_NEAR(agg(L, M, "seq-mean-token-sum-norm"), (1.0 + 4.0) / 4.0, 1e-6);
  EXPECT_NEAR(agg(L, M, "seq-mean-token-mean"), 1.0, 1e-6);  // length-normalised for contrast
}

// One global loss split over dp ranks × GA micro-batches: each micro-batch loss uses the global
// normalisers, is scaled by loss_scale_factor and divided by the micro-batch count (the backend's
// accumulation), and the dp gradients are averaged: the result is the full-batch gradient.
void check_accumulation(LossAggMode mode) {
  at::manual_seed(9);
  const int64_t B = 8, T = 6, D = 3, dp = 2, ga = 2;
  at::Tensor x = at::randn({B, T, D});
  at::Tensor target = at::randn({B, T});
  at::Tensor len = at::tensor(std::vector<int64_t>{1, 6, 3, 2, 5, 4, 6, 1});
  at::Tensor M = (at::arange(T).unsqueeze(0) < len.unsqueeze(1)).to(at::kFloat);
  at::Tensor w0 = at::randn({D});
  auto loss_mat = [&](const at::Tensor& w, const at::Tensor& xs, const at::Tensor& ts, const at::Tensor& ms) {
    return ((xs.matmul(w) - ts).pow(2)) * ms;
  };
  AggNorm global = local_agg_norm(M);
  at::Tensor wf = w0.clone().set_requires_grad(true);
  agg_loss(loss_mat(wf, x, target, M), M, mode, global).backward();
  at::Tensor full = wf.grad().clone();

  const int64_t per_rank = B / dp, per_micro = per_rank / ga;
  at::Tensor avg = at::zeros({D});
  for (int64_t r = 0; r < dp; ++r) {
    at::Tensor w = w0.clone().set_requires_grad(true);
    for (int64_t g = 0; g < ga; ++g) {
      int64_t s = r * per_rank + g * per_micro;
      at::Tensor xs = x.narrow(0, s, per_micro), ts = target.narrow(0, s, per_micro), ms = M.narrow(0, s, per_micro);
      at::Tensor l = agg_loss(loss_mat(w, xs, ts, ms), ms, mode, global) * loss_scale_factor(ga, dp) / double(ga);
      l.backward();
    }
    avg += w.grad() / double(dp);
  }
  // fp32 sums of 48 O(1) token terms in other groupings: ~sqrt(48)·eps ≈ 1e-6 relative -> rtol 1e-5.
  EXPECT_TRUE(at::allclose(avg, full, 1e-5, 1e-6)) << avg << "\nfull\n" << full;
}

TEST(RlAggLossScale, AccumulatedGradEqualsFullBatchTokenMean) { check_accumulation(LossAggMode::token_mean); }
TEST(RlAggLossScale, AccumulatedGradEqualsFullBatchSeqMeanTokenMean) {
  check_accumulation(LossAggMode::seq_mean_token_mean);
}
TEST(RlAggLossScale, AccumulatedGradEqualsFullBatchSeqMeanTokenSum) {
  check_accumulation(LossAggMode::seq_mean_token_sum);
}
TEST(RlAggLossScale, Factor) {
  EXPECT_DOUBLE_EQ(loss_scale_factor(4, 2), 8.0);
  EXPECT_THROW(loss_scale_factor(0, 2), Error);
}

}  // namespace
}  // namespace roll::rl
