// The engine's compute kernels against plain ATen: the matrix product on every path (gemv,
// weight streaming, bf16 tiles + BLAS), and paged attention (prefill chunks and decodes over
// scattered blocks) against dense causal attention.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "roll/engine/cpu_kernels.h"
#include "roll/engine/linear.h"
#include "roll/engine/paged_attention.h"
#include "roll/engine/paged_kv_cache.h"

using namespace roll::engine;

namespace {

float max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<float>();
}

// Dense reference: queries at positions [ctx - n, ctx) attend causally to keys [0, ctx).
at::Tensor dense_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t group) {
  const int64_t n = q.size(0), ctx = k.size(0), D = q.size(2);
  at::Tensor kk = k.repeat_interleave(group, 1).permute({1, 2, 0});  // [Hq, D, ctx]
  at::Tensor vv = v.repeat_interleave(group, 1).transpose(0, 1);      // [Hq, ctx, D]
  at::Tensor s = at::matmul(q.transpose(0, 1), kk) / std::sqrt(static_cast<double>(D));
  at::Tensor allowed = at::arange(ctx).unsqueeze(0) <= (at::arange(n) + (ctx - n)).unsqueeze(1);
  s = s.masked_fill(allowed.logical_not(), -INFINITY);
  return at::matmul(at::softmax(s, -1), vv).transpose(0, 1).reshape({n, -1});
}

}  // namespace

TEST(EngineKernels, LinearMatchesAtenOnEveryPath) {
  at::manual_seed(0);
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16})
    for (int64_t M : {1, 2, 3, 5, 8, 16, 17, 40}) {
      const int64_t K = 72, N = 150;  // K not a multiple of 16, N not of the tile
      at::Tensor x = at::randn({M, K});
      at::Tensor w = at::randn({N, K}).to(dt), b = at::randn({N}).to(dt);
      at::Tensor ref = at::linear(x, w.to(at::kFloat), b.to(at::kFloat));
      at::Tensor y = roll::engine::linear(x, w, b);
      ASSERT_EQ(y.scalar_type(), at::kFloat);
      EXPECT_LT(max_abs_diff(y, ref), 1e-4) << "M=" << M << " dtype=" << dt;
      EXPECT_LT(max_abs_diff(roll::engine::linear(x, w), at::linear(x, w.to(at::kFloat))), 1e-4);
    }
}

TEST(EngineKernels, DotAndAxpyOnBf16Rows) {
  at::manual_seed(1);
  at::Tensor a = at::randn({70}), b = at::randn({70}).to(at::kBFloat16);
  const auto* bp = reinterpret_cast<const uint16_t*>(b.data_ptr<at::BFloat16>());
  EXPECT_NEAR(kernels::dot(a.data_ptr<float>(), bp, 70), at::dot(a, b.to(at::kFloat)).item<float>(), 1e-4);
  at::Tensor y = at::randn({70}), y0 = y.clone();
  kernels::axpy(y.data_ptr<float>(), 0.5f, bp, 70);
  EXPECT_LT(max_abs_diff(y, y0 + 0.5 * b.to(at::kFloat)), 1e-5);
}

TEST(EngineKernels, PagedAttentionMatchesDenseCausalAttention) {
  at::manual_seed(2);
  const int64_t Hq = 6, Hkv = 2, D = 16, bs = 4, blocks = 40;
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    PagedKvCache cache({1, blocks, bs, Hkv, D}, dt);
    PagedAttention attn(cache, Hq);
    // Three sequences: a 10-token prefill, a 3-token chunk after 7 cached tokens, a decode at 13.
    const std::vector<int64_t> ctx{10, 10, 14}, qlen{10, 3, 1};
    // Scattered, non-monotonic block tables.
    const std::vector<std::vector<int32_t>> tables{{7, 3, 30}, {12, 0, 25}, {5, 39, 1, 18}};
    std::vector<at::Tensor> K, V;
    for (size_t s = 0; s < ctx.size(); ++s) {
      K.push_back(at::randn({ctx[s], Hkv, D}).to(dt).to(at::kFloat));
      V.push_back(at::randn({ctx[s], Hkv, D}).to(dt).to(at::kFloat));
    }
    // Earlier tokens' K/V are already in the cache.
    for (size_t s = 0; s < ctx.size(); ++s)
      for (int64_t p = 0; p < ctx[s] - qlen[s]; ++p) {
        cache.keys(0)[tables[s][p / bs]][p % bs].copy_(K[s][p]);
        cache.values(0)[tables[s][p / bs]][p % bs].copy_(V[s][p]);
      }
    AttentionMetadata m;
    m.max_blocks = 4;
    std::vector<int64_t> slots;
    std::vector<at::Tensor> qs, ks, vs;
    int64_t start = 0;
    for (size_t s = 0; s < ctx.size(); ++s) {
      m.q_start.push_back(start);
      m.q_len.push_back(qlen[s]);
      m.ctx_len.push_back(ctx[s]);
      for (int64_t b = 0; b < m.max_blocks; ++b)
        m.block_tables.push_back(b < static_cast<int64_t>(tables[s].size()) ? tables[s][b] : 0);
      for (int64_t p = ctx[s] - qlen[s]; p < ctx[s]; ++p) slots.push_back(tables[s][p / bs] * bs + p % bs);
      qs.push_back(at::randn({qlen[s], Hq, D}));
      ks.push_back(K[s].slice(0, ctx[s] - qlen[s]));
      vs.push_back(V[s].slice(0, ctx[s] - qlen[s]));
      start += qlen[s];
    }
    m.slots = at::tensor(slots, at::kLong);
    attn.set_step(&m);
    at::Tensor out = attn.attend(0, at::cat(qs), at::cat(ks), at::cat(vs));
    int64_t row = 0;
    for (size_t s = 0; s < ctx.size(); ++s) {
      at::Tensor ref = dense_attention(qs[s], K[s], V[s], Hq / Hkv);
      EXPECT_LT(max_abs_diff(out.slice(0, row, row + qlen[s]), ref), 1e-5) << "sequence " << s << " dtype " << dt;
      row += qlen[s];
    }
  }
}
