// train/grad_accumulate: a bf16 gradient added into an fp32 buffer in one pass gives ATen's own
// mixed-dtype add_ bit for bit (both widen exactly and round one fp32 sum per element).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "roll/train/grad_accumulate.h"

TEST(TrainGradAccumulate, Bf16IntoFp32EqualsATensAdd) {
  at::manual_seed(11);
  for (int64_t n : {1, 7, 8, 1003, 200003}) {  // the vector loop's tail, and several parallel tasks
    const at::Tensor base = at::randn({n});
    const at::Tensor g = (at::randn({n}) * 3).to(at::kBFloat16);
    at::Tensor mine = base.clone(), ref = base.clone();
    roll::train::accumulate_grad(mine, g);
    ref.add_(g);
    EXPECT_TRUE(at::equal(mine, ref)) << n;
  }
}

TEST(TrainGradAccumulate, OtherLayoutsTakeATensAdd) {
  at::manual_seed(12);
  const at::Tensor base = at::randn({6, 5});
  const at::Tensor g = at::randn({5, 6}).to(at::kBFloat16).t();  // not contiguous
  at::Tensor mine = base.clone();
  roll::train::accumulate_grad(mine, g);
  EXPECT_TRUE(at::equal(mine, base + g.to(at::kFloat)));
  const at::Tensor g32 = at::randn({6, 5});
  at::Tensor plain = base.clone();
  roll::train::accumulate_grad(plain, g32);
  EXPECT_TRUE(at::equal(plain, base + g32));
}
