#pragma once
// Inner loops the engine runs on raw memory: dot products and axpy for paged attention, and the
// small-M matrix product that decode steps spend their time in. Weights and cache rows are fp32
// or bf16 (raw 16-bit words, widened to fp32 on load); accumulation is always fp32. AVX2+FMA
// versions are picked at run time; plain loops elsewhere.
#include <cstdint>

namespace roll::engine::kernels {

bool have_avx2();

float dot(const float* a, const float* b, int64_t n);
float dot(const float* a, const uint16_t* b_bf16, int64_t n);
void axpy(float* y, float a, const float* x, int64_t n);  // y += a * x
void axpy(float* y, float a, const uint16_t* x_bf16, int64_t n);
void bf16_to_float(const uint16_t* src, float* dst, int64_t n);

// Attention inner loops over n cache rows `stride` elements apart (one block of one kv head):
// scores[t] = q . k_t, and acc += sum_t p[t] v_t (acc stays in registers across the rows).
void dots(const float* q, const float* k, int64_t stride, int64_t n, int64_t D, float* scores);
void dots(const float* q, const uint16_t* k_bf16, int64_t stride, int64_t n, int64_t D, float* scores);
void weighted_sum(float* acc, const float* p, const float* v, int64_t stride, int64_t n, int64_t D);
void weighted_sum(float* acc, const float* p, const uint16_t* v_bf16, int64_t stride, int64_t n, int64_t D);

// gate[i] = silu(gate[i]) * up[i] (SwiGLU), silu(g) = g / (1 + exp(-g)) with the exp below.
void silu_mul(float* gate, const float* up, int64_t n);

// Row reductions of the sampler over a vocabulary-sized row.
float max_of(const float* x, int64_t n);
int64_t argmax_of(const float* x, int64_t n);  // first index of the maximum
// sum_i exp((x[i] - shift) * scale), accumulated in double per lane; `out` (optional) receives
// the terms. exp is a Cephes-style polynomial (relative error ~1e-7) under AVX2.
double sum_exp(const float* x, int64_t n, float shift, float scale, float* out = nullptr);
// First index i in [i0, i1) with x[i] > v, else i1: the sampler's top-k filter skips the values
// at or below the smallest one kept, 16 at a time.
int64_t first_above(const float* x, int64_t i0, int64_t i1, float v);

// y[m * ldy + j] = sum_k x[m * K + k] * w[j * K + k] for m < M and rows j in [n0, n1) of w.
// Reads each weight row once for all M rows of x: for M up to ~16 this is bound by weight
// bandwidth, which is what decode is.
void matmul_wt(const float* x, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y, int64_t ldy);
void matmul_wt(const float* x, int64_t M, int64_t K, const uint16_t* w_bf16, int64_t n0, int64_t n1, float* y,
               int64_t ldy);

// The fp32 product on AVX-512 (call only where core::cpu_features().avx512f).
void matmul_wt_avx512(const float* x, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y,
                      int64_t ldy);

// The bf16 product for batches of rows on AVX2 (call only where have_avx2()): x split once by
// split_x_even_odd into rows of x_split_stride(K) floats in which each block of 16 k holds its 8
// even then its 8 odd elements (zeros past K), the order in which a 32-byte load of 16 bf16
// weights widens in two operations; weights as stored. Accumulation in fp32.
int64_t x_split_stride(int64_t K);  // K rounded up to 16
void split_x_even_odd(const float* x, int64_t M, int64_t K, float* xs);
void matmul_wt_split(const float* xs, int64_t M, int64_t K, const uint16_t* w_bf16, int64_t n0, int64_t n1, float* y,
                     int64_t ldy);

// The product for many rows on AVX2 (call only where have_avx2()), bf16 or fp32 weights: x as it
// is, weights as stored; each 16 weight rows are repacked into `buffer` (packed_buffer_size(K)
// values of the weights' type, one buffer per thread) in the layout the register tile reads. Rows
// past the last whole 16 take matmul_wt. Accumulation in fp32, k in blocks (so sums may differ
// from matmul_wt's in the last bits).
int64_t packed_buffer_size(int64_t K);
void matmul_wt_packed(const float* x, int64_t M, int64_t K, const uint16_t* w_bf16, int64_t n0, int64_t n1, float* y,
                      int64_t ldy, uint16_t* buffer);
void matmul_wt_packed(const float* x, int64_t M, int64_t K, const float* w, int64_t n0, int64_t n1, float* y,
                      int64_t ldy, float* buffer);

// The same product on AVX512-BF16 (vdpbf16ps; call only where core::cpu_features().avx512_bf16):
// x already rounded to bf16 by float_to_bf16_rows, rows `bf16_row_stride(K)` apart and
// zero-padded; weights bf16 [N, K] as stored. Accumulation in fp32.
int64_t bf16_row_stride(int64_t K);  // K rounded up to 32
uint16_t float_to_bf16(float f);     // nearest, ties to even
void float_to_bf16_rows(const float* x, int64_t M, int64_t K, uint16_t* xb);
void matmul_wt_dpbf16(const uint16_t* xb, int64_t M, int64_t K, const uint16_t* w_bf16, int64_t n0, int64_t n1,
                      float* y, int64_t ldy);

// x rounded to bf16 and packed for the batch kernels below, K a multiple of 32: in blocks of 16
// rows (16 K elements each), block b holds for every pair p of k one vector of the 16 rows'
// pairs (x[m][2p], x[m][2p + 1]) at 32 p, zero for rows past M. x_pairs_size(M, K) elements;
// blocks pack independently, so pack_x_pairs(x + 16 i K, ..., xp + i * 16 K) packs from block i
// on. Call only where core::cpu_features().avx512_bf16.
int64_t x_pairs_size(int64_t M, int64_t K);
void pack_x_pairs(const float* x, int64_t M, int64_t K, uint16_t* xp);

// The product for batches of rows on AVX512-BF16 from the packed x: each weight pair is
// broadcast against 16 rows of x (vdpbf16ps), weights as stored. Accumulation in fp32.
int64_t dpbf16_pairs_tile_rows(int64_t M);  // weight rows of one tile against the first 64 rows of x
void matmul_wt_dpbf16_pairs(const uint16_t* xp, int64_t M, int64_t K, const uint16_t* w_bf16, int64_t n0, int64_t n1,
                            float* y, int64_t ldy);

// The same product on AMX-BF16 tiles (tdpbf16ps) from the packed x (its blocks are the tiles the
// instruction reads as its second operand): call only where amx_usable(), with K a multiple of
// 32. Accumulation in fp32.
bool amx_usable();  // the CPU has AMX-BF16 and the OS granted this process the tile state (asked once)
void matmul_wt_amx(const uint16_t* xp, int64_t M, int64_t K, const uint16_t* w_bf16, int64_t n0, int64_t n1, float* y,
                   int64_t ldy);

}  // namespace roll::engine::kernels
