// ROLL's grad-accumulation scaling (test_grad_accumulation_scaling): micro-batch losses with the
// global normaliser and the loss scale, accumulated by the strategy, give the full-batch gradient.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/train/strategy.h"
#include "train_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

train::TrainOptions sgd(double lr, int64_t ga) {
  train::TrainOptions o;
  o.optimizer = "sgd";
  o.learning_rate = lr;
  o.lr_scheduler_type = "constant";
  o.max_grad_norm = 0.0;
  o.gradient_checkpointing = true;
  o.gradient_accumulation_steps = ga;
  return o;
}

}  // namespace

TEST(TrainGradAccumulation, AccumulatedMicroBatchesEqualTheFullBatch) {
  // ROLL's scaling: micro-batch loss (global token-mean) x num_micro_batches; the strategy ÷ GA.
  TokenBatch b = make_batch(8, 12, 96, 5);
  const double tokens = b.loss_mask.sum().item<double>();
  train::TrainStrategy full(tiny_model(), sgd(0.0, 1));
  full.backward(micro_loss(full, b, tokens, 1, 1));
  const auto want = full.reduced_gradients();
  for (int64_t ga : {2, 4, 8}) {
    for (at::ScalarType dtype : {at::kFloat}) {
      train::TrainStrategy acc(tiny_model(dtype), sgd(0.0, ga));
      const int64_t micro = 8 / ga;
      for (int64_t i = 0; i < ga; ++i) acc.backward(micro_loss(acc, b.rows(i * micro, (i + 1) * micro), tokens, ga, 1));
      const auto got = acc.reduced_gradients();
      // fp32: ~sqrt(96 tokens)·eps ≈ 1.2e-6 per reduction, through ~8 chained reductions of the
      // 2-layer model -> 1e-5 (a missing ÷GA is off by ≥ 0.5).
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_LE(rel_diff(got[k].second, want[k].second), 1e-5) << "GA " << ga << " " << want[k].first;
    }
  }
}

TEST(TrainGradAccumulation, Bf16ModelAccumulatesInFp32AndKeepsFp32Master) {
  TokenBatch b = make_batch(8, 12, 96, 6);
  const double tokens = b.loss_mask.sum().item<double>();
  train::TrainOptions o = sgd(1e-2, 4);
  train::TrainStrategy s(tiny_model(at::kBFloat16), o);
  for (int64_t i = 0; i < 4; ++i) s.backward(micro_loss(s, b.rows(2 * i, 2 * i + 2), tokens, 4, 1));
  auto grads = s.reduced_gradients();
  for (auto& [n, g] : grads) EXPECT_EQ(g.scalar_type(), at::kFloat) << n;
  s.step();
  auto state = s.export_state();
  bool saw_master = false;
  for (auto& [n, t] : state.tensors)
    if (n.ends_with(".master")) {
      saw_master = true;
      EXPECT_EQ(t.scalar_type(), at::kFloat);
    }
  EXPECT_TRUE(saw_master);
  // The bf16 weights are the rounded master weights.
  auto params = s.full_parameters();
  EXPECT_EQ(params[0].second.scalar_type(), at::kBFloat16);
}
