// The bf16 matrix product on AMX-BF16 (cpu_kernels.h). One tdpbf16ps multiplies a 16 x 32 bf16
// tile by a 32 x 16 one into a 16 x 16 fp32 tile. The weights are the instruction's first operand
// exactly as stored ([N, K] row-major: 16 rows, 32 columns, the row stride K), so nothing is
// repacked; x is the second operand, which the instruction wants with pairs of k interleaved
// (pack_x_pairs, once per product). The result tiles are therefore y transposed, 16 weight rows by
// 16 x rows, and are turned round on the way out.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "roll/core/cpu_features.h"
#include "roll/engine/avx512_transpose.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine::kernels {
namespace {

#define AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

// The tile registers' shapes (palette 1): every tile here is 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

AMX void load_tile_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = 16;
  }
  _tile_loadconfig(&c);
}

// The tile intrinsics are asm statements without a memory operand: keep the compiler from
// moving ordinary loads and stores of the same memory across them.
inline void memory_barrier() { asm volatile("" ::: "memory"); }

constexpr int64_t kTileElems = 16 * 32;  // bf16 elements of one packed x tile (1 KB)

// Writes one fp32 result tile c[n][m] (16 x 16, row stride 16) as y[m][n] for the valid rows
// m < rows of this block of x and the first `cols` weight rows.
AMX void store_transposed(const float* c, int64_t rows, int64_t cols, float* y, int64_t ldy) {
  __m512i r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(c + 16 * i);
  transpose16(r);
  const __mmask16 valid = cols >= 16 ? 0xffff : static_cast<__mmask16>((1u << cols) - 1);
  for (int64_t m = 0; m < rows; ++m) _mm512_mask_storeu_ps(y + m * ldy, valid, _mm512_castsi512_ps(r[m]));
}

// Prefetches `lines` cache lines from p on (the next weight block, spread over the k loop).
inline void prefetch_lines(const char* p, int64_t lines) {
  for (int64_t i = 0; i < lines; ++i) _mm_prefetch(p + 64 * i, _MM_HINT_T0);
}

// NB blocks of 16 weight rows (w, consecutive, rows ws bytes apart) against one block of 16 x
// rows (its packed tiles xt, K / 32 of them): accumulators in tiles 0..NB-1, the x tile in 4,
// weight tiles in 5..7. `next` (optional) is the weight memory the following call reads.
template <int NB>
AMX void blocks_by_one(const uint16_t* xt, int64_t K, const uint16_t* w, int64_t ws, float* c, const char* next) {
  const int64_t row = ws / 2, per_step = next ? NB * 16 * ws / K / 2 : 0;  // lines of `next` per k step
  _tile_zero(0);
  if constexpr (NB > 1) _tile_zero(1);
  if constexpr (NB > 2) _tile_zero(2);
  if constexpr (NB > 3) _tile_zero(3);
  for (int64_t k = 0; k < K; k += 32, xt += kTileElems) {
    if (next) prefetch_lines(next + k / 32 * per_step * 64, per_step);
    _tile_loadd(4, xt, 64);
    _tile_loadd(5, w + k, ws);
    _tile_dpbf16ps(0, 5, 4);
    if constexpr (NB > 1) {
      _tile_loadd(6, w + 16 * row + k, ws);
      _tile_dpbf16ps(1, 6, 4);
    }
    if constexpr (NB > 2) {
      _tile_loadd(7, w + 32 * row + k, ws);
      _tile_dpbf16ps(2, 7, 4);
    }
    if constexpr (NB > 3) {
      _tile_loadd(5, w + 48 * row + k, ws);
      _tile_dpbf16ps(3, 5, 4);
    }
  }
  _tile_stored(0, c, 64);
  if constexpr (NB > 1) _tile_stored(1, c + 256, 64);
  if constexpr (NB > 2) _tile_stored(2, c + 512, 64);
  if constexpr (NB > 3) _tile_stored(3, c + 768, 64);
  memory_barrier();
}

