// The LoRA merge kernel (model/lora_merge_kernel.h) against a float64 product by ATen, on every
// kernel this CPU runs, fp32 and bf16 weights, shapes with row and column tails; bf16 ties round
// to even; lora_merge_into's fallback for tensors the kernel does not take.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "roll/core/cpu_features.h"
#include "roll/model/lora.h"
#include "roll/model/lora_merge_kernel.h"

using namespace roll::model;

namespace {

std::vector<LoraMergeKernel> kernels_here() {
  std::vector<LoraMergeKernel> k{LoraMergeKernel::kPortable};
  if (roll::core::cpu_features().avx2) k.push_back(LoraMergeKernel::kAvx2);
  return k;
}

const char* name_of(LoraMergeKernel k) { return k == LoraMergeKernel::kAvx2 ? "avx2" : "portable"; }

// |out - ref| within the error of a (rank + 1)-term fp32 sum (Higham's gamma over the sum of the
// terms' magnitudes) plus, for bf16, the one final rounding (half an ulp: 2^-8 of the value).
void expect_close(const at::Tensor& out, const at::Tensor& w, const at::Tensor& a, const at::Tensor& b, double scale,
                  const std::string& what) {
  const at::Tensor ref = w.to(at::kDouble) + scale * at::mm(b.to(at::kDouble), a.to(at::kDouble));
  const at::Tensor terms = w.to(at::kDouble).abs() + std::abs(scale) * at::mm(b.to(at::kDouble).abs(), a.to(at::kDouble).abs());
  const double u32 = std::ldexp(1.0, -24);
  const double gamma = (a.size(0) + 1) * u32 / (1 - (a.size(0) + 1) * u32);
  at::Tensor tol = gamma * terms;
  if (out.scalar_type() == at::kBFloat16) tol = tol + std::ldexp(1.0, -8) * (ref.abs() + gamma * terms);
  const at::Tensor err = (out.to(at::kDouble) - ref).abs();
  const at::Tensor over = err > tol;
  EXPECT_EQ(over.sum().item<int64_t>(), 0) << what << ": worst excess " << (err - tol).max().item<double>();
}

}  // namespace

TEST(ModelLoraMergeKernel, EveryKernelMatchesAFloat64ProductOnFp32AndBf16) {
  at::manual_seed(7);
  struct Shape {
    int64_t rows, cols, rank;
  };
  // 16-column tiles, 4-row tiles and 256-column blocks, each with and without a tail.
  for (const Shape s : {Shape{7, 45, 3}, Shape{130, 272, 16}, Shape{64, 512, 1}, Shape{3, 16, 8}, Shape{33, 300, 32}})
    for (const auto dtype : {at::kFloat, at::kBFloat16})
      for (const LoraMergeKernel k : kernels_here()) {
        const at::Tensor w = at::randn({s.rows, s.cols}).to(dtype);
        const at::Tensor a = at::rand({s.rank, s.cols}) * 2 - 1;
        const at::Tensor b = at::randn({s.rows, s.rank}) * 0.1;
        const double scale = 2.0;
        at::Tensor out = at::full_like(w, 1e30);
        lora_merge_cpu(out, w, a, b, scale, k);
        expect_close(out, w, a, b, scale,
                     fmt::format("{} {} {}x{} rank {}", name_of(k), c10::toString(dtype), s.rows, s.cols, s.rank));
      }
}

TEST(ModelLoraMergeKernel, Bf16TiesRoundToEven) {
  // 1 and 1 + 2^-7 are neighbours in bf16; adding 2^-8 lands exactly halfway to the next one.
  const float even = 1.0f, odd = 1.0f + std::ldexp(1.0f, -7);
  for (const LoraMergeKernel k : kernels_here()) {
    at::Tensor w = at::empty({2, 32});
    w[0].fill_(even);
    w[1].fill_(odd);
    w = w.to(at::kBFloat16);
    const at::Tensor a = at::full({1, 32}, std::ldexp(1.0f, -8));
    const at::Tensor b = at::ones({2, 1});
    at::Tensor out = at::empty_like(w);
    lora_merge_cpu(out, w, a, b, 1.0, k);
    const at::Tensor got = out.to(at::kFloat);
    EXPECT_TRUE(at::equal(got[0], at::full({32}, even))) << name_of(k) << ": " << got[0];
    EXPECT_TRUE(at::equal(got[1], at::full({32}, 1.0f + std::ldexp(1.0f, -6)))) << name_of(k) << ": " << got[1];
  }
}

TEST(ModelLoraMergeKernel, TensorsTheKernelDoesNotTakeGoThroughAtenWithTheSameResult) {
  at::manual_seed(3);
  const at::Tensor w = at::randn({40, 24}).t();  // not contiguous
  const at::Tensor a = at::randn({4, 40}) * 0.2;
  const at::Tensor b = at::randn({24, 4}) * 0.2;
  at::Tensor out = at::empty({24, 40});
  EXPECT_FALSE(lora_merge_kernel_applies(out, w));
  lora_merge_into(out, w, a, b, 0.5, "m");
  expect_close(out, w, a, b, 0.5, "fallback");
}
