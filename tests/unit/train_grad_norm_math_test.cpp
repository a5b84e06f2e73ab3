// Gradient-norm math (ROLL tests/distributed/strategy/grad_norm/test_grad_norm_unit.py).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "roll/train/grad_norm.h"

namespace roll::train {
namespace {

at::Tensor vec(std::vector<float> v) { return at::tensor(v); }

// fp32 norms of a few integers: the squares sum exactly, sqrt rounds once (ulp(7.5) = 4.8e-7) -> 1e-6..1e-5.
TEST(TrainGradNormMathBasic, SingleParameter) {
  EXPECT_NEAR(total_grad_norm({vec({2, 4, 6})}), std::sqrt(56.0), 1e-5);
}

TEST(TrainGradNormMathBasic, MultipleParameters) {
  EXPECT_NEAR(total_grad_norm({vec({1, 0}), vec({0, 1})}), std::sqrt(2.0), 1e-6);
}

TEST(TrainGradNormMathBasic, ThroughAutograd) {
  at::Tensor w1 = vec({1, 2}).set_requires_grad(true);
  at::Tensor w2 = vec({3}).set_requires_grad(true);
  (w1.pow(2).sum() + w2.pow(2).sum()).backward();
  EXPECT_TRUE(at::allclose(w1.grad(), vec({2, 4})));
  EXPECT_TRUE(at::allclose(w2.grad(), vec({6})));
  EXPECT_NEAR(total_grad_norm({w1.grad(), w2.grad()}), std::sqrt(56.0), 1e-5);
}

TEST(TrainGradNormMathClip, ScalesToMaxNorm) {
  std::vector<at::Tensor> g{vec({3, 4})};
  double norm = clip_grad_norm(g, 2.5);
  EXPECT_NEAR(norm, 5.0, 1e-6);
  EXPECT_TRUE(at::allclose(g[0], vec({1.5f, 2.0f}), 1e-5, 1e-5)) << g[0];
  EXPECT_NEAR(total_grad_norm(g), 2.5, 1e-5);
  EXPECT_NEAR(clip_coefficient(5.0, 2.5), 2.5 / (5.0 + 1e-6), 1e-12);
  EXPECT_DOUBLE_EQ(clip_coefficient(1.0, 2.5), 1.0);
}

TEST(TrainGradNormMathEdge, ZeroNoneAndMixedGradients) {
  std::vector<at::Tensor> zero{at::zeros({3})};
  EXPECT_DOUBLE_EQ(clip_grad_norm(zero, 1.0), 0.0);
  std::vector<at::Tensor> none{at::Tensor()};
  EXPECT_DOUBLE_EQ(clip_grad_norm(none, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(total_grad_norm({}), 0.0);
  EXPECT_NEAR(total_grad_norm({vec({3, 4}), at::Tensor()}), 5.0, 1e-6);
}

TEST(TrainGradNormMathEdge, NonFiniteNormSkipsTheStepAndLeavesGradients) {
  std::vector<at::Tensor> g{vec({1, std::numeric_limits<float>::infinity()})};
  double norm = clip_grad_norm(g, 1.0);
  EXPECT_FALSE(is_finite_norm(norm));
  EXPECT_EQ(g[0][0].item<float>(), 1.0f);
  std::vector<at::Tensor> n{vec({NAN})};
  EXPECT_FALSE(is_finite_norm(total_grad_norm(n)));
  EXPECT_TRUE(is_finite_norm(3.0));
}

}  // namespace
}  // namespace roll::train