// One block of 16 weight rows against MB blocks of x rows (xt, x_block elements apart): each
// weight tile is loaded once for all of them. Accumulators 0..MB-1, weights 4, x 5..7.
template <int MB>
AMX void one_by_blocks(const uint16_t* xt, int64_t x_block, int64_t K, const uint16_t* w, int64_t ws, float* c,
                       const char* next) {
  const int64_t per_step = next ? 16 * ws / K / 2 : 0;
  _tile_zero(0);
  if constexpr (MB > 1) _tile_zero(1);
  if constexpr (MB > 2) _tile_zero(2);
  if constexpr (MB > 3) _tile_zero(3);
  for (int64_t k = 0; k < K; k += 32, xt += kTileElems) {
    if (next) prefetch_lines(next + k / 32 * per_step * 64, per_step);
    _tile_loadd(4, w + k, ws);
    _tile_loadd(5, xt, 64);
    _tile_dpbf16ps(0, 4, 5);
    if constexpr (MB > 1) {
      _tile_loadd(6, xt + x_block, 64);
      _tile_dpbf16ps(1, 4, 6);
    }
    if constexpr (MB > 2) {
      _tile_loadd(7, xt + 2 * x_block, 64);
      _tile_dpbf16ps(2, 4, 7);
    }
    if constexpr (MB > 3) {
      _tile_loadd(5, xt + 3 * x_block, 64);
      _tile_dpbf16ps(3, 4, 5);
    }
  }
  _tile_stored(0, c, 64);
  if constexpr (MB > 1) _tile_stored(1, c + 256, 64);
  if constexpr (MB > 2) _tile_stored(2, c + 512, 64);
  if constexpr (MB > 3) _tile_stored(3, c + 768, 64);
  memory_barrier();
}

// Two blocks of 16 weight rows (w, w + 16 rows) against two blocks of x (xt0, xt1) over the k
// steps [k0, k1): every tile loaded is used twice. Accumulators 0..3 (n0 m0, n0 m1, n1 m0,
// n1 m1), carried in acc (4 KB) from the previous part unless `first`; weights 4, 5, x 6, 7.
// The weight slices of a part (32 rows x at most 8 steps,
// 16 KB) stay in L1 while all the x pairs of a chunk pass over them. `next`, when set, is 32
// weight rows (ws bytes apart) whose same columns the following part reads.
AMX void two_by_two_part(const uint16_t* xt0, const uint16_t* xt1, int64_t k0, int64_t k1, const uint16_t* w,
                         int64_t ws, float* acc, bool first, const char* next) {
  if (first) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  } else {
    _tile_loadd(0, acc, 64);
    _tile_loadd(1, acc + 256, 64);
    _tile_loadd(2, acc + 512, 64);
    _tile_loadd(3, acc + 768, 64);
  }
  const int64_t row = ws / 2;
  xt0 += k0 / 32 * kTileElems;
  xt1 += k0 / 32 * kTileElems;
  for (int64_t k = k0; k < k1; k += 32, xt0 += kTileElems, xt1 += kTileElems) {
    if (next)
      for (int r = 0; r < 32; ++r) _mm_prefetch(next + r * ws + (k - k0) * 2, _MM_HINT_T0);
    _tile_loadd(4, w + k, ws);
    _tile_loadd(6, xt0, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, xt1, 64);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, w + 16 * row + k, ws);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, acc, 64);
  _tile_stored(1, acc + 256, 64);
  _tile_stored(2, acc + 512, 64);
  _tile_stored(3, acc + 768, 64);
  memory_barrier();
}

