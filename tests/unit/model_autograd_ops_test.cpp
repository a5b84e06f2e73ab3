// model/autograd_ops: the chunked LM-head log-probs against plain autograd over full logits, on
// both of its backward paths (the forward's log-softmax kept while rows <= hidden, recomputed
// beyond).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <torch/csrc/autograd/autograd.h>

#include "roll/model/autograd_ops.h"
#include "roll/model/rope_kernel.h"

namespace {

struct Grads {
  at::Tensor logp, entropy, hidden, weight;
};

Grads run(int64_t rows, int64_t hidden_size, int64_t vocab, int64_t chunk, bool chunked,
         at::ScalarType dtype = at::kFloat, bool frozen_weight = false) {
  at::manual_seed(rows * 31 + hidden_size);
  at::Tensor h = at::randn({rows, hidden_size}, at::kDouble).to(dtype).requires_grad_(true);
  at::Tensor w = (at::randn({vocab, hidden_size}, at::kDouble) * 0.3).to(dtype).requires_grad_(!frozen_weight);
  at::Tensor targets = at::randint(0, vocab, {rows}, at::kLong);
  at::Tensor gl = at::rand({rows}), ge = at::rand({rows});
  at::Tensor logp, ent;
  if (chunked) {
    std::tie(logp, ent) = roll::model::chunked_token_log_probs(h, w, targets, true, chunk);
  } else {
    at::Tensor all = at::log_softmax(at::matmul(h, w.t()), -1);
    logp = all.gather(1, targets.unsqueeze(1)).squeeze(1);
    ent = -(all.exp() * all).sum(-1);
  }
  ((logp * gl).sum() + 0.3 * (ent * ge).sum()).backward();
  return {logp.detach(), ent.detach(), h.grad(), w.grad()};
}

// fp32 sums over the vocabulary in another grouping: relative ~1e-6 per term; rtol 1e-4 and
// atol 1e-5 for entries that cancel, as the transformer's gradient tests use.
void expect_close(const at::Tensor& a, const at::Tensor& b, const char* what) {
  EXPECT_TRUE(at::allclose(a, b, 1e-4, 1e-5)) << what << " max diff " << (a - b).abs().max().item<double>();
}

}  // namespace

TEST(ModelAutogradOps, ChunkedLogProbsMatchFullLogitsOnBothBackwardPaths) {
  // rows <= hidden keeps the forward's log-softmax; rows > hidden recomputes it chunk by chunk.
  for (auto [rows, hidden] : {std::pair<int64_t, int64_t>{12, 16}, {40, 16}}) {
    const Grads ref = run(rows, hidden, 97, 5, false);
    const Grads got = run(rows, hidden, 97, 5, true);
    SCOPED_TRACE(rows);
    expect_close(got.logp, ref.logp, "log-probs");
    expect_close(got.entropy, ref.entropy, "entropy");
    expect_close(got.hidden, ref.hidden, "hidden gradient");
    expect_close(got.weight, ref.weight, "weight gradient");
  }
}

// A frozen head (LoRA) gets no weight gradient, and the hidden gradient is the one it gets when the
// weight trains: fp32 on both backward paths, bf16 bit for bit.
TEST(ModelAutogradOps, AFrozenHeadGetsNoWeightGradientAndTheSameHiddenGradient) {
  for (auto [rows, hidden] : {std::pair<int64_t, int64_t>{12, 16}, {40, 16}}) {
    SCOPED_TRACE(rows);
    const Grads ref = run(rows, hidden, 97, 5, false);
    const Grads got = run(rows, hidden, 97, 5, true, at::kFloat, /*frozen_weight=*/true);
    EXPECT_FALSE(got.weight.defined());
    expect_close(got.hidden, ref.hidden, "hidden gradient");
    const Grads trained16 = run(rows, hidden, 97, 5, true, at::kBFloat16);
    const Grads frozen16 = run(rows, hidden, 97, 5, true, at::kBFloat16, /*frozen_weight=*/true);
    EXPECT_FALSE(frozen16.weight.defined());
    EXPECT_TRUE(at::equal(frozen16.hidden, trained16.hidden));
  }
}

