// The pipeline's batch-level train-infer correction (pipeline/train_infer_step.h): with recomputed
// old log-probs it reports actor/train_infer_*, stores the clamped IS weights and applies the
// filters to both masks; without recompute it does nothing. Expected values from the formulas
// (ratio = exp(old - infer) per token), not from rl/.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/pipeline/train_infer_step.h"

using namespace roll;

namespace {

// Two samples of 4 columns after the first token; sample 0 has 3 response tokens, sample 1 has 2.
Batch mismatch_batch() {
  Batch b;
  b.set_tensor("response_mask", at::tensor({0, 1, 1, 1, 0, 0, 0, 1, 1, 0}, at::kLong).view({2, 5}));
  b.set_tensor("final_response_mask", at::tensor({1, 1, 1, 0, 0, 1, 1, 0}, at::kFloat).view({2, 4}));
  b.set_tensor("old_log_probs", at::tensor({-1.0, -1.0, -2.0, 0.0, 0.0, -1.0, -0.5, 0.0}, at::kFloat).view({2, 4}));
  // log ratios old - infer: sample 0: 0, 0.5, -0.1; sample 1: 0.05, 1.0
  b.set_tensor("infer_logprobs", at::tensor({-1.0, -1.5, -1.9, 0.0, 0.0, -1.05, -1.5, 0.0}, at::kFloat).view({2, 4}));
  return b;
}

}  // namespace

TEST(PipelineTrainInferStep, ClampsIsWeightsFiltersBothMasksAndReports) {
  config::PipelineConfig c;
  c.enable_old_logprobs_recompute = true;
  c.train_infer_correction.is_weight.enabled = true;
  c.train_infer_correction.is_weight.upper_bound = 1.5;
  config::TrainInferFilterConfig f;
  f.enabled = true;
  f.ratio_low = 0.8;
  f.ratio_high = 1.2;
  c.train_infer_correction.filters.push_back(f);
  Batch b = mismatch_batch();
  const auto m = pipeline::apply_train_infer_correction(c, b);

  const at::Tensor w = b.tensor("train_infer_is_weight");
  // exp(0.5) and exp(1) clamped to the upper bound.
  const double expect[2][3] = {{1.0, 1.5, std::exp(-0.1)}, {std::exp(0.05), 1.5, 0.0}};
  EXPECT_NEAR(w[0][0].item<double>(), expect[0][0], 1e-6);
  EXPECT_NEAR(w[0][1].item<double>(), expect[0][1], 1e-6);
  EXPECT_NEAR(w[0][2].item<double>(), expect[0][2], 1e-6);
  EXPECT_NEAR(w[1][1].item<double>(), expect[1][0], 1e-6);
  EXPECT_NEAR(w[1][2].item<double>(), expect[1][1], 1e-6);
  // Tokens whose ratio leaves [0.8, 1.2] (exp(0.5), exp(1)) leave both masks.
  EXPECT_TRUE(at::equal(b.tensor("response_mask"),
                        at::tensor({0, 1, 0, 1, 0, 0, 0, 1, 0, 0}, at::kLong).view({2, 5})));
  EXPECT_TRUE(at::equal(b.tensor("final_response_mask"),
                        at::tensor({1, 0, 1, 0, 0, 1, 0, 0}, at::kFloat).view({2, 4})));
  // The token ratio's mean over the (unfiltered) response tokens, sample-mean of token-means.
  const double s0 = (1.0 + std::exp(0.5) + std::exp(-0.1)) / 3, s1 = (std::exp(0.05) + std::exp(1.0)) / 2;
  // (Keys keep their reduction tag, as every step metric does until a tracker writes it.)
  ASSERT_TRUE(m.count("actor/train_infer_ratio_token_mean@sum")) << m.begin()->first;
  EXPECT_NEAR(m.at("actor/train_infer_ratio_token_mean@sum"), (s0 + s1) / 2, 1e-5);
  EXPECT_TRUE(m.count("actor/train_infer_kl@sum"));
}

TEST(PipelineTrainInferStep, WithoutRecomputeTheBatchIsUntouched) {
  config::PipelineConfig c;
  c.enable_old_logprobs_recompute = false;
  c.train_infer_correction.is_weight.enabled = true;
  Batch b = mismatch_batch();
  EXPECT_TRUE(pipeline::apply_train_infer_correction(c, b).empty());
  EXPECT_FALSE(b.has_tensor("train_infer_is_weight"));
}
