// The engine's compute kernels against plain ATen: the matrix product on every path the CPU has
// (gemv, weight streaming, the AVX2 split and packed kernels, bf16 tiles + BLAS, native bf16
// products), and paged attention (prefill chunks and decodes over scattered blocks) against
// dense causal attention.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "roll/core/cpu_features.h"
#include "roll/engine/cpu_kernels.h"
#include "roll/engine/linear.h"
#include "roll/engine/model_runner.h"
#include "roll/engine/paged_attention.h"
#include "roll/engine/paged_kv_cache.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"

using namespace roll;
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

// One batch kernel (AMX tiles or the vdpbf16ps pair kernel) called directly on x packed in pairs,
// against ATen's fp32 product of the same bf16-rounded inputs: fp32 sums of K = 2112 terms
// |x w| <~ 10 in other orders, |y| <~ 100: sqrt(2112)*eps*100 ~ 5e-4 -> 2e-3.
template <typename Kernel>
void expect_batch_kernel_matches_aten(int64_t M, int64_t N, const Kernel& kernel) {
  const int64_t K = 2112;
  at::Tensor x = at::randn({M, K}).to(at::kBFloat16).to(at::kFloat), w = at::randn({N, K}).to(at::kBFloat16);
  std::vector<uint16_t> xp(static_cast<size_t>(kernels::x_pairs_size(M, K)));
  kernels::pack_x_pairs(x.data_ptr<float>(), M, K, xp.data());
  at::Tensor y = at::full({M, N}, NAN);
  kernel(xp.data(), M, K, reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>()), 0, N, y.data_ptr<float>(), N);
  EXPECT_LT(max_abs_diff(y, at::linear(x, w.to(at::kFloat))), 2e-3) << "M=" << M << " N=" << N;
}

// linear() on the CPU's native bf16 batch path with N = 150 and rows of x packed in parallel.
void expect_native_batch_linear_matches_aten() {
  const bool saved = roll::engine::linear_native_bf16();
  roll::engine::linear_native_bf16() = true;
  for (int64_t M : {40, 100}) {
    at::Tensor x = at::randn({M, 96}), w = at::randn({150, 96}).to(at::kBFloat16);
    at::Tensor ref = at::linear(x.to(at::kBFloat16).to(at::kFloat), w.to(at::kFloat));
    // fp32 sums of 96 terms, |y| <~ 40: sqrt(96)*eps*40 ~ 5e-5 -> 1e-4.
    EXPECT_LT(max_abs_diff(roll::engine::linear(x, w), ref), 1e-4) << "M=" << M;
  }
  roll::engine::linear_native_bf16() = saved;
}

}  // namespace

