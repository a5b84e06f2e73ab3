// compute_domain_advantages (pipeline/step_advantages.h): what it normalises is the reward worker's
// response-level reward when the worker sends one (the rule rewards' shaped reward, ROLL's
// response_level_rewards), else the score; the sample masks still read the score.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/config/schema.h"
#include "roll/pipeline/step_advantages.h"

namespace roll::pipeline {
namespace {

// Two responses of one prompt (group of 2): prompt 2 tokens, response 3 tokens.
Batch two_samples(const std::vector<float>& scores) {
  const int64_t B = 2, P = 2, R = 3, S = P + R;
  Batch b(B);
  b.set_tensor("responses", at::ones({B, R}, at::kLong));
  at::Tensor rm = at::zeros({B, S}, at::kLong);
  rm.slice(1, P) = 1;
  b.set_tensor("response_mask", rm);
  b.set_tensor("attention_mask", at::ones({B, S}, at::kLong));
  b.set_tensor("position_ids", at::arange(S).repeat({B, 1}));
  b.set_tensor("old_log_probs", at::zeros({B, S - 1}));
  b.set_tensor("scores", at::tensor(scores));
  return b;
}

config::PipelineConfig grpo() {
  config::PipelineConfig c;
  c.adv_estimator = "grpo";
  c.num_return_sequences_in_group = 2;
  c.enable_reference = false;
  return c;
}

float last_advantage(const Batch& b, int64_t row) { return b.tensor("advantages")[row][-1].item<float>(); }

TEST(PipelineStepAdvantages, NormalisesTheWorkersResponseLevelRewardNotTheScore) {
  const config::PipelineConfig c = grpo();
  rl::KlController kl = rl::KlController::fixed(0.0);

  // Equal scores: GRPO's group has nothing to tell apart.
  Batch plain = two_samples({1.f, 1.f});
  rl::RunningMomentsMap running;
  compute_domain_advantages(plain, c, "d", running, kl);
  EXPECT_EQ(last_advantage(plain, 0), 0.f);
  EXPECT_EQ(last_advantage(plain, 1), 0.f);

  // Same scores, shaped rewards 1 and 0.5 (e.g. a repetition penalty on the second): the first
  // response is the better one.
  Batch shaped = two_samples({1.f, 1.f});
  shaped.set_tensor("response_level_rewards", at::tensor(std::vector<float>{1.f, 0.5f}));
  rl::RunningMomentsMap running2;
  compute_domain_advantages(shaped, c, "d", running2, kl);
  EXPECT_GT(last_advantage(shaped, 0), 0.f);
  EXPECT_LT(last_advantage(shaped, 1), 0.f);
  EXPECT_FLOAT_EQ(last_advantage(shaped, 0), -last_advantage(shaped, 1));  // a group of two: ±1 after std
}

}  // namespace
}  // namespace roll::pipeline
