// The flat-buffer update against libtorch's own torch::optim::AdamW / SGD (an independent code path).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "roll/core/error.h"
#include "roll/train/optimizer.h"

using namespace roll::train;

TEST(TrainOptimizer, AdamWMatchesTorchOptimAdamW) {
  at::manual_seed(3);
  at::Tensor p0 = at::randn({1003});  // not a multiple of the 8-wide vector loop: its scalar tail runs too
  at::Tensor ref = p0.clone().set_requires_grad(true);
  torch::optim::AdamW torch_opt({ref}, torch::optim::AdamWOptions(1e-2).betas({0.8, 0.95}).eps(1e-6).weight_decay(0.1));
  at::Tensor mine = p0.clone();
  OptimizerSlot slot;
  OptimizerHyper h{"adamw", 0.8, 0.95, 1e-6, 0.1};
  for (int step = 1; step <= 7; ++step) {
    at::Tensor g = at::randn({1003}) * (step % 3 == 0 ? 1e-4 : 1.0);
    ref.mutable_grad() = g.clone();
    torch_opt.step();
    optimizer_update(h, mine, g, slot, 1e-2, step);
    // The same elementwise ATen ops in torch's order (no reductions): equal bits on any CPU.
    ASSERT_LE((mine - ref.detach()).abs().max().item<double>(), 1e-6) << "step " << step;
  }
}

TEST(TrainOptimizer, AdamWSlicesBigBuffersLikeOneUpdate) {
  // Bigger than one slice (64Ki elements): the sliced loop must equal the whole-buffer formula.
  at::manual_seed(4);
  at::Tensor p = at::randn({200000}), g = at::randn({200000});
  at::Tensor a = p.clone();
  OptimizerSlot slot;
  optimizer_update({"adamw", 0.9, 0.999, 1e-8, 0.0}, a, g, slot, 1e-3, 1);
  // First step: m = 0.1 g, v = 0.001 g², update = lr * m/bc1 / (sqrt(v/bc2) + eps) = lr * g / (|g| + eps).
  at::Tensor expect = p - 1e-3 * g / (g.abs() + 1e-8);
  // Elementwise, no reductions: the two formulas round |p| ≲ 5 differently at most once (ulp 4.8e-7).
  EXPECT_LE((a - expect).abs().max().item<double>(), 1e-6);
}

TEST(TrainOptimizer, SgdMatchesTorchOptimSgd) {
  at::manual_seed(5);
  at::Tensor p0 = at::randn({64});
  at::Tensor ref = p0.clone().set_requires_grad(true);
  torch::optim::SGD torch_opt({ref}, torch::optim::SGDOptions(0.3));
  at::Tensor mine = p0.clone();
  OptimizerSlot slot;
  for (int step = 1; step <= 3; ++step) {
    at::Tensor g = at::randn({64});
    ref.mutable_grad() = g.clone();
    torch_opt.step();
    optimizer_update({"sgd"}, mine, g, slot, 0.3, step);
  }
  EXPECT_TRUE(at::allclose(mine, ref.detach(), 0, 1e-6));  // the same p − lr·g: equal bits
}

TEST(TrainOptimizer, RefusesNonFp32AndUnknownKinds) {
  at::Tensor p = at::zeros({4}, at::kBFloat16), g = at::zeros({4});
  OptimizerSlot slot;
  EXPECT_THROW(optimizer_update({"adamw"}, p, g, slot, 1e-3, 1), roll::Error);
  at::Tensor f = at::zeros({4});
  EXPECT_THROW(optimizer_update({"lion"}, f, g, slot, 1e-3, 1), roll::ConfigError);
}

// The clip, zeroing and bf16 weights folded into the pass give what the separate operations give,
// bit for bit: grad.mul_(scale), the update, weights.copy_(param), grad.zero_(). On a 1003-element
// buffer (the vector loop's tail too) and through SGD, which runs them apart.
TEST(TrainOptimizer, ExtrasInThePassEqualTheOperationsApart) {
  for (const char* kind : {"adamw", "sgd"}) {
    SCOPED_TRACE(kind);
    at::manual_seed(6);
    const OptimizerHyper h{kind, 0.9, 0.99, 1e-8, 0.05};
    at::Tensor p_apart = at::randn({1003}), p_fused = p_apart.clone();
    OptimizerSlot slot_apart, slot_fused;
    for (int step = 1; step <= 3; ++step) {
      const at::Tensor g0 = at::randn({1003}) * 3;
      at::Tensor g_apart = g0.clone(), g_fused = g0.clone();
      const double scale = 0.37;
      g_apart.mul_(scale);
      optimizer_update(h, p_apart, g_apart, slot_apart, 1e-2, step);
      const at::Tensor w_apart = p_apart.to(at::kBFloat16);
      UpdateExtras extras;
      extras.grad_scale = scale;
      extras.zero_grad = true;
      extras.weights_out = at::empty({1003}, at::kBFloat16);
      optimizer_update(h, p_fused, g_fused, slot_fused, 1e-2, step, extras);
      ASSERT_TRUE(at::equal(p_fused, p_apart)) << "step " << step;
      ASSERT_TRUE(at::equal(extras.weights_out, w_apart)) << "step " << step;
      ASSERT_EQ(g_fused.abs().sum().item<double>(), 0.0) << "step " << step;
    }
  }
}
