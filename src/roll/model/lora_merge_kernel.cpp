#include "roll/model/lora_merge_kernel.h"

#include <ATen/record_function.h>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "roll/core/avx2_vec.h"
#include "roll/core/cpu_features.h"
#include "roll/core/parallel_for.h"

namespace roll::model {
namespace {

constexpr int64_t kTileRows = 4;
// Row tiles per parallel task: small modules (128 rows) still split over two threads.
constexpr int64_t kTilesPerTask = 8;

// Rows [r0, r1), columns [j0, j1).
template <typename T>
void merge_portable(T* out, const T* w, const float* a, const float* b, float scale, int64_t rank, int64_t cols,
                    int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
  std::vector<float> acc(static_cast<size_t>(j1 - j0));
  for (int64_t i = r0; i < r1; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t k = 0; k < rank; ++k) {
      const float bik = b[i * rank + k];
      const float* arow = a + k * cols;
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += bik * arow[j];
    }
    // c10::BFloat16 from float rounds to nearest, ties to even.
    for (int64_t j = j0; j < j1; ++j)
      out[i * cols + j] = static_cast<T>(static_cast<float>(w[i * cols + j]) + scale * acc[j - j0]);
  }
}

// out = w + scale * acc, 8 lanes.
__attribute__((target("avx2,fma"))) inline void add_store8(float* out, const float* w, __m256 acc, __m256 scale) {
  _mm256_storeu_ps(out, _mm256_fmadd_ps(acc, scale, _mm256_loadu_ps(w)));
}

__attribute__((target("avx2,fma"))) inline void add_store8(c10::BFloat16* out, const c10::BFloat16* w, __m256 acc,
                                                            __m256 scale) {
  const __m256 sum = _mm256_fmadd_ps(acc, scale, core::avx2::load8_bf16(reinterpret_cast<const uint16_t*>(w)));
  core::avx2::store8_bf16(reinterpret_cast<uint16_t*>(out), sum);
}

// R rows x 8V columns starting at row pointers out/w/b and column j. 4 x 24 keeps 12
// accumulators, 3 A vectors and a broadcast in the 16 registers.
template <int R, int V, typename T>
__attribute__((target("avx2,fma"))) inline void tile_avx2(T* out, const T* w, const float* a, const float* b,
                                                           __m256 scale, int64_t rank, int64_t cols, int64_t j,
                                                           bool prefetch_next) {
  // The loops over rows and vectors must unroll for the accumulators to stay in registers.
  // The same columns of the next 4 rows, into L2: without this each new group of rows starts
  // eight short streams cold and the products wait on memory (on a Zen 3 the kernel ran at about
  // 0.4 of the fp32 GEMM peak without it, 0.6 with it: bench_lora_merge).
  if (prefetch_next)
#pragma GCC unroll 4
    for (int r = 0; r < kTileRows; ++r) {
      __builtin_prefetch(w + (kTileRows + r) * cols + j, 0, 2);
      __builtin_prefetch(out + (kTileRows + r) * cols + j, 1, 2);
    }
  __m256 acc[R][V];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < rank; ++k) {
    __m256 av[V];
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) av[v] = _mm256_loadu_ps(a + k * cols + j + 8 * v);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 brk = _mm256_broadcast_ss(b + r * rank + k);
#pragma GCC unroll 3
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(brk, av[v], acc[r][v]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < V; ++v) add_store8(out + r * cols + j + 8 * v, w + r * cols + j + 8 * v, acc[r][v], scale);
}

// Whole rows, so that each row of W and out is one sequential stream; A (rank x cols fp32, 57 KB
// at rank 16 and 896 columns) stays in L2.
template <int R, typename T>
__attribute__((target("avx2,fma"))) void rows_avx2(T* out, const T* w, const float* a, const float* b, float scale,
                                                    int64_t rank, int64_t cols, bool prefetch_next) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 24 <= cols; j += 24) tile_avx2<R, 3>(out, w, a, b, s, rank, cols, j, prefetch_next);
  for (; j + 8 <= cols; j += 8) tile_avx2<R, 1>(out, w, a, b, s, rank, cols, j, prefetch_next);
}