AMX void matmul_amx(const uint16_t* xp, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1, float* y,
                    int64_t ldy) {
  if (M <= 0 || n1 <= n0) return;
  memory_barrier();
  load_tile_config();
  alignas(64) float c[4 * 256];
  const int64_t mblocks = (M + 15) / 16, x_block = (K / 32) * kTileElems, ws = 2 * K;
  auto rows_of = [&](int64_t mb) { return std::min<int64_t>(16, M - 16 * mb); };
  // A last block of fewer than 16 weight rows is copied into 16 zero-padded rows.
  const int64_t full_end = n0 + (n1 - n0) / 16 * 16, tail = n1 - full_end;
  thread_local std::vector<uint16_t> padded;
  if (tail > 0) {
    padded.assign(static_cast<size_t>(16 * K), 0);
    std::memcpy(padded.data(), w + full_end * K, static_cast<size_t>(tail * K) * 2);
  }
  auto block_rows = [&](int64_t n) { return n < full_end ? w + n * K : padded.data(); };
  auto cols_of = [&](int64_t n) { return n < full_end ? int64_t{16} : tail; };
  const auto* bytes = reinterpret_cast<const char*>(w);
  if (mblocks == 1) {
    // One block of x: four weight blocks share each x tile.
    const int64_t rows = rows_of(0);
    int64_t n = n0;
    for (; n + 64 <= full_end; n += 64) {
      blocks_by_one<4>(xp, K, w + n * K, ws, c, n + 128 <= full_end ? bytes + (n + 64) * ws : nullptr);
      for (int b = 0; b < 4; ++b) store_transposed(c + 256 * b, rows, 16, y + n + 16 * b, ldy);
    }
    const int64_t left = (full_end - n) / 16;
    if (left == 3) blocks_by_one<3>(xp, K, w + n * K, ws, c, nullptr);
    if (left == 2) blocks_by_one<2>(xp, K, w + n * K, ws, c, nullptr);
    if (left == 1) blocks_by_one<1>(xp, K, w + n * K, ws, c, nullptr);
    for (int64_t b = 0; b < left; ++b) store_transposed(c + 256 * b, rows, 16, y + n + 16 * b, ldy);
    if (tail > 0) {
      blocks_by_one<1>(xp, K, padded.data(), ws, c, nullptr);
      store_transposed(c, rows, tail, y + full_end, ldy);
    }
  } else {
    // Pairs of weight blocks against pairs of x blocks, part of the k steps at a time; a weight
    // block left over (and the part block at the end) against up to 4 x blocks at once. The x
    // blocks are taken in chunks that stay in L2 (~1.5 MB of the 2 MB per core of these CPUs)
    // while the weight blocks of this task pass over them.
    const int64_t chunk = std::max<int64_t>(2, ((3 << 19) / (x_block * 2)) / 2 * 2);
    for (int64_t mc = 0; mc < mblocks; mc += chunk) {
      const int64_t mc_end = std::min(mblocks, mc + chunk);
      auto store = [&](int64_t mb, int64_t n, int64_t b) {
        store_transposed(c + 256 * b, rows_of(mb), cols_of(n), y + 16 * mb * ldy + n, ldy);
      };
      // The k steps in parts of at most 8; each pair of x blocks keeps its accumulators in acc.
      const int64_t steps = K / 32, parts = (steps + 7) / 8, per = (steps + parts - 1) / parts;
      const int64_t pairs = (mc_end - mc) / 2;
      thread_local std::vector<float> acc_buf;
      if (acc_buf.size() < static_cast<size_t>(pairs * 1024)) acc_buf.resize(static_cast<size_t>(pairs * 1024));
      int64_t n = n0;
      for (; n + 32 <= full_end; n += 32) {
        for (int64_t p = 0; p < parts; ++p) {
          const int64_t k0 = p * per * 32, k1 = std::min(K, (p + 1) * per * 32);
          // the next part's slice of these rows, or the first slice of the next pair
          const char* next = p + 1 < parts ? bytes + n * ws + k1 * 2
                             : n + 64 <= full_end ? bytes + (n + 32) * ws : nullptr;
          for (int64_t i = 0; i < pairs; ++i) {
            const int64_t mb = mc + 2 * i;
            two_by_two_part(xp + mb * x_block, xp + (mb + 1) * x_block, k0, k1, w + n * K, ws,
                            acc_buf.data() + 1024 * i, p == 0, i == 0 ? next : nullptr);
          }
        }
        for (int64_t i = 0; i < pairs; ++i) {
          const int64_t mb = mc + 2 * i;
          const float* a4 = acc_buf.data() + 1024 * i;
          store_transposed(a4, rows_of(mb), 16, y + 16 * mb * ldy + n, ldy);
          store_transposed(a4 + 256, rows_of(mb + 1), 16, y + 16 * (mb + 1) * ldy + n, ldy);
          store_transposed(a4 + 512, rows_of(mb), 16, y + 16 * mb * ldy + n + 16, ldy);
          store_transposed(a4 + 768, rows_of(mb + 1), 16, y + 16 * (mb + 1) * ldy + n + 16, ldy);
        }
        if (mc + 2 * pairs < mc_end) {
          const int64_t mb = mc + 2 * pairs;
          blocks_by_one<2>(xp + mb * x_block, K, w + n * K, ws, c, nullptr);
          store(mb, n, 0);
          store(mb, n + 16, 1);
        }
      }
      for (; n < n1; n += 16)  // a whole block left over, then the part block
        for (int64_t mb = mc; mb < mc_end; mb += 4) {
          const uint16_t* xt = xp + mb * x_block;
          const uint16_t* wb = block_rows(n);
          const int64_t count = std::min<int64_t>(4, mc_end - mb);
          switch (count) {
            case 4: one_by_blocks<4>(xt, x_block, K, wb, ws, c, nullptr); break;
            case 3: one_by_blocks<3>(xt, x_block, K, wb, ws, c, nullptr); break;
            case 2: one_by_blocks<2>(xt, x_block, K, wb, ws, c, nullptr); break;
            default: one_by_blocks<1>(xt, x_block, K, wb, ws, c, nullptr); break;
          }
          for (int64_t b = 0; b < count; ++b) store(mb + b, n, b);
        }
    }
  }
  _tile_release();
}

}  // namespace

bool amx_usable() {
  // Linux hands out the AMX tile state only to a process that asks for it (once; every thread of
  // the process then has it). Without it the first tile instruction faults.
  static const bool usable = [] {
    if (!core::cpu_features().amx_bf16 || !core::cpu_features().avx512_bf16) return false;
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
}

void matmul_wt_amx(const uint16_t* xp, int64_t M, int64_t K, const uint16_t* w, int64_t n0, int64_t n1, float* y,
                   int64_t ldy) {
  matmul_amx(xp, M, K, w, n0, n1, y, ldy);
}

}  // namespace roll::engine::kernels