TEST(EngineKernels, LinearMatchesAtenOnEveryPath) {
  at::manual_seed(0);
  const bool saved = roll::engine::linear_native_bf16();
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16})
    for (int64_t M : {1, 2, 3, 5, 8, 16, 17, 40}) {
      const int64_t K = 72, N = 150;  // K not a multiple of 16, N not of the tile
      at::Tensor x = at::randn({M, K});
      at::Tensor w = at::randn({N, K}).to(dt), b = at::randn({N}).to(dt);
      at::Tensor ref = at::linear(x, w.to(at::kFloat), b.to(at::kFloat));
      roll::engine::linear_native_bf16() = false;
      at::Tensor y = roll::engine::linear(x, w, b);
      ASSERT_EQ(y.scalar_type(), at::kFloat);
      // Both sides read the same (bf16-exact) weights; fp32 dots of 72 N(0,1)² terms in other orders,
      // |y| ≲ 40: sqrt(72)·eps·40 ≈ 4e-5 -> 1e-4.
      EXPECT_LT(max_abs_diff(y, ref), 1e-4) << "M=" << M << " dtype=" << dt;
      EXPECT_LT(max_abs_diff(roll::engine::linear(x, w), at::linear(x, w.to(at::kFloat))), 1e-4);
      // The native bf16 paths, where this CPU has them (vdpbf16ps streaming for small M, ATen's bf16
      // product above): activations rounded to bf16, fp32 sums, above the threshold the output
      // rounded to bf16. Against fp32 ATen on the same rounded activations the difference is the
      // output's rounding (half a bf16 ulp: 2^-8 relative, 7 fraction bits) plus the fp32 term above.
      if (dt == at::kBFloat16 && core::cpu_features().native_bf16()) {
        roll::engine::linear_native_bf16() = true;
        at::Tensor yn = roll::engine::linear(x, w);
        at::Tensor refn = at::linear(x.to(at::kBFloat16).to(at::kFloat), w.to(at::kFloat));
        EXPECT_TRUE(((yn - refn).abs() <= refn.abs() * std::ldexp(1.0, -8) + 1e-4).all().item<bool>()) << "M=" << M;
      }
    }
  roll::engine::linear_native_bf16() = saved;
  // Without native bf16, small batches on rows over 2048 take the AVX2 split kernel (the default)
  // or the streaming kernel (--bf16-products widened), larger ones the AVX2 packed kernel or
  // widened tiles through BLAS; all against ATen: fp32 sums of 2100 terms, |y| <~ 100:
  // sqrt(2100)*eps*100 ~ 5e-4 -> 3e-3.
  for (const char* mode : {"split", "widened"}) {
    ASSERT_TRUE(roll::engine::select_bf16_products(mode));
    for (int64_t M : {2, 5, 12, 13, 40}) {
      at::Tensor x = at::randn({M, 2100}), w = at::randn({40, 2100}).to(at::kBFloat16);
      EXPECT_LT(max_abs_diff(roll::engine::linear(x, w), at::linear(x, w.to(at::kFloat))), 3e-3) << mode << " M=" << M;
    }
  }
  ASSERT_TRUE(roll::engine::select_bf16_products("native"));
  roll::engine::linear_native_bf16() = saved;
  // No rows (a step that samples nothing): an empty product on every path, nothing read.
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    const at::Tensor y = roll::engine::linear(at::empty({0, 72}), at::randn({150, 72}).to(dt));
    EXPECT_EQ(y.size(0), 0);
    EXPECT_EQ(y.size(1), 150);
  }
}

