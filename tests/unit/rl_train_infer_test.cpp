// Train–infer mismatch ratios, IS weights and filters (docs/rl.md).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/core/error.h"
#include "roll/rl/train_infer.h"

namespace roll::rl {
namespace {

at::Tensor rows(std::vector<std::vector<float>> v) {
  std::vector<at::Tensor> r;
  for (auto& x : v) r.push_back(at::tensor(x));
  return at::stack(r);
}
// fp32 exp/log of |x| ≤ 1 and ≤ 8-term means of ratios ≤ 2: a few ulp (≲ 5e-7) -> 1e-6..1e-5.
void expect_close(const at::Tensor& got, const at::Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol)) << got << "\nwant\n" << want;
}

struct Fixture {
  at::Tensor old = at::log(rows({{0.5f, 0.5f, 0.5f}}));
  at::Tensor inf = at::log(rows({{0.25f, 0.5f, 0.5f}}));
  at::Tensor mask = rows({{1, 1, 0}});
};

TEST(RlTrainInferStats, FourGranularities) {
  Fixture f;
  MismatchStats s = mismatch_stats(f.old, f.inf, f.mask);
  float r2 = std::sqrt(2.f);
  expect_close(s.ratio[0], rows({{2, 1, 1}}));
  expect_close(s.ratio[1], rows({{r2, r2, r2}}));
  expect_close(s.ratio[2], rows({{2, 2, 2}}));
  expect_close(s.ratio[3], rows({{r2, r2, 1}}));
  expect_close(s.diff[0], rows({{0.25f, 0, 0}}));
  expect_close(s.diff[2], rows({{0.25f, 0.25f, 0.25f}}));
}

TEST(RlTrainInferCorrection, MetricsIsWeightAndFilter) {
  Fixture f;
  TrainInferParams p;
  p.is_weight.enabled = true;
  p.is_weight.upper_bound = 1.2;  // ROLL's defaults (config/rl_config.h)
  MismatchFilter ratio;
  ratio.enabled = true;
  ratio.ratio_enabled = true;
  ratio.ratio_low = 0.8;
  ratio.ratio_high = 1.2;
  p.filters.push_back(ratio);
  TrainInferResult r = train_infer_correction(f.mask, f.old, f.inf, p);
  EXPECT_NEAR(r.metrics.last("actor/train_infer_ratio_token_mean@sum"), 1.5, 1e-5);
  EXPECT_NEAR(r.metrics.last("actor/train_infer_ratio_sequence_mean@sum"), 2.0, 1e-5);
  EXPECT_NEAR(r.metrics.last("actor/train_infer_diff_token_mean@sum"), 0.125, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/train_infer_ratio_token_max@max"), 2.0, 1e-5);
  EXPECT_NEAR(r.metrics.last("actor/train_infer_ratio_token_min@min"), 1.0, 1e-5);
  // k3(ℓ_old, ℓ_inf) at token 0: e^{-ln 2} + ln 2 − 1.
  EXPECT_NEAR(r.metrics.last("actor/train_infer_kl@sum"), (0.5 + std::log(2.0) - 1.0) / 2.0, 1e-5);
  EXPECT_NEAR(r.metrics.last("actor/is_weight_clipfrac@sum"), 0.5, 1e-6);
  expect_close(r.is_weight, rows({{1.2f, 1, 1}}));
  expect_close(r.filter_mask, rows({{0, 1, 1}}));
  EXPECT_NEAR(r.metrics.last("actor/train_infer_token_ratio_mask_mean@sum"), 0.5, 1e-6);
  EXPECT_NEAR(r.metrics.last("actor/train_infer_final_mask_mean"), 0.5, 1e-6);
}

TEST(RlTrainInferCorrection, DiffFilterAndGlobalNormalisers) {
  Fixture f;
  TrainInferParams p;
  MismatchFilter diff;
  diff.enabled = true;
  diff.agg_type = parse_mismatch_granularity("sequence");
  diff.ratio_enabled = false;
  diff.diff_enabled = true;
  diff.diff_low = -0.2;
  diff.diff_high = 0.2;
  p.filters.push_back(diff);
  TrainInferResult r = train_infer_correction(f.mask, f.old, f.inf, p, AggNorm{4.0, 2.0});
  expect_close(r.filter_mask, rows({{0, 0, 0}}));  // sequence diff 0.25 > 0.2
  EXPECT_NEAR(r.metrics.last("actor/train_infer_sequence_diff_mask_mean@sum"), 0.0, 1e-9);
  EXPECT_NEAR(r.metrics.last("actor/train_infer_ratio_token_mean@sum"), 1.5 / 2.0, 1e-5);  // G = 2
  expect_close(r.is_weight, rows({{1, 1, 1}}));
  EXPECT_THROW(parse_mismatch_granularity("seq"), Error);
}

TEST(RlTrainInferCorrection, MissingInferLogprobsMeansNoMismatch) {
  Fixture f;
  TrainInferParams p;
  p.is_weight.enabled = true;
  p.is_weight.weight_type = MismatchGranularity::geometric;
  TrainInferResult r = train_infer_correction(f.mask, f.old, at::Tensor(), p);
  expect_close(r.is_weight, rows({{1, 1, 1}}));
  EXPECT_NEAR(r.metrics.last("actor/train_infer_ratio_geometric_mean@sum"), 1.0, 1e-6);
  EXPECT_THROW(train_infer_correction(rows({{1, 1}}), f.old, f.inf, p), Error);
}

}  // namespace
}  // namespace roll::rl
