// Masked reductions, whitening and ROLL's segment-masked-mean vectors (tests/agentic/test_segment_masked_mean.py).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/rl/masked.h"

namespace roll::rl {
namespace {

at::Tensor row(std::vector<float> v) { return at::tensor(v).unsqueeze(0); }
at::Tensor rows(std::vector<std::vector<float>> v) {
  std::vector<at::Tensor> r;
  for (auto& x : v) r.push_back(at::tensor(x));
  return at::stack(r);
}
// fp32 masked means of ≤ 9 small values: exact sums, one rounding per division (≤ 4.8e-7) -> 1e-5.
void expect_close(const at::Tensor& got, const at::Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol, tol)) << got << "\nwant\n" << want;
}

TEST(RlMaskedSegmentMean, SingleSegment) {
  expect_close(segment_masked_mean(row({0, 0, 2, 4, 6, 0, 0}), row({0, 0, 1, 1, 1, 0, 0}).to(at::kLong)),
               row({0, 0, 4, 4, 4, 0, 0}));
}
TEST(RlMaskedSegmentMean, MultipleSegments) {
  expect_close(segment_masked_mean(row({0, 1, 2, 0, 3, 4, 5, 0}), row({0, 1, 1, 0, 1, 1, 1, 0}).to(at::kLong)),
               row({0, 1.5, 1.5, 0, 4, 4, 4, 0}));
}
TEST(RlMaskedSegmentMean, StartsWithOne) {
  expect_close(segment_masked_mean(row({2, 4, 0, 6, 0}), row({1, 1, 0, 1, 0})), row({3, 3, 0, 6, 0}));
}
TEST(RlMaskedSegmentMean, EndsWithOne) {
  expect_close(segment_masked_mean(row({0, 2, 4, 6}), row({0, 1, 1, 1})), row({0, 4, 4, 4}));
}
TEST(RlMaskedSegmentMean, AllOnesIsTheGlobalMean) {
  expect_close(segment_masked_mean(row({1, 2, 3}), row({1, 1, 1})), row({2, 2, 2}));
}
TEST(RlMaskedSegmentMean, AllZerosGiveZeros) {
  expect_close(segment_masked_mean(row({1, 2, 3}), row({0, 0, 0})), row({0, 0, 0}));
}
TEST(RlMaskedSegmentMean, SingleOneIsItself) {
  expect_close(segment_masked_mean(row({0, 0, 5, 0, 0}), row({0, 0, 1, 0, 0})), row({0, 0, 5, 0, 0}));
}
TEST(RlMaskedSegmentMean, ComplexPattern) {
  expect_close(segment_masked_mean(row({1, 2, 0, 0, 3, 4, 5, 0, 6}), row({1, 1, 0, 0, 1, 1, 1, 0, 1})),
               row({1.5, 1.5, 0, 0, 4, 4, 4, 0, 6}));
}
TEST(RlMaskedSegmentMean, BatchRowsAreIndependent) {
  expect_close(segment_masked_mean(rows({{0, 2, 4, 0}, {1, 3, 0, 5}}), rows({{0, 1, 1, 0}, {1, 1, 0, 1}})),
               rows({{0, 3, 3, 0}, {2, 2, 0, 5}}));
}
TEST(RlMaskedSegmentMean, SegmentsAreNotMultiplied) {
  at::Tensor r = segment_masked_mean(row({1, 1, 0, 10, 10}), row({1, 1, 0, 1, 1}));
  EXPECT_FLOAT_EQ(r[0][0].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(r[0][1].item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(r[0][3].item<float>(), 10.0f);
  EXPECT_FLOAT_EQ(r[0][4].item<float>(), 10.0f);
}
TEST(RlMaskedSegmentMean, GradientFlowsPerSegment) {
  at::Tensor x = row({1, 2, 0, 3}).clone().set_requires_grad(true);
  segment_masked_mean(x, row({1, 1, 0, 1})).sum().backward();
  // Segment 1 has two tokens (each output depends on both: 2 outputs × 1/2), segment 2 one.
  expect_close(x.grad(), row({1, 1, 0, 1}));
}
TEST(RlMaskedSegmentMean, ShapeMismatchNamesTensors) {
  try {
    segment_masked_mean(row({1, 2}), row({1, 1, 1}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mask"), std::string::npos);
  }
}

TEST(RlMaskedReductions, MeanSumRowsWithEmptyRow) {
  at::Tensor x = rows({{1, 2, 3}, {4, 5, 6}});
  at::Tensor m = rows({{1, 1, 0}, {0, 0, 0}});
  expect_close(masked_mean_rows(x, m), at::tensor(std::vector<float>{1.5f, 0.f}));
  expect_close(masked_sum_rows(x, m), at::tensor(std::vector<float>{3.f, 0.f}));
  EXPECT_NEAR(masked_mean(x, m).item<double>(), 1.5, 1e-6);
  EXPECT_NEAR(masked_mean(x, at::zeros_like(m)).item<double>(), 0.0, 1e-12);
}

TEST(RlMaskedWhiten, MatchesHandComputation) {
  // values 1, 3 under the mask: mean 2, unbiased var 2 -> (x − 2)/sqrt(2).
  at::Tensor w = masked_whiten(row({1, 3, 0}), row({1, 1, 0}));
  expect_close(w, row({-0.70710677f, 0.70710677f, -1.41421354f}));
  at::Tensor keep = masked_whiten(row({1, 3, 0}), row({1, 1, 0}), /*shift_mean=*/false);
  expect_close(keep, row({1.29289323f, 2.70710677f, 0.58578646f}));
}

TEST(RlMaskedWhiten, OneOrZeroTokensIsAnError) {
  EXPECT_THROW(masked_whiten(row({1, 3, 0}), row({0, 1, 0})), Error);
  EXPECT_THROW(masked_whiten(row({1, 3, 0}), row({0, 0, 0})), Error);
  EXPECT_NO_THROW(masked_var(row({1, 3, 0}), row({0, 1, 0}), /*unbiased=*/false));
}

TEST(RlMaskedClipFraction, CountsAllEntries) {
  EXPECT_DOUBLE_EQ(clip_fraction(rows({{3, -3, 0}, {0.5, 0, 0}}), -1, 1), 2.0 / 6.0);
  EXPECT_DOUBLE_EQ(clip_fraction(at::zeros({0}), -1, 1), 0.0);
}

}  // namespace
}  // namespace roll::rl