template <typename T>
void merge_avx2(T* out, const T* w, const float* a, const float* b, float scale, int64_t rank, int64_t cols,
                int64_t r0, int64_t r1) {
  for (int64_t i = r0; i < r1; i += kTileRows) {
    T* o = out + i * cols;
    const T* wi = w + i * cols;
    const float* bi = b + i * rank;
    const bool next = i + 2 * kTileRows <= r1;  // a whole group of 4 rows follows
    switch (std::min(kTileRows, r1 - i)) {
      case 4: rows_avx2<4>(o, wi, a, bi, scale, rank, cols, next); break;
      case 3: rows_avx2<3>(o, wi, a, bi, scale, rank, cols, next); break;
      case 2: rows_avx2<2>(o, wi, a, bi, scale, rank, cols, next); break;
      default: rows_avx2<1>(o, wi, a, bi, scale, rank, cols, next); break;
    }
  }
  const int64_t vec_cols = cols / 8 * 8;
  if (vec_cols < cols) merge_portable(out, w, a, b, scale, rank, cols, r0, r1, vec_cols, cols);
}

// One module's operands, widened and scaled once.
struct Prepared {
  void* out;
  const void* w;
  at::Tensor a, b;  // fp32, contiguous
  float scale;
  bool bf16;
  int64_t rows, cols, rank, first_tile;
};

template <typename T>
void merge_rows(const Prepared& m, int64_t r0, int64_t r1, LoraMergeKernel kernel) {
  T* o = static_cast<T*>(m.out);
  const T* w = static_cast<const T*>(m.w);
  const float* a = m.a.data_ptr<float>();
  const float* b = m.b.data_ptr<float>();
  if (kernel == LoraMergeKernel::kAvx2)
    merge_avx2(o, w, a, b, m.scale, m.rank, m.cols, r0, r1);
  else
    merge_portable(o, w, a, b, m.scale, m.rank, m.cols, r0, r1, 0, m.cols);
}

}  // namespace

LoraMergeKernel best_lora_merge_kernel() {
  return core::cpu_features().avx2 ? LoraMergeKernel::kAvx2 : LoraMergeKernel::kPortable;
}

bool lora_merge_kernel_applies(const at::Tensor& out, const at::Tensor& w) {
  const auto dtype = w.scalar_type();
  return w.device().is_cpu() && out.device().is_cpu() && w.dim() == 2 && w.is_contiguous() && out.is_contiguous() &&
         out.scalar_type() == dtype && (dtype == at::kFloat || dtype == at::kBFloat16);
}

void lora_merge_cpu(const at::Tensor& out, const at::Tensor& w, const at::Tensor& a, const at::Tensor& b, double scale,
                    LoraMergeKernel kernel) {
  lora_merge_cpu({LoraMergeJob{out, w, a, b, scale}}, kernel);
}

void lora_merge_cpu(const std::vector<LoraMergeJob>& jobs, LoraMergeKernel kernel) {
  RECORD_FUNCTION("roll::lora_merge", std::vector<c10::IValue>());  // a row of its own in op profiles
  at::NoGradGuard no_grad;
  std::vector<Prepared> mods;
  int64_t tiles = 0;
  for (const LoraMergeJob& j : jobs) {
    Prepared m{j.out.data_ptr(),
               j.w.data_ptr(),
               j.a.to(at::kFloat).contiguous(),
               j.b.to(at::kFloat).contiguous(),
               static_cast<float>(j.scale),
               j.w.scalar_type() == at::kBFloat16,
               j.w.size(0),
               j.w.size(1),
               j.a.size(0),
               tiles};
    tiles += (m.rows + kTileRows - 1) / kTileRows;
    mods.push_back(std::move(m));
  }
  // One parallel region over the row tiles of every module: the threads split the whole sync
  // evenly and meet once, not once per module.
  at::parallel_for(0, tiles, kTilesPerTask, [&](int64_t t0, int64_t t1) {
    auto m = std::upper_bound(mods.begin(), mods.end(), t0,
                              [](int64_t t, const Prepared& p) { return t < p.first_tile; }) - 1;
    for (int64_t t = t0; t < t1; ++m) {
      const int64_t end_tile = m->first_tile + (m->rows + kTileRows - 1) / kTileRows;
      const int64_t stop = std::min(t1, end_tile);
      const int64_t r0 = (t - m->first_tile) * kTileRows, r1 = std::min(m->rows, (stop - m->first_tile) * kTileRows);
      if (m->bf16)
        merge_rows<c10::BFloat16>(*m, r0, r1, kernel);
      else
        merge_rows<float>(*m, r0, r1, kernel);
      t = stop;
    }
  });
}

}  // namespace roll::model
