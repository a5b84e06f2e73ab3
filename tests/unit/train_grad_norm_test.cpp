// Grad-norm clipping and the non-finite skip through the strategy (ROLL's test_grad_norm_unit
// vectors).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/train/grad_norm.h"
#include "roll/train/strategy.h"
#include "train_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

train::TrainOptions sgd(double lr, double max_norm, int64_t ga = 1) {
  train::TrainOptions o;
  o.optimizer = "sgd";
  o.learning_rate = lr;
  o.lr_scheduler_type = "constant";
  o.max_grad_norm = max_norm;
  o.gradient_checkpointing = true;
  o.gradient_accumulation_steps = ga;
  return o;
}

// A loss whose gradient is exactly [3, 4] on two embedding entries and 0 elsewhere (norm 5).
at::Tensor three_four(train::TrainStrategy& s) {
  at::Tensor w = s.model().parameter("model.embed_tokens.weight");
  return 3.0 * w.select(0, 1).select(0, 0) + 4.0 * w.select(0, 1).select(0, 1);
}

}  // namespace

TEST(TrainGradNorm, ClipsThreeFourToMaxTwoPointFive) {
  train::TrainStrategy s(tiny_model(), sgd(1.0, 2.5));
  const at::Tensor before = s.model().parameter("model.embed_tokens.weight").detach().clone();
  s.backward(three_four(s));
  auto st = s.step();
  EXPECT_NEAR(st.grad_norm, 5.0, 1e-6);  // 3² + 4² and zeros: exact in any order
  EXPECT_FALSE(st.skipped);
  const at::Tensor delta = before - s.model().parameter("model.embed_tokens.weight").detach();
  // Elementwise only: the clip's 2.5 / (5 + 1e-6) takes 4e-7 off 2.0, plus two roundings at |w ± 2| < 4.
  EXPECT_NEAR(delta[1][0].item<double>(), 1.5, 1e-6);
  EXPECT_NEAR(delta[1][1].item<double>(), 2.0, 1e-6);
  EXPECT_NEAR(delta.abs().sum().item<double>(), 3.5, 1e-5);  // nothing else moved
}

TEST(TrainGradNorm, BelowTheMaximumNothingIsClippedAndNormMatchesRl) {
  train::TrainStrategy s(tiny_model(), sgd(0.0, 1e9));
  TokenBatch b = make_batch(4, 10, 96, 1);
  s.backward(micro_loss(s, b, b.loss_mask.sum().item<double>(), 1, 1));
  auto grads = s.reduced_gradients();
  std::vector<at::Tensor> g;
  for (auto& [n, t] : grads) g.push_back(t);
  const double want = train::total_grad_norm(g);
  auto st = s.step();
  // fp32 norms of the same 1.3e5 gradients grouped otherwise (per tensor, per flat buffer): a SIMD
  // accumulator sums ~n/32 ≈ 4e3 squares, sqrt(4e3)·eps ≈ 8e-6 on the squares, 4e-6 on each norm -> 1e-5.
  EXPECT_NEAR(st.grad_norm, want, 1e-5 * want);
  EXPECT_GT(st.grad_norm, 0.0);
}

TEST(TrainGradNorm, ZeroGradientsAndNoGradients) {
  train::TrainStrategy s(tiny_model(), sgd(1.0, 1.0));
  const auto before = s.model().parameter("model.norm.weight").detach().clone();
  s.backward(s.model().parameter("model.norm.weight").sum() * 0.0);
  auto zero = s.step();
  EXPECT_EQ(zero.grad_norm, 0.0);
  EXPECT_FALSE(zero.skipped);
  auto none = s.step();  // no backward at all
  EXPECT_EQ(none.grad_norm, 0.0);
  EXPECT_FALSE(none.skipped);
  EXPECT_TRUE(at::equal(before, s.model().parameter("model.norm.weight").detach()));
  EXPECT_EQ(none.step, 2);
}

TEST(TrainGradNorm, NonFiniteNormSkipsTheUpdateButTheScheduleAdvances) {
  train::TrainOptions o = sgd(1.0, 1.0);
  o.lr_scheduler_type = "linear";
  o.total_steps = 4;
  train::TrainStrategy s(tiny_model(), o);
  const auto before = s.model().parameter("model.norm.weight").detach().clone();
  s.backward(s.model().parameter("model.norm.weight").sum() * std::numeric_limits<double>::infinity());
  auto st = s.step();
  EXPECT_TRUE(st.skipped);
  EXPECT_FALSE(std::isfinite(st.grad_norm));
  EXPECT_DOUBLE_EQ(st.lr, 1.0);
  EXPECT_TRUE(at::equal(before, s.model().parameter("model.norm.weight").detach()));
  EXPECT_DOUBLE_EQ(s.current_lr(), 0.75);  // the schedule moved on
  // The bad gradient is gone: the next step is a normal one.
  s.backward(three_four(s));
  auto next = s.step();
  EXPECT_FALSE(next.skipped);
  EXPECT_NEAR(next.grad_norm, 5.0, 1e-6);
}
