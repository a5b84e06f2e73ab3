// rms_norm (model/rms_norm.h) against HF's RMSNorm in float64: output and the gradients of x and w,
// fp32 and bf16, rows whose length leaves a tail past the last 8 lanes, several rows per thread;
// tensors the kernel does not take go through ATen with the same result.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <string>

#include "roll/model/rms_norm.h"

using namespace roll::model;

namespace {

// |got - ref| <= tol · magnitude + 1e-12: bf16 rounds the normalised row, the product with w and
// in backward dy·w and the result (2^-8 each, four at most along a path: 4 · 2^-8), fp32 the sums
// of n terms (n · 2^-24).
void expect_close(const at::Tensor& got, const at::Tensor& ref, const at::Tensor& magnitude, double tol,
                  const std::string& what) {
  const at::Tensor err = (got.to(at::kDouble) - ref).abs();
  const at::Tensor bound = tol * magnitude + 1e-12;
  EXPECT_EQ((err > bound).sum().item<int64_t>(), 0) << what << ": worst excess " << (err - bound).max().item<double>();
}

void check(at::ScalarType dtype, int64_t rows, int64_t n) {
  const std::string what = std::string(dtype == at::kBFloat16 ? "bf16" : "fp32") + " " + std::to_string(rows) + "x" +
                           std::to_string(n);
  at::manual_seed(rows + n);
  const double eps = 1e-6;
  const at::Tensor x0 = (at::randn({rows, n}) * 2).to(dtype), w0 = (1 + at::randn({n}) * 0.3).to(dtype),
                   dy = at::randn({rows, n}).to(dtype);
  at::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_();
  at::Tensor y = rms_norm(x, w, eps);
  ASSERT_EQ(y.scalar_type(), dtype);
  y.backward(dy);

  at::Tensor xd = x0.to(at::kDouble).requires_grad_(), wd = w0.to(at::kDouble).requires_grad_();
  const at::Tensor r = at::rsqrt(xd.pow(2).mean(-1, true) + eps);
  const at::Tensor ref = wd * (xd * r);
  auto grads = torch::autograd::grad({ref}, {xd, wd}, {dy.to(at::kDouble)});
  const double tol = (dtype == at::kBFloat16 ? 4 * std::ldexp(1.0, -8) : 0) + 4 * n * std::ldexp(1.0, -24);
  const at::Tensor rd = r.detach(), xa = x0.to(at::kDouble).abs(), wa = w0.to(at::kDouble).abs(),
                   dya = dy.to(at::kDouble).abs();
  expect_close(y, ref.detach(), wa * xa * rd, tol, what + ": y");
  // dx = r (dy w) - (r³/n) x Σ (dy w x): the magnitude of both terms.
  const at::Tensor dx_mag = rd * dya * wa + rd.pow(3) / n * xa * (dya * wa * xa).sum(-1, true);
  expect_close(x.grad(), grads[0], dx_mag, tol, what + ": dx");
  // dw = Σ_rows dy · x r, summed over the rows in fp32 (rows · 2^-24 more).
  const at::Tensor dw_mag = (dya * xa * rd).sum(0);
  expect_close(w.grad(), grads[1], dw_mag, tol + rows * std::ldexp(1.0, -24), what + ": dw");
}

}  // namespace

TEST(ModelRmsNorm, MatchesHfsFormulaInFloat64) {
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 7}, {3, 64}, {37, 100}, {130, 896}}) check(dtype, rows, n);
}

TEST(ModelRmsNorm, AFrozenWeightGetsNoGradient) {
  at::manual_seed(8);
  at::Tensor x = at::randn({4, 24}).to(at::kBFloat16).requires_grad_();
  const at::Tensor w = at::ones({24}, at::kBFloat16);
  rms_norm(x, w, 1e-6).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
}

TEST(ModelRmsNorm, TensorsTheKernelDoesNotTakeGoThroughAten) {
  at::manual_seed(9);
  const at::Tensor x = at::randn({6, 10}, at::kDouble), w = at::randn({10}, at::kDouble);
  const at::Tensor expect = w * (x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-5));
  EXPECT_TRUE(at::allclose(rms_norm(x, w, 1e-5), expect));
  const at::Tensor xt = at::randn({10, 6}).t();  // not contiguous
  const at::Tensor w32 = at::randn({10});
  EXPECT_TRUE(at::allclose(rms_norm(xt, w32, 1e-5), w32 * (xt * at::rsqrt(xt.pow(2).mean(-1, true) + 1e-5)), 1e-5, 1e-6));
}
