// swiglu (model/swiglu.h) against silu(g) * u and its derivatives in float64: fp32 and bf16, sizes
// with a tail past the last 8 lanes, large |g| where exp saturates, NaN passing through; tensors
// the kernel does not take go through ATen with the same result.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "roll/model/swiglu.h"

using namespace roll::model;

namespace {

// |got - ref| <= tol · (|ref| + magnitude) + 1e-30, magnitude the size of the terms the result is
// formed from; tol covers a handful of fp32 operations and Cephes' exp (~1e-7 relative: 16 · 2^-24)
// plus, for bf16, the one rounding of the result (2^-8). The absolute 1e-30: below g = -87.3 the
// exp saturates, so sigmoid(g) ~ 1e-38 stands for the true 1e-44.
void expect_close(const at::Tensor& got, const at::Tensor& ref, const at::Tensor& magnitude, at::ScalarType dtype,
                  const std::string& what) {
  const double tol = 16 * std::ldexp(1.0, -24) + (dtype == at::kBFloat16 ? std::ldexp(1.0, -8) : 0);
  const at::Tensor err = (got.to(at::kDouble) - ref).abs();
  const at::Tensor bound = tol * (ref.abs() + magnitude) + 1e-30;
  EXPECT_EQ((err > bound).sum().item<int64_t>(), 0) << what << ": worst excess " << (err - bound).max().item<double>();
}

void check(at::ScalarType dtype, int64_t n) {
  const std::string what = std::string(dtype == at::kBFloat16 ? "bf16" : "fp32") + " n=" + std::to_string(n);
  at::manual_seed(3);
  at::Tensor g = (at::randn({n}) * 4).to(dtype), u = at::randn({n}).to(dtype), d = at::randn({n}).to(dtype);
  if (n > 4) {  // saturated exp on both sides
    g[0] = 100.0;
    g[1] = -100.0;
    g[2] = 30.0;
    g[3] = -30.0;
  }
  const at::Tensor gd = g.to(at::kDouble), ud = u.to(at::kDouble), dd = d.to(at::kDouble);
  const at::Tensor s = at::sigmoid(gd);
  const at::Tensor act_ref = gd * s * ud;
  const at::Tensor du_ref = dd * gd * s;
  const at::Tensor dg_ref = dd * ud * s * (1 + gd * (1 - s));

  at::Tensor gv = g.clone().requires_grad_(), uv = u.clone().requires_grad_();
  at::Tensor act = swiglu(gv, uv);
  ASSERT_EQ(act.scalar_type(), dtype);
  expect_close(act, act_ref, at::zeros_like(act_ref), dtype, what + ": act");
  act.backward(d);
  expect_close(uv.grad(), du_ref, at::zeros_like(du_ref), dtype, what + ": d up");
  expect_close(gv.grad(), dg_ref, (dd * ud * s * (1 + gd.abs() * (1 - s))).abs(), dtype, what + ": d gate");
  at::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(swiglu(g, u), act.detach())) << what;
}

}  // namespace

TEST(ModelSwiglu, MatchesAFloat64ReferenceForwardAndBackward) {
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (int64_t n : {3, 8, 37, 4099, 70001}) check(dtype, n);
}

TEST(ModelSwiglu, NanPassesThrough) {
  for (auto dtype : {at::kFloat, at::kBFloat16}) {
    at::Tensor g = at::ones({16}).to(dtype), u = at::ones({16}).to(dtype);
    g[5] = std::numeric_limits<double>::quiet_NaN();
    u[9] = std::numeric_limits<double>::quiet_NaN();
    const at::Tensor nan = at::isnan(swiglu(g, u));
    EXPECT_TRUE(nan[5].item<bool>());
    EXPECT_TRUE(nan[9].item<bool>());
    EXPECT_EQ(nan.sum().item<int64_t>(), 2);
  }
}

TEST(ModelSwiglu, TensorsTheKernelDoesNotTakeGoThroughAten) {
  at::manual_seed(4);
  const at::Tensor g = at::randn({6, 10}), u = at::randn({6, 10});
  const at::Tensor gt = g.t(), ut = u.t();  // not contiguous
  EXPECT_TRUE(at::allclose(swiglu(gt, ut), at::silu(gt) * ut, 1e-6, 1e-6));
  const at::Tensor gd = g.to(at::kDouble), ud = u.to(at::kDouble);
  EXPECT_TRUE(at::allclose(swiglu(gd, ud), at::silu(gd) * ud));
}