// The vdpbf16ps kernel's other layout: x rows too long to sit in L1 beside one weight row (4 rows
// of K = 2100 bf16 > 16 KB) go through tiles of 4 weight rows; K not a multiple of 32 tests the
// masked tail. Against ATen's fp32 product of the same bf16-rounded inputs: fp32 sums of 2100
// terms |x w| ≲ 10 in other orders, |y| ≲ 100: sqrt(2100)·eps·100 ≈ 5e-4 -> 2e-3.
TEST(EngineKernels, Dpbf16KernelMatchesAtenOnLongRows) {
  if (!core::cpu_features().avx512_bf16) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  at::manual_seed(3);
  for (int64_t M : {1, 4, 7}) {
    const int64_t K = 2100, N = 37;
    at::Tensor x = at::randn({M, K}).to(at::kBFloat16).to(at::kFloat), w = at::randn({N, K}).to(at::kBFloat16);
    std::vector<uint16_t> xb(static_cast<size_t>(M * kernels::bf16_row_stride(K)));
    kernels::float_to_bf16_rows(x.data_ptr<float>(), M, K, xb.data());
    at::Tensor y = at::empty({M, N});
    kernels::matmul_wt_dpbf16(xb.data(), M, K, reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>()), 0, N,
                              y.data_ptr<float>(), N);
    EXPECT_LT(max_abs_diff(y, at::linear(x, w.to(at::kFloat))), 2e-3) << "M=" << M;
  }
  EXPECT_EQ(kernels::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // a tie rounds to even
  EXPECT_EQ(kernels::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
}

// The AMX kernel's shapes, called directly: one block of x rows (four weight blocks at a time,
// then what is left of N), and each weight block against up to 4 x blocks (M = 100: 4 + 3, the
// last one part full; M = 260: 17 blocks, past the 14 that stay in L2 at once); N = 80 is whole
// blocks, N = 90 ends in a block of 10 rows. Then linear() on AMX.
TEST(EngineKernels, AmxKernelMatchesAtenOnLongRows) {
  if (!kernels::amx_usable()) GTEST_SKIP() << "this CPU (or OS) gives no AMX-BF16 tiles";
  at::manual_seed(5);
  for (int64_t M : {1, 7, 16, 17, 40, 100, 260})
    for (int64_t N : {80, 90}) expect_batch_kernel_matches_aten(M, N, kernels::matmul_wt_amx);
  expect_native_batch_linear_matches_aten();
}

// The vdpbf16ps pair kernel's shapes, called directly: 1 to 4 blocks of 16 x rows at once (M = 7:
// one part-full block; 40: three, the last part full; 100: a group of 4 then 3; 260: 17 blocks),
// and the weight rows in tiles of 6 / 8 / 12 / 16 (by the blocks at once) with what is left of N
// (37, 90) in a shorter tile. Then linear() on it.
TEST(EngineKernels, PairsKernelMatchesAtenOnLongRows) {
  if (!core::cpu_features().avx512_bf16) GTEST_SKIP() << "this CPU has no AVX512-BF16";
  at::manual_seed(7);
  for (int64_t M : {1, 7, 16, 40, 100, 260})
    for (int64_t N : {37, 48, 90}) expect_batch_kernel_matches_aten(M, N, kernels::matmul_wt_dpbf16_pairs);
  if (!kernels::amx_usable()) expect_native_batch_linear_matches_aten();  // else linear() takes the AMX tiles
}

// Several weights on one input (the runner's q/k/v and gate/up) give what linear() gives for
// each, bit for bit, on every path: each output row is computed whole by one task either way.
TEST(EngineKernels, SharedInputProductsEqualSeparateOnes) {
  at::manual_seed(6);
  const bool saved = roll::engine::linear_native_bf16();
  for (bool native : {false, true})
    for (at::ScalarType dt : {at::kFloat, at::kBFloat16})
      for (int64_t M : {1, 3, 8, 40}) {
        roll::engine::linear_native_bf16() = native && core::cpu_features().native_bf16();
        at::Tensor x = at::randn({M, 96});
        std::vector<at::Tensor> ws = {at::randn({150, 96}).to(dt), at::randn({24, 96}).to(dt), at::randn({70, 96}).to(dt)};
        std::vector<at::Tensor> bs = {at::randn({150}).to(dt), at::Tensor(), at::randn({70}).to(dt)};
        std::vector<at::Tensor> ys = roll::engine::linear_shared_input(x, ws, bs);
        ASSERT_EQ(ys.size(), 3u);
        for (size_t i = 0; i < ws.size(); ++i)
          EXPECT_TRUE(at::equal(ys[i], roll::engine::linear(x, ws[i], bs[i])))
              << "weight " << i << " M=" << M << " dtype=" << dt << " native=" << native;
      }
  roll::engine::linear_native_bf16() = saved;
}

// SwiGLU's silu(g) * u against float64 (ATen): the fp32 result of a few roundings of a
// polynomial exp (relative error ~1e-7) and one division, so a relative bound of 1e-6; values of g
// from -100 (exp overflow side, silu ~ 0) to 100, n not a multiple of 8 (the scalar tail).
TEST(EngineKernels, SiluMulMatchesFloat64) {
  at::manual_seed(9);
  at::Tensor g = at::cat({at::linspace(-100, 100, 2001), 4 * at::randn({1003})});
  at::Tensor u = at::randn({g.numel()});
  at::Tensor want = (g.to(at::kDouble) * at::sigmoid(g.to(at::kDouble)) * u.to(at::kDouble));
  at::Tensor got = g.clone();
  roll::engine::kernels::silu_mul(got.data_ptr<float>(), u.data_ptr<float>(), got.numel());
  const at::Tensor err = (got.to(at::kDouble) - want).abs();
  const at::Tensor bound = 1e-6 * want.abs() + 1e-30;
  EXPECT_TRUE((err <= bound).all().item<bool>()) << "worst relative error "
                                                  << (err / (want.abs() + 1e-30)).max().item<double>();
}

// Outputs of 32 MB and more are reused between calls (linear.cpp, product_output), but never
// while anyone holds one: a held output keeps its values through later products of its shape,
// and a released one is refilled whole. Every path this CPU has.
TEST(EngineKernels, LargeOutputsAreReusedOnlyWhenReleased) {
  at::manual_seed(8);
  const bool saved = roll::engine::linear_native_bf16();
  for (bool native : {false, true})
    for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
      roll::engine::linear_native_bf16() = native && core::cpu_features().native_bf16();
      const int64_t M = 64, N = 131072, K = 64;  // 64 x 131072 fp32 = 32 MB
      at::Tensor w = (0.1 * at::randn({N, K})).to(dt);
      at::Tensor x1 = at::randn({M, K}), x2 = at::randn({M, K});
      at::Tensor y1 = roll::engine::linear(x1, w);
      const at::Tensor y1_copy = y1.clone();
      at::Tensor y2 = roll::engine::linear(x2, w);
      EXPECT_NE(y1.data_ptr(), y2.data_ptr());
      EXPECT_TRUE(at::equal(y1, y1_copy)) << "a held output was overwritten, dtype " << dt;
      at::Tensor row = y2[0];  // a view keeps y2's storage held
      y2 = at::Tensor();
      at::Tensor y3 = roll::engine::linear(x1, w);
      EXPECT_NE(y3.data_ptr(), row.data_ptr());
      EXPECT_TRUE(at::equal(y3, y1_copy)) << "dtype " << dt << " native " << native;
      y1 = at::Tensor();
      y3 = at::Tensor();
      EXPECT_TRUE(at::equal(roll::engine::linear(x1, w), y1_copy));
    }
  roll::engine::linear_native_bf16() = saved;
}

