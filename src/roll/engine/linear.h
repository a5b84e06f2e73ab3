#pragma once
// The engine's matrix product y = x w^T (+ b): fp32 activations against fp32 or bf16 weights,
// fp32 out. Picks the path by the number of rows and the CPU: a weight-streaming kernel for
// decode-sized batches (gemv at M = 1 for fp32), BLAS for large fp32 batches, and for large bf16
// batches AMX tiles where the CPU has AMX-BF16 (inputs rounded to bf16, fp32 out), else a
// vdpbf16ps kernel over x packed in pairs where it has AVX512-BF16 (inputs rounded to bf16, fp32
// out; ATen's bf16 product where K is not a multiple of 32), else on AVX2 a kernel over panels of
// 16 weight rows repacked per call (batches up to 24 rows on rows up to 2048 and small
// batches on longer rows take a kernel that widens each 16 weights in two operations against x
// split in even and odd elements), else weight tiles widened to fp32 in cache then multiplied by
// BLAS (ATen's bf16 GEMM without those instructions is a scalar loop, ~100x slower).
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace roll::engine {

// x [M, K] fp32 contiguous, w [N, K] fp32/bf16 contiguous, b [N] or undefined -> [M, N] fp32.
at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {});

// The products of one input with several weights (q, k, v; gate, up), bit for bit what linear()
// gives for each: on the native bf16 kernels x is rounded (and packed) once and the rows of all
// the weights share one parallel region. bs[i] (optional, may be shorter) is weight i's bias.
std::vector<at::Tensor> linear_shared_input(const at::Tensor& x, const std::vector<at::Tensor>& ws,
                                            const std::vector<at::Tensor>& bs = {});

// Rows of x at or below which the weight-streaming kernel is used, per weight dtype: each
// path's own measured cut, unless a bench sets linear_small_m_override (-1: the path's own).
// K is the rows' length: the AMX tiles take only multiples of 32.
int64_t linear_small_m_threshold(at::ScalarType weight_dtype, int64_t K = 0);
int64_t& linear_small_m_override(at::ScalarType weight_dtype);

// Whether large-M bf16 products use the CPU's native bf16 path (default: the CPU has
// AVX512-BF16 or AMX-BF16; tests and benches may switch it to compare).
bool& linear_native_bf16();
// Whether those large-M native products run on AMX tiles (default: the CPU has AMX-BF16 and the
// OS grants the tile state) rather than through ATen.
bool& linear_amx();
// Whether fp32 products above the streaming cut run on the AVX2 packed kernel rather than BLAS
// (default: the CPU has AVX2 and no AVX-512, where BLAS has wider kernels); benches may switch it.
bool& linear_packed_fp32();
// Sets both from a bench's --bf16-products: "native" (the CPU's best: AMX tiles where usable,
// else the vdpbf16ps pair kernel; without them what "split" gives), "aten" (native, ATen's
// product instead of either), "split" (no native bf16; the AVX2 split kernel for small batches on
// long rows and up to 24 rows, the AVX2 packed kernel above), "widened" (no native bf16, neither
// AVX2 batch kernel: weight tiles widened to fp32 through BLAS). False for any other word.
bool select_bf16_products(const std::string& mode);
// The path linear() takes for a weight dtype, in words (the engine logs it once; bench_engine prints it).
const char* linear_path(at::ScalarType weight_dtype);

// Distinct threads that ran the tasks of one at::parallel_for compiled in the engine: the
// engine's kernels run in parallel only if this file was built with OpenMP (core/parallel_for.h).
int64_t parallel_for_width();

}  // namespace roll::engine