// bf16 weights and hidden states (the log-softmax kept: one weight-gradient product over all rows)
// against float64 autograd over the same bf16 values, u = 2^-9. The forward's logits are a bf16
// product rounded once (|Δz| <= u·M, M = max|logit|), so log-softmax entries move by <= 2uM and
// the log-probs stay within 4uM; p = exp(log-softmax) moves by <= p·4uM, and so does the logit
// gradient g = gl·(onehot − p). Each gradient entry is a sum of products g·x whose g is rounded to
// bf16 once (u) and which the GEMM accumulates in fp32 and rounds to bf16 once (u):
// |got − ref| <= Σ (3u·|g| + 4uM·|gl|·p)·|x| (+ fp32 sums, far below), computed in float64.
TEST(ModelAutogradOps, Bf16ChunkedGradientsAreWithinTheirRoundingOfFloat64) {
  const int64_t rows = 12, hidden = 16, vocab = 97, chunk = 5;
  at::manual_seed(7);
  const at::Tensor h16 = at::randn({rows, hidden}, at::kDouble).to(at::kBFloat16);
  const at::Tensor w16 = (at::randn({vocab, hidden}, at::kDouble) * 0.3).to(at::kBFloat16);
  const at::Tensor targets = at::randint(0, vocab, {rows}, at::kLong);
  const at::Tensor gl = at::rand({rows}, at::kDouble);

  at::Tensor h = h16.clone().requires_grad_(true), w = w16.clone().requires_grad_(true);
  auto [logp, ent] = roll::model::chunked_token_log_probs(h, w, targets, false, chunk);
  (logp * gl.to(at::kFloat)).sum().backward();

  at::Tensor hd = h16.to(at::kDouble).requires_grad_(true), wd = w16.to(at::kDouble).requires_grad_(true);
  const at::Tensor logits = at::matmul(hd, wd.t());
  const at::Tensor all = at::log_softmax(logits, -1);
  const at::Tensor ref_logp = all.gather(1, targets.unsqueeze(1)).squeeze(1);
  (ref_logp * gl).sum().backward();

  const double u = std::ldexp(1.0, -9);
  const double max_logit = logits.abs().max().item<double>();
  EXPECT_LE((logp.to(at::kDouble) - ref_logp.detach()).abs().max().item<double>(), 4 * u * max_logit + 1e-6);
  // d loss / d logits in float64, and the magnitude sums of both products.
  const at::Tensor p = all.detach().exp();
  at::Tensor g = -p * gl.unsqueeze(1);
  g.scatter_add_(1, targets.unsqueeze(1), gl.unsqueeze(1));
  const at::Tensor g_err = 3 * u * g.abs() + 4 * u * max_logit * p * gl.abs().unsqueeze(1);
  const at::Tensor bound_w = at::matmul(g_err.t(), h16.to(at::kDouble).abs()) + 1e-7;
  const at::Tensor bound_h = at::matmul(g_err, w16.to(at::kDouble).abs()) + 1e-7;
  EXPECT_EQ(w.grad().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(((w.grad().to(at::kDouble) - wd.grad()).abs() <= bound_w).all().item<bool>())
      << "weight gradient: worst excess " << ((w.grad().to(at::kDouble) - wd.grad()).abs() - bound_w).max().item<double>();
  EXPECT_TRUE(((h.grad().to(at::kDouble) - hd.grad()).abs() <= bound_h).all().item<bool>())
      << "hidden gradient: worst excess " << ((h.grad().to(at::kDouble) - hd.grad()).abs() - bound_h).max().item<double>();
}

// RoPE's own backward against autograd through the formula written out (float64: the two differ
// only in the order of exact negations and of one sum of two terms).
TEST(ModelAutogradOps, RopeGradientEqualsAutogradOfTheFormula) {
  at::manual_seed(9);
  const at::Tensor x0 = at::randn({2, 5, 3, 8}, at::kDouble);   // [B, T, heads, head_dim]
  const at::Tensor angle = at::randn({2, 5, 1, 4}, at::kDouble);  // per position, broadcast over heads
  const at::Tensor cos = at::cat({angle.cos(), angle.cos()}, -1), sin = at::cat({angle.sin(), angle.sin()}, -1);
  const at::Tensor g = at::randn({2, 5, 3, 8}, at::kDouble);

  at::Tensor x = x0.clone().requires_grad_(true);
  const at::Tensor y = roll::model::rope(x, cos, sin);
  (y * g).sum().backward();

  at::Tensor xr = x0.clone().requires_grad_(true);
  const at::Tensor rotated = at::cat({-xr.slice(-1, 4), xr.slice(-1, 0, 4)}, -1);
  const at::Tensor yr = xr * cos + rotated * sin;
  (yr * g).sum().backward();

  EXPECT_TRUE(at::allclose(y.detach(), yr.detach(), 0, 1e-15));
  EXPECT_TRUE(at::allclose(x.grad(), xr.grad(), 0, 1e-15)) << (x.grad() - xr.grad()).abs().max().item<double>();
  // Without a gradient to keep, the plain formula runs (no autograd node).
  at::NoGradGuard no_grad;
  EXPECT_TRUE(at::allclose(roll::model::rope(x0, cos, sin), yr.detach(), 0, 1e-15));
}

// RoPE's one-pass CPU kernel (model/rope_kernel.h), fp32 and bf16, against the formula and its
// transpose in float64: head_dim 64 (whole vectors) and 20 (a scalar tail after 8 lanes); cos and
// sin with unequal halves, so that each half's term is checked. Each output is two products and a
// sum in fp32 (3 · 2^-24 of the terms' magnitude) rounded once to bf16 (2^-8 of the value).
TEST(ModelAutogradOps, RopeKernelMatchesTheFormulaInFloat64) {
  if (!roll::model::rope_kernel_applies(at::zeros({1, 1, 2}), at::zeros({1, 1, 2}), at::zeros({1, 1, 2})))
    GTEST_SKIP() << "the kernel needs AVX2";
  for (auto dtype : {at::kFloat, at::kBFloat16})
    for (int64_t D : {64, 20}) {
      SCOPED_TRACE(std::to_string(D) + (dtype == at::kBFloat16 ? " bf16" : " fp32"));
      at::manual_seed(D);
      const at::Tensor x0 = (at::randn({2, 5, 3, D}) * 2).to(dtype);
      const at::Tensor cos = at::randn({2, 5, 1, D}).to(dtype), sin = at::randn({2, 5, 1, D}).to(dtype);
      const at::Tensor g = at::randn({2, 5, 3, D}).to(dtype);
      ASSERT_TRUE(roll::model::rope_kernel_applies(x0, cos, sin));
      at::Tensor x = x0.clone().requires_grad_(true);
      const at::Tensor y = roll::model::rope(x, cos, sin);
      y.backward(g);

      const int64_t h = D / 2;
      const at::Tensor cd = cos.to(at::kDouble), sd = sin.to(at::kDouble), gd = g.to(at::kDouble);
      at::Tensor xd = x0.to(at::kDouble).requires_grad_(true);
      const at::Tensor rot = at::cat({-xd.slice(-1, h), xd.slice(-1, 0, h)}, -1);
      const at::Tensor ref = xd * cd + rot * sd;
      ref.backward(gd);
      const double u = dtype == at::kBFloat16 ? std::ldexp(1.0, -8) : 0;
      // The magnitude of each output's two terms: forward |a|·|cos| + |swap(a)|·|sin|; the transpose
      // takes each half's sine from the other half: |a|·|cos| + swap(|a|·|sin|).
      auto swap = [&](const at::Tensor& t) { return at::cat({t.slice(-1, h), t.slice(-1, 0, h)}, -1); };
      auto mag = [&](const at::Tensor& a) {
        const at::Tensor ad = a.to(at::kDouble).abs();
        return ad * cd.abs() + swap(ad) * sd.abs();
      };
      auto mag_t = [&](const at::Tensor& a) {
        const at::Tensor ad = a.to(at::kDouble).abs();
        return ad * cd.abs() + swap(ad * sd.abs());
      };
      const at::Tensor y_err = (y.detach().to(at::kDouble) - ref.detach()).abs();
      const at::Tensor y_bound = u * ref.detach().abs() + 3 * std::ldexp(1.0, -24) * mag(x0) + 1e-30;
      EXPECT_EQ((y_err > y_bound).sum().item<int64_t>(), 0) << (y_err - y_bound).max().item<double>();
      const at::Tensor gx_err = (x.grad().to(at::kDouble) - xd.grad()).abs();
      const at::Tensor gx_bound = u * xd.grad().abs() + 3 * std::ldexp(1.0, -24) * mag_t(g) + 1e-30;
      EXPECT_EQ((gx_err > gx_bound).sum().item<int64_t>(), 0) << (gx_err - gx_bound).max().item<double>();
    }
}