// The fp32 small-M kernels on long rows (K = 2100: the AVX-512 tiles and masked tails), each path
// this CPU has called directly against ATen: fp32 sums of 2100 N(0,1)² terms in other orders,
// |y| ≲ 200: sqrt(2100)·eps·200 ≈ 1e-3 -> 3e-3.
TEST(EngineKernels, Fp32StreamingKernelsMatchAtenOnLongRows) {
  at::manual_seed(4);
  for (int64_t M : {1, 3, 4, 7}) {
    const int64_t K = 2100, N = 37;
    at::Tensor x = at::randn({M, K}), w = at::randn({N, K});
    const at::Tensor ref = at::linear(x, w);
    at::Tensor y = at::empty({M, N});
    if (core::cpu_features().avx2) {
      kernels::matmul_wt(x.data_ptr<float>(), M, K, w.data_ptr<float>(), 0, N, y.data_ptr<float>(), N);
      EXPECT_LT(max_abs_diff(y, ref), 3e-3) << "AVX2, M=" << M;
    }
    if (core::cpu_features().avx512f) {
      y.zero_();
      kernels::matmul_wt_avx512(x.data_ptr<float>(), M, K, w.data_ptr<float>(), 0, N, y.data_ptr<float>(), N);
      EXPECT_LT(max_abs_diff(y, ref), 3e-3) << "AVX-512, M=" << M;
    }
  }
}

