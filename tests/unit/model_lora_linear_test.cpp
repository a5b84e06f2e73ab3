// lora_linear (model/lora_linear.h) against the same formula in float64 through ATen's autograd:
// output and the gradients of x, A and B, for fp32 and bf16 bases, with and without bias, in
// grad mode and without it; dropout takes PEFT's composite graph.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <string>

#include "roll/model/lora_linear.h"

using namespace roll::model;

namespace {

struct Operands {
  at::Tensor x, w, b, a, bm, g;
};

// x [2, 7, 40] -> [2, 7, 24], rank 4. Base operands in `dtype`; adapters fp32.
Operands make(at::ScalarType dtype, bool bias) {
  at::manual_seed(5);
  Operands o;
  o.x = at::randn({2, 7, 40}).to(dtype);
  o.w = (at::randn({24, 40}) * 0.2).to(dtype);
  if (bias) o.b = (at::randn({24}) * 0.1).to(dtype);
  o.a = at::randn({4, 40}) * 0.3;
  o.bm = at::randn({24, 4}) * 0.3;
  o.g = at::randn({2, 7, 24}).to(dtype);
  return o;
}

// |got - ref| <= tol · (|ref| + magnitude): `magnitude` is the sum of the absolute terms of the
// reduction, so tol covers an fp32 sum of up to n terms (n · 2^-24) plus, for bf16, two roundings
// of the result (base product, then the adapter's sum: 2 · 2^-8).
void expect_close(const at::Tensor& got, const at::Tensor& ref, const at::Tensor& magnitude, double tol,
                  const std::string& what) {
  const at::Tensor err = (got.to(at::kDouble) - ref).abs();
  const at::Tensor bound = tol * (ref.abs() + magnitude);
  EXPECT_EQ((err > bound).sum().item<int64_t>(), 0) << what << ": worst excess " << (err - bound).max().item<double>();
}

void check(at::ScalarType dtype, bool bias) {
  const std::string what = std::string(dtype == at::kBFloat16 ? "bf16" : "fp32") + (bias ? " with bias" : "");
  const Operands o = make(dtype, bias);
  const double s = 2.5;
  const double tol = (dtype == at::kBFloat16 ? 2 * std::ldexp(1.0, -8) : 0) + 64 * std::ldexp(1.0, -24);

  // float64 reference and its gradients.
  auto d = [](const at::Tensor& t) { return t.defined() ? t.to(at::kDouble) : t; };
  at::Tensor xd = d(o.x).requires_grad_(), ad = d(o.a).requires_grad_(), bd = d(o.bm).requires_grad_();
  at::Tensor ref = at::linear(xd, d(o.w), d(o.b)) + at::linear(at::linear(xd, ad), bd) * s;
  auto grads = torch::autograd::grad({ref}, {xd, ad, bd}, {d(o.g)});
  // The absolute terms of each sum, for the bounds.
  const at::Tensor ax = d(o.x).abs(), aw = d(o.w).abs(), aa = d(o.a).abs(), ab = d(o.bm).abs(), ag = d(o.g).abs();
  const at::Tensor y_mag = at::linear(ax, aw) + s * at::linear(at::linear(ax, aa), ab);
  const at::Tensor dx_mag = at::matmul(ag, aw) + s * at::matmul(at::matmul(ag, ab), aa);
  const at::Tensor da_mag = s * at::matmul(at::matmul(ag, ab).reshape({-1, 4}).t(), ax.reshape({-1, 40}));
  const at::Tensor db_mag = s * at::matmul(ag.reshape({-1, 24}).t(), at::linear(ax, aa).reshape({-1, 4}));

  at::Tensor x = o.x.clone().requires_grad_(), a = o.a.clone().requires_grad_(), bm = o.bm.clone().requires_grad_();
  at::Tensor y = lora_linear(x, o.w, o.b, a, bm, s, 0.0);
  ASSERT_EQ(y.scalar_type(), dtype) << what;
  ASSERT_EQ(y.sizes(), ref.sizes()) << what;
  expect_close(y, ref.detach(), y_mag, tol, what + ": y");
  y.backward(o.g);
  expect_close(x.grad(), grads[0], dx_mag, tol, what + ": dx");
  // fp32 reductions over 14 tokens and rank 4; A's and B's gradients never round to bf16.
  const double tol32 = (dtype == at::kBFloat16 ? std::ldexp(1.0, -8) : 0) + 64 * std::ldexp(1.0, -24);
  expect_close(a.grad(), grads[1], da_mag, tol32, what + ": dA");
  expect_close(bm.grad(), grads[2], db_mag, tol32, what + ": dB");

  // Without autograd the same forward, bit for bit.
  at::NoGradGuard no_grad;
  EXPECT_TRUE(at::equal(lora_linear(o.x, o.w, o.b, o.a, o.bm, s, 0.0), y.detach())) << what;
}

}  // namespace

TEST(ModelLoraLinear, Fp32BaseMatchesAFloat64Reference) {
  check(at::kFloat, false);
  check(at::kFloat, true);
}

TEST(ModelLoraLinear, Bf16BaseMatchesAFloat64Reference) {
  check(at::kBFloat16, false);
  check(at::kBFloat16, true);
}

// A base that trains gets its weight gradient (the composite graph), the same as autograd's.
TEST(ModelLoraLinear, ATrainingBaseGetsItsGradient) {
  const Operands o = make(at::kFloat, true);
  at::Tensor w = o.w.clone().requires_grad_();
  lora_linear(o.x, w, o.b, o.a, o.bm, 2.0, 0.0).backward(o.g);
  ASSERT_TRUE(w.grad().defined());
  const at::Tensor expect = at::matmul(o.g.reshape({-1, 24}).t(), o.x.reshape({-1, 40}));
  EXPECT_LT((w.grad() - expect).abs().max().item<double>(), 1e-4);
}

// Dropout draws from the CPU generator as at::dropout does: the same seed, the same output.
TEST(ModelLoraLinear, DropoutDrawsFromTheGeneratorAndActs) {
  const Operands o = make(at::kFloat, false);
  at::manual_seed(11);
  const at::Tensor first = lora_linear(o.x, o.w, o.b, o.a, o.bm, 2.0, 0.5);
  at::manual_seed(11);
  EXPECT_TRUE(at::equal(lora_linear(o.x, o.w, o.b, o.a, o.bm, 2.0, 0.5), first));
  EXPECT_GT((first - lora_linear(o.x, o.w, o.b, o.a, o.bm, 2.0, 0.0)).abs().max().item<double>(), 1e-3);
}
