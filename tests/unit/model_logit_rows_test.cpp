// The LM head's fused row kernels (model/logit_rows.h) against float64 over the same bf16 logits:
// log-sum-exp, target log-prob and entropy, and the logit gradient of both, on rows whose length
// leaves a tail past the last 8 lanes.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/core/cpu_features.h"
#include "roll/model/logit_rows.h"

using namespace roll::model;

TEST(ModelLogitRows, MatchFloat64OverTheSameBf16Logits) {
  if (!roll::core::cpu_features().avx2) GTEST_SKIP() << "the kernels need AVX2; the head keeps ATen's path here";
  const int64_t rows = 5, vocab = 1003;
  at::manual_seed(21);
  const at::Tensor z = (at::randn({rows, vocab}) * 3).to(at::kBFloat16);
  const at::Tensor targets = at::randint(0, vocab, {rows}, at::kLong);
  const at::Tensor gl = at::randn({rows}), ge = at::randn({rows});
  at::Tensor lse = at::empty({rows}), logp = at::empty({rows}), ent = at::empty({rows});
  ASSERT_TRUE(logit_rows_apply(z, z));
  logit_rows_forward(z, targets, lse, logp, ent);

  const at::Tensor zd = z.to(at::kDouble);
  const at::Tensor lse_ref = at::logsumexp(zd, -1);
  const at::Tensor all = zd - lse_ref.unsqueeze(1);
  const at::Tensor p = all.exp();
  const at::Tensor ent_ref = -(p * all).sum(-1);
  const at::Tensor logp_ref = all.gather(1, targets.unsqueeze(1)).squeeze(1);
  // Each exp is fp32 (Cephes, ~1e-7 relative, of an exactly formed z - max) summed in double: the
  // sums are within ~2^-22 relative, so lse and log-probs within 2^-22 absolute plus the fp32
  // rounding of the result (2^-24 of |value|); the entropy's terms p·(z - max) add max|z - max|.
  const double u = std::ldexp(1.0, -22);
  const double spread = (zd.max() - zd.min()).item<double>();
  auto worst = [](const at::Tensor& a, const at::Tensor& b) { return (a.to(at::kDouble) - b).abs().max().item<double>(); };
  EXPECT_LE(worst(lse, lse_ref), u * (1 + lse_ref.abs().max().item<double>()));
  EXPECT_LE(worst(logp, logp_ref), u * (1 + logp_ref.abs().max().item<double>()));
  EXPECT_LE(worst(ent, ent_ref), u * (1 + spread));

  // Gradient: g = gl (onehot - p) - ge p (z - lse + H), rounded once to bf16 (2^-8 of |g|) after
  // fp32 arithmetic on an fp32 p (u relative) and z - lse + H (u (1 + spread) absolute).
  at::Tensor g = at::empty({rows, vocab}, at::kBFloat16);
  logit_rows_backward(z, targets, lse, ent, gl, ge, g);
  const at::Tensor gld = gl.to(at::kDouble).unsqueeze(1), ged = ge.to(at::kDouble).unsqueeze(1);
  at::Tensor g_ref = -gld * p - ged * p * (all + ent_ref.unsqueeze(1));
  g_ref.scatter_add_(1, targets.unsqueeze(1), gld);
  const at::Tensor bound = std::ldexp(1.0, -8) * g_ref.abs() +
                           4 * u * (1 + spread) * p * (gld.abs() + ged.abs() * (1 + all.abs() + ent_ref.abs().unsqueeze(1))) +
                           1e-30;
  const at::Tensor err = (g.to(at::kDouble) - g_ref).abs();
  EXPECT_EQ((err > bound).sum().item<int64_t>(), 0) << "worst excess " << (err - bound).max().item<double>();

  // Without the entropy term: only the log-prob's gradient, and no entropy is formed.
  at::Tensor g2 = at::empty({rows, vocab}, at::kBFloat16);
  logit_rows_backward(z, targets, lse, at::Tensor(), gl, at::Tensor(), g2);
  at::Tensor g2_ref = -gld * p;
  g2_ref.scatter_add_(1, targets.unsqueeze(1), gld);
  const at::Tensor err2 = (g2.to(at::kDouble) - g2_ref).abs();
  const at::Tensor bound2 = std::ldexp(1.0, -8) * g2_ref.abs() + 4 * u * p * gld.abs() + 1e-30;
  EXPECT_EQ((err2 > bound2).sum().item<int64_t>(), 0) << "worst excess " << (err2 - bound2).max().item<double>();
}