// The AVX2 kernel over x split in even and odd elements, called directly: K = 2100 leaves a tail
// of 4 past the last block of 16, N = 37 ends in a part tile, M = 70 ends in a part block of x,
// and rows 5..29 alone leave the other outputs untouched. Against ATen's fp32 product of the same
// bf16 weights: fp32 sums of 2100 terms |x w| <~ 10 in other orders, |y| <~ 100:
// sqrt(2100)*eps*100 ~ 5e-4 -> 3e-3.
TEST(EngineKernels, SplitKernelMatchesAtenOnLongRows) {
  if (!kernels::have_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  at::manual_seed(5);
  for (int64_t M : {1, 2, 4, 5, 13, 70}) {
    const int64_t K = 2100, N = 37;
    at::Tensor x = at::randn({M, K}), w = at::randn({N, K}).to(at::kBFloat16);
    std::vector<float> xs(static_cast<size_t>(M * kernels::x_split_stride(K)));
    kernels::split_x_even_odd(x.data_ptr<float>(), M, K, xs.data());
    const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
    const at::Tensor ref = at::linear(x, w.to(at::kFloat));
    at::Tensor y = at::full({M, N}, NAN);
    kernels::matmul_wt_split(xs.data(), M, K, wp, 5, 29, y.data_ptr<float>(), N);
    EXPECT_LT(max_abs_diff(y.narrow(1, 5, 24), ref.narrow(1, 5, 24)), 3e-3) << "M=" << M;
    EXPECT_TRUE(y.narrow(1, 0, 5).isnan().all().item<bool>() && y.narrow(1, 29, 8).isnan().all().item<bool>());
    kernels::matmul_wt_split(xs.data(), M, K, wp, 0, N, y.data_ptr<float>(), N);
    EXPECT_LT(max_abs_diff(y, ref), 3e-3) << "M=" << M;
  }
}

// The AVX2 kernel over packed weight panels, called directly: K = 2100 is cut into 3 blocks of
// k (sums carried in y) whose last leaves a tail of 4 past a multiple of 16, rows 5..29 are one
// whole panel of 16 and 8 rows left to the streaming kernel (the other outputs untouched), and M
// = 1, 7, 13, 70 end in part tiles of 6 rows. Against ATen's fp32 product of the same bf16
// weights: fp32 sums of 2100 terms |x w| <~ 10 in other orders, |y| <~ 100: sqrt(2100)*eps*100
// ~ 5e-4 -> 3e-3.
TEST(EngineKernels, PackedKernelMatchesAtenOnLongRows) {
  if (!kernels::have_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  at::manual_seed(6);
  for (int64_t M : {1, 6, 7, 13, 70}) {
    const int64_t K = 2100, N = 37;
    at::Tensor x = at::randn({M, K}), w = at::randn({N, K}).to(at::kBFloat16);
    const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
    const at::Tensor ref = at::linear(x, w.to(at::kFloat));
    std::vector<uint16_t> buffer(static_cast<size_t>(kernels::packed_buffer_size(K)));
    at::Tensor y = at::full({M, N}, NAN);
    kernels::matmul_wt_packed(x.data_ptr<float>(), M, K, wp, 5, 29, y.data_ptr<float>(), N, buffer.data());
    EXPECT_LT(max_abs_diff(y.narrow(1, 5, 24), ref.narrow(1, 5, 24)), 3e-3) << "M=" << M;
    EXPECT_TRUE(y.narrow(1, 0, 5).isnan().all().item<bool>() && y.narrow(1, 29, 8).isnan().all().item<bool>());
    kernels::matmul_wt_packed(x.data_ptr<float>(), M, K, wp, 0, N, y.data_ptr<float>(), N, buffer.data());
    EXPECT_LT(max_abs_diff(y, ref), 3e-3) << "M=" << M;
  }
}

// The same kernel on fp32 weights (panels of fp32, 8x8 transposes), K = 2100 in 3 blocks of k
// with a tail of 4 past a multiple of 8, and linear() on its fp32 path above the streaming cut
// with BLAS turned off and on. Against ATen's fp32 product: the bound above.
TEST(EngineKernels, PackedKernelMatchesAtenOnFp32Weights) {
  if (!kernels::have_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  at::manual_seed(7);
  for (int64_t M : {1, 7, 70}) {
    const int64_t K = 2100, N = 37;
    at::Tensor x = at::randn({M, K}), w = at::randn({N, K});
    std::vector<float> buffer(static_cast<size_t>(kernels::packed_buffer_size(K)));
    at::Tensor y = at::full({M, N}, NAN);
    kernels::matmul_wt_packed(x.data_ptr<float>(), M, K, w.data_ptr<float>(), 5, 29, y.data_ptr<float>(), N,
                              buffer.data());
    const at::Tensor ref = at::linear(x, w);
    EXPECT_LT(max_abs_diff(y.narrow(1, 5, 24), ref.narrow(1, 5, 24)), 3e-3) << "M=" << M;
    EXPECT_TRUE(y.narrow(1, 0, 5).isnan().all().item<bool>() && y.narrow(1, 29, 8).isnan().all().item<bool>());
  }
  const bool saved = roll::engine::linear_packed_fp32();
  at::Tensor x = at::randn({40, 2100}), w = at::randn({150, 2100});
  for (bool packed : {true, false}) {
    roll::engine::linear_packed_fp32() = packed;
    EXPECT_LT(max_abs_diff(roll::engine::linear(x, w), at::linear(x, w)), 3e-3) << "packed=" << packed;
  }
  roll::engine::linear_packed_fp32() = saved;
}

// Each thread count restores the previous one when it goes out of scope.
struct AtenThreads {
  explicit AtenThreads(int n) : saved(at::get_num_threads()) { at::set_num_threads(n); }
  ~AtenThreads() { at::set_num_threads(saved); }
  int saved;
};

// The engine's parallel_for really spreads over the threads it is given (it ran on one thread,
// silently, while the engine was built without OpenMP), and the split does not change results.
TEST(EngineKernels, KernelsRunOnEveryThreadWithTheSameResults) {
  at::manual_seed(2);
  at::Tensor x1 = at::randn({1, 896}), x5 = at::randn({5, 896}), x40 = at::randn({40, 896});
  for (at::ScalarType dt : {at::kFloat, at::kBFloat16}) {
    at::Tensor w = at::randn({1000, 896}).to(dt);
    std::vector<at::Tensor> serial;
    {
      AtenThreads one(1);
      for (const at::Tensor& x : {x1, x5, x40}) serial.push_back(roll::engine::linear(x, w));
    }
    AtenThreads two(2);
    EXPECT_EQ(roll::engine::parallel_for_width(), 2);
    int i = 0;
    for (const at::Tensor& x : {x1, x5, x40}) {
      const int64_t M = x.size(0);
      const float d = max_abs_diff(roll::engine::linear(x, w), serial[i++]);
      // The streaming kernel computes each weight row's outputs whole in one task: the split cannot
      // change bits. BLAS (gemv at M = 1 fp32, gemm above the threshold) may block K by its thread
      // count: fp32 dots of 896 N(0,1)² terms, |y| ≲ 140: sqrt(896)·eps·140 ≈ 5e-4.
      if (M <= roll::engine::linear_small_m_threshold(dt, x.size(1)) && !(dt == at::kFloat && M == 1))
        EXPECT_EQ(d, 0.0f) << "M=" << M << " dtype=" << dt;
      else if (dt == at::kBFloat16 && roll::engine::linear_native_bf16()) {
        // The native path rounds the output to bf16: two fp32 sums ~5e-4 apart can round one bf16
        // ulp apart, 2^(e - 7) for the largest |y| in [2^e, 2^(e+1)).
        const float top = serial[i - 1].abs().max().item<float>();
        EXPECT_LE(d, std::ldexp(1.0f, std::ilogb(top) - 7)) << "M=" << M;
      } else
        EXPECT_LT(d, 5e-4) << "M=" << M << " dtype=" << dt;
    }
  }
}

TEST(EngineKernels, DotAndAxpyOnBf16Rows) {
  at::manual_seed(1);
  at::Tensor a = at::randn({70}), b = at::randn({70}).to(at::kBFloat16);
  const auto* bp = reinterpret_cast<const uint16_t*>(b.data_ptr<at::BFloat16>());
  // fp32 dots of 70 N(0,1)² terms in two orders, |a·b| ≲ 30: sqrt(70)·eps·30 ≈ 3e-5 -> 1e-4.
  EXPECT_NEAR(kernels::dot(a.data_ptr<float>(), bp, 70), at::dot(a, b.to(at::kFloat)).item<float>(), 1e-4);
  at::Tensor y = at::randn({70}), y0 = y.clone();
  kernels::axpy(y.data_ptr<float>(), 0.5f, bp, 70);
  EXPECT_LT(max_abs_diff(y, y0 + 0.5 * b.to(at::kFloat)), 1e-5);  // one FMA vs two roundings at |y| ≲ 5: 1 ulp
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
      // fp32: 16-term q·k, a softmax over ≤ 14 keys and a weighted sum of |v| ≲ 4, each ~sqrt(16)·eps: ~5e-6.
      EXPECT_LT(max_abs_diff(out.slice(0, row, row + qlen[s]), ref), 1e-5) << "sequence " << s << " dtype " << dt;
      row += qlen[s];
    }
  }
}

// The engine's forward (ModelRunner) computes what the model computes: logits of two sequences
// prefilled through the paged cache equal the plain padded forward, for qwen2 (q/k/v bias),
// qwen3 (q/k norm) and llama (untied head); and the model's own forward_tokens runs on the same
// PagedAttention backend.
TEST(EngineKernels, ModelRunnerMatchesThePlainForward) {
  for (const char* arch : {"qwen2", "qwen3", "llama"}) {
    roll::model::ModelConfig c = roll::model::preset_config("tiny", arch);
    c.vocab_size = 200;
    c.tie_word_embeddings = std::string(arch) != "llama";
    auto m = roll::model::Transformer::random(c, at::kFloat, 21, 0.2);
    {
      at::NoGradGuard g;
      at::manual_seed(21);
      for (auto& [name, t] : const_cast<roll::model::NamedTensors&>(m->named_parameters()))
        if (name.find("norm") != std::string::npos || name.find("bias") != std::string::npos)
          t.add_(at::randn(t.sizes()) * 0.1);
    }
    auto runner_model = std::const_pointer_cast<const roll::model::Transformer>(m);
    ModelRunner runner(runner_model);
    const int64_t bs = 4, lens[2] = {7, 10};
    auto make_meta = [&](AttentionMetadata& meta, std::vector<int64_t>& ids, std::vector<int64_t>& pos) {
      int64_t start = 0, block = 0;
      meta.max_blocks = 3;
      std::vector<int64_t> slots;
      for (int s = 0; s < 2; ++s) {
        meta.q_start.push_back(start);
        meta.q_len.push_back(lens[s]);
        meta.ctx_len.push_back(lens[s]);
        for (int b = 0; b < 3; ++b) meta.block_tables.push_back(static_cast<int32_t>(5 - block - b));
        for (int64_t p = 0; p < lens[s]; ++p) {
          ids.push_back((s * 37 + p * 11) % c.vocab_size);
          pos.push_back(p);
          slots.push_back(meta.block_tables[s * 3 + p / bs] * bs + p % bs);
        }
        block += 3;
        start += lens[s];
      }
      meta.slots = at::tensor(slots, at::kLong);
    };
    AttentionMetadata meta;
    std::vector<int64_t> ids, pos;
    make_meta(meta, ids, pos);
    at::NoGradGuard g;
    PagedKvCache cache({c.num_hidden_layers, 6, bs, c.num_key_value_heads, c.head_dim}, at::kFloat);
    PagedAttention attn(cache, c.num_attention_heads);
    attn.set_step(&meta);
    const int64_t N = static_cast<int64_t>(ids.size());
    at::Tensor logits = runner.forward(at::tensor(ids, at::kLong), at::tensor(pos, at::kLong), attn,
                                       at::arange(N, at::kLong));
    PagedKvCache cache2({c.num_hidden_layers, 6, bs, c.num_key_value_heads, c.head_dim}, at::kFloat);
    PagedAttention attn2(cache2, c.num_attention_heads);
    attn2.set_step(&meta);
    at::Tensor via_model = m->lm_head(m->forward_tokens(at::tensor(ids, at::kLong), at::tensor(pos, at::kLong), attn2));
    // fp32 forwards in other shapes: ~16 fp32 reductions of ~64 terms in quadrature, √16·√64·eps ≈ 4e-6
    // relative, on |z| ≲ 7.
    EXPECT_LT(max_abs_diff(logits, via_model), 1e-4) << arch;
    for (int s = 0, row = 0; s < 2; row += lens[s], ++s) {
      at::Tensor x = at::tensor(std::vector<int64_t>(ids.begin() + row, ids.begin() + row + lens[s]), at::kLong).unsqueeze(0);
      at::Tensor ref = m->logits(x, at::ones_like(x), at::arange(lens[s], at::kLong).unsqueeze(0))[0];
      EXPECT_LT(max_abs_diff(logits.slice(0, row, row + lens[s]), ref), 1e-4) << arch << " sequence " << s;
    }
  }
}
