// Critic value loss with and without value_clip (docs/rl.md).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/core/error.h"
#include "roll/rl/critic_loss.h"

namespace roll::rl {
namespace {

at::Tensor rows(std::vector<std::vector<float>> v) {
  std::vector<at::Tensor> r;
  for (auto& x : v) r.push_back(at::tensor(x));
  return at::stack(r);
}

// fp32 on ≤ 4 tokens of |v| ≤ 2 against hand values: a few roundings of ulp(2) = 2.4e-7 -> 1e-6.
TEST(RlCriticLossValue, ClippedByHand) {
  at::Tensor v = rows({{1, 2}}).set_requires_grad(true);
  ValueLossResult r = value_loss(v, rows({{1.5f, 1.5f}}), rows({{2, 2}}), rows({{1, 1}}), 0.2);
  // V_c = [1.3, 1.7]; max((V−R)², (V_c−R)²) = [1, 0.09] -> 0.5·mean = 0.2725.
  EXPECT_NEAR(r.loss.item<double>(), 0.2725, 1e-6);
  EXPECT_NEAR(r.metrics.last("critic/clipfrac"), 0.5, 1e-9);
  EXPECT_NEAR(r.metrics.last("critic/error"), 0.5, 1e-6);
  EXPECT_NEAR(r.metrics.last("critic/value"), 1.5, 1e-6);
  EXPECT_NEAR(r.metrics.last("critic/vpred"), 1.5, 1e-6);
  r.loss.backward();
  // Token 0 uses the unclipped branch: d/dV 0.5·mean(...) = 0.5·(2(V−R))/2 = −0.5; token 1 is clipped: 0.
  EXPECT_TRUE(at::allclose(v.grad(), rows({{-0.5f, 0.f}}))) << v.grad();
}

TEST(RlCriticLossValue, UnclippedAndMaskedRows) {
  at::Tensor v = rows({{1, 2}, {7, 7}});
  ValueLossResult r = value_loss(v, v, rows({{2, 2}, {0, 0}}), rows({{1, 1}, {0, 0}}), std::nullopt);
  // Rows average their masked tokens; the all-masked row counts as 0 in the mean over rows.
  EXPECT_NEAR(r.loss.item<double>(), 0.5 * (0.5 + 0.0) / 2.0, 1e-6);
  EXPECT_DOUBLE_EQ(r.metrics.last("critic/clipfrac"), 0.0);
  EXPECT_THROW(value_loss(v, v, rows({{2, 2}}), rows({{1, 1}, {0, 0}}), std::nullopt), Error);
}

}  // namespace
}  // namespace roll::rl
