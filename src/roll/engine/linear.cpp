#include "roll/engine/linear.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "roll/core/cpu_features.h"
#include "roll/core/parallel_for.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine {

// Whether small-M bf16 products on long rows without native bf16 run on the AVX2 split kernel
// rather than the streaming kernel (--bf16-products widened turns it off).
static bool& linear_split() {
  static bool on = kernels::have_avx2();
  return on;
}

bool& linear_packed_fp32() {
  static bool on = kernels::have_avx2() && !core::cpu_features().avx512f;
  return on;
}

int64_t& linear_small_m_override(at::ScalarType weight_dtype) {
  static int64_t bf16 = -1, fp32 = -1;
  return weight_dtype == at::kBFloat16 ? bf16 : fp32;
}

int64_t linear_small_m_threshold(at::ScalarType weight_dtype, int64_t K) {
  const int64_t forced = linear_small_m_override(weight_dtype);
  if (forced >= 0) return forced;
  // Measured at the 0.5B shapes (bench_linear), each path against the one above it: on Zen 3
  // (AVX2) the streaming kernel beats widen + BLAS up to ~12 rows for bf16, and OpenBLAS beats it
  // above ~8 rows for fp32; on Zen 4 the vdpbf16ps streaming kernel beats the pair kernel up to
  // ~32 rows (whole layer at 24 rows 0.77-0.83 of oneDNN against 0.61-0.67, even at 32); with
  // AMX-BF16 (Intel Xeon) the tiles beat it from 2 rows on. On that Xeon (two
  // full 512-bit FMA units) the AVX-512 fp32 kernel beats OpenBLAS up to 64 rows (0.88-0.90 of
  // oneDNN at 64 against 0.75-0.76, 0.67 against 0.77 at 128); its cut on Zen 4 was not measured
  // above 8 rows, so other CPUs keep 8.
  if (weight_dtype != at::kBFloat16)
    return core::cpu_features().avx512f && core::cpu_features().amx_bf16 ? 64 : 8;
  if (!linear_native_bf16()) return 12;
  if (linear_amx() && K % 32 == 0) return 1;  // rows the tiles cannot take keep the vdpbf16ps cut
  return core::cpu_features().avx512_bf16 ? 32 : 12;
}

int64_t parallel_for_width() {
  std::mutex mu;
  std::set<std::thread::id> seen;
  at::parallel_for(0, 64 * at::get_num_threads(), 1, [&](int64_t, int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(std::this_thread::get_id());
  });
  return static_cast<int64_t>(seen.size());
}

namespace {

// A buffer of at least n elements that lives as long as the calling thread: a fresh large
// allocation per product costs page faults (it comes from mmap) on every call.
template <typename T = uint16_t>
T* scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

// An uninitialised [M, N] product output. Outputs above glibc's largest mmap threshold (32 MB:
// the LM head's logits from batch 64 of a 152k vocabulary) would come from a fresh mapping on every
// call and fault every page in again (~8% of a batch-64 decode step); the last such output of each
// size is kept per thread and handed out again once nobody else holds it.
at::Tensor product_output(int64_t M, int64_t N, const at::TensorOptions& options) {
  constexpr int64_t kReuseBytes = int64_t{32} << 20;
  if (M * N * static_cast<int64_t>(c10::elementSize(c10::typeMetaToScalarType(options.dtype()))) < kReuseBytes)
    return at::empty({M, N}, options);
  thread_local std::vector<at::Tensor> kept;
  for (at::Tensor& t : kept)
    if (t.size(0) == M && t.size(1) == N && t.dtype() == options.dtype() && t.use_count() == 1 &&
        t.storage().use_count() == 1)
      return t;
  at::Tensor t = at::empty({M, N}, options);
  if (kept.size() >= 4) kept.erase(kept.begin());
  kept.push_back(t);
  return t;
}

// Weight rows per parallel task: enough work to hide the task cost, an even split otherwise.
int64_t row_grain(int64_t N, int64_t K) {
  const int64_t by_bytes = std::max<int64_t>(8, (64 << 10) / std::max<int64_t>(1, K));  // >= ~64K weights/task
  return std::min<int64_t>(by_bytes, std::max<int64_t>(8, N / (4 * at::get_num_threads())));
}

// Runs f(i, g0, g1) over groups [g0, g1) of the rows of weights i = 0, 1, ... (groups[i] of
// them) in one parallel region: the products of one input share their task start-up.
template <typename F>
void for_row_groups(const std::vector<int64_t>& groups, int64_t grain, const F& f) {
  std::vector<int64_t> start(groups.size() + 1, 0);
  for (size_t i = 0; i < groups.size(); ++i) start[i + 1] = start[i] + groups[i];
  at::parallel_for(0, start.back(), grain, [&](int64_t a, int64_t b) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const int64_t lo = std::max(a, start[i]), hi = std::min(b, start[i + 1]);
      if (lo < hi) f(i, lo - start[i], hi - start[i]);
    }
  });
}

std::vector<const uint16_t*> bf16_data(const std::vector<at::Tensor>& ws) {
  std::vector<const uint16_t*> out;
  for (const at::Tensor& w : ws) out.push_back(reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>()));
  return out;
}

int64_t total_rows(const std::vector<at::Tensor>& ws) {
  int64_t n = 0;
  for (const at::Tensor& w : ws) n += w.size(0);
  return n;
}

// One [M, N_i] output per weight, filled by kernel(weight, rows n0..n1, its bf16 data, output)
// in tasks of whole groups of `group` rows of all the weights at once.
template <typename Kernel>
std::vector<at::Tensor> over_row_groups(const at::Tensor& x, const std::vector<at::Tensor>& ws, int64_t group,
                                        const Kernel& kernel) {
  std::vector<at::Tensor> ys;
  std::vector<int64_t> groups;
  for (const at::Tensor& w : ws) {
    ys.push_back(product_output(x.size(0), w.size(0), x.options()));
    groups.push_back((w.size(0) + group - 1) / group);
  }
  const std::vector<const uint16_t*> wp = bf16_data(ws);
  const int64_t grain = std::max<int64_t>(1, row_grain(total_rows(ws), x.size(1)) / group);
  for_row_groups(groups, grain, [&](size_t i, int64_t g0, int64_t g1) {
    const int64_t N = ws[i].size(0);
    kernel(group * g0, std::min(N, group * g1), wp[i], ys[i].data_ptr<float>(), N);
  });
  return ys;
}

// Small-M bf16 where the CPU has vdpbf16ps: x rounded to bf16 once, then tasks of whole groups
// of 4 weight rows (the kernel's tile).
std::vector<at::Tensor> streaming_dpbf16(const at::Tensor& x, const std::vector<at::Tensor>& ws) {
  const int64_t M = x.size(0), K = x.size(1);
  uint16_t* xb = scratch(static_cast<size_t>(M * kernels::bf16_row_stride(K)));
  kernels::float_to_bf16_rows(x.data_ptr<float>(), M, K, xb);
  return over_row_groups(x, ws, 4, [&](int64_t n0, int64_t n1, const uint16_t* w, float* y, int64_t N) {
    kernels::matmul_wt_dpbf16(xb, M, K, w, n0, n1, y, N);
  });
}

at::Tensor streaming(const at::Tensor& x, const at::Tensor& w) {
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  at::Tensor y = product_output(M, N, x.options());
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  if (w.scalar_type() == at::kBFloat16) {
    const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
    at::parallel_for(0, N, row_grain(N, K),
                     [&](int64_t n0, int64_t n1) { kernels::matmul_wt(xp, M, K, wp, n0, n1, yp, N); });
  } else {
    const float* wp = w.data_ptr<float>();
    static const bool avx512 = core::cpu_features().avx512f;
    at::parallel_for(0, N, row_grain(N, K), [&](int64_t n0, int64_t n1) {
      avx512 ? kernels::matmul_wt_avx512(xp, M, K, wp, n0, n1, yp, N) : kernels::matmul_wt(xp, M, K, wp, n0, n1, yp, N);
    });
  }
  return y;
}

// Small-M bf16 on long rows on AVX2 without bf16 instructions: x (a few rows) split into even and
// odd elements once, then tasks of whole 6-row groups of all the weights (the kernel keeps a
// group in L1).
std::vector<at::Tensor> split_bf16(const at::Tensor& x, const std::vector<at::Tensor>& ws) {
  const int64_t M = x.size(0), K = x.size(1);
  float* xs = scratch<float>(static_cast<size_t>(M * kernels::x_split_stride(K)));
  kernels::split_x_even_odd(x.data_ptr<float>(), M, K, xs);
  return over_row_groups(x, ws, 6, [&](int64_t n0, int64_t n1, const uint16_t* w, float* y, int64_t N) {
    kernels::matmul_wt_split(xs, M, K, w, n0, n1, y, N);
  });
}

// Many-row bf16 on AVX2 without native bf16: tasks of whole blocks of 4 panels of 16 weight rows
// (what the packed kernel repacks at a time), each thread with its own panel buffer.
std::vector<at::Tensor> packed_bf16(const at::Tensor& x, const std::vector<at::Tensor>& ws) {
  const int64_t M = x.size(0), K = x.size(1);
  const float* xp = x.data_ptr<float>();
  return over_row_groups(x, ws, 64, [&](int64_t n0, int64_t n1, const uint16_t* w, float* y, int64_t N) {
    uint16_t* buffer = scratch(static_cast<size_t>(kernels::packed_buffer_size(K)));
    kernels::matmul_wt_packed(xp, M, K, w, n0, n1, y, N, buffer);
  });
}

// Many-row fp32 on AVX2 without AVX-512: the same packed kernel on fp32 panels, tasks of whole
// blocks of 64 weight rows.
at::Tensor packed_fp32(const at::Tensor& x, const at::Tensor& w) {
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  at::Tensor y = product_output(M, N, x.options());
  const float* xp = x.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  constexpr int64_t kBlock = 64;
  const int64_t grain = std::max<int64_t>(1, row_grain(N, K) / kBlock);
  at::parallel_for(0, (N + kBlock - 1) / kBlock, grain, [&](int64_t b0, int64_t b1) {
    float* buffer = scratch<float>(static_cast<size_t>(kernels::packed_buffer_size(K)));
    kernels::matmul_wt_packed(xp, M, K, wp, b0 * kBlock, std::min(N, b1 * kBlock), yp, N, buffer);
  });
  return y;
}

// Large-M bf16 without native bf16: each task widens a tile of weight rows into its own fp32 buffer (it stays in
// cache) and runs a single-threaded BLAS product into its columns of y.
at::Tensor tiled_bf16(const at::Tensor& x, const at::Tensor& w) {
  const int64_t M = x.size(0), K = x.size(1), N = w.size(0);
  // 128 rows (~0.5 MB widened at K = 896) measured best; fewer for small N so that every thread
  // gets tiles.
  const int64_t per_thread = (N + 4 * at::get_num_threads() - 1) / (4 * at::get_num_threads());
  const int64_t kTile = std::clamp<int64_t>((per_thread + 15) / 16 * 16, 16, 128);
  at::Tensor y = product_output(M, N, x.options());
  const auto* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
  const int64_t tiles = (N + kTile - 1) / kTile;
  at::parallel_for(0, tiles, 1, [&](int64_t t0, int64_t t1) {
    at::Tensor buf = at::empty({kTile, K}, x.options());
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n0 = t * kTile, rows = std::min(kTile, N - n0);
      kernels::bf16_to_float(wp + n0 * K, buf.data_ptr<float>(), rows * K);
      at::Tensor out = y.narrow(1, n0, rows);
      at::mm_out(out, x, buf.narrow(0, 0, rows).t());
    }
  });
  return y;
}

// x rounded to bf16 and packed in pairs once (blocks of 16 rows in parallel) for the batch
// kernels, which read it as it is laid out.
const uint16_t* packed_pairs(const at::Tensor& x) {
  const int64_t M = x.size(0), K = x.size(1);
  uint16_t* xp = scratch(static_cast<size_t>(kernels::x_pairs_size(M, K)));
  const float* xs = x.data_ptr<float>();
  at::parallel_for(0, (M + 15) / 16, std::max<int64_t>(1, (64 << 10) / (16 * K)), [&](int64_t b0, int64_t b1) {
    kernels::pack_x_pairs(xs + 16 * b0 * K, std::min(M, 16 * b1) - 16 * b0, K, xp + 16 * b0 * K);
  });
  return xp;
}

// bf16 on AMX tiles (K a multiple of 32): tasks of whole 64-row groups of weights (the last one
// may end in a part).
std::vector<at::Tensor> amx_bf16(const at::Tensor& x, const std::vector<at::Tensor>& ws) {
  const int64_t M = x.size(0), K = x.size(1);
  const uint16_t* xp = packed_pairs(x);
  return over_row_groups(x, ws, 64, [&](int64_t n0, int64_t n1, const uint16_t* w, float* y, int64_t N) {
    kernels::matmul_wt_amx(xp, M, K, w, n0, n1, y, N);
  });
}

// bf16 on the vdpbf16ps pair kernel (AVX512-BF16, K a multiple of 32): tasks of whole groups of
// the kernel's tile height for the first 64 rows of x (more, smaller tasks balance the threads
// on short weights: k/v have 128 rows).
std::vector<at::Tensor> pairs_bf16(const at::Tensor& x, const std::vector<at::Tensor>& ws) {
  const int64_t M = x.size(0), K = x.size(1);
  const uint16_t* xp = packed_pairs(x);
  const int64_t tile_rows = kernels::dpbf16_pairs_tile_rows(M);
  return over_row_groups(x, ws, tile_rows, [&](int64_t n0, int64_t n1, const uint16_t* w, float* y, int64_t N) {
    kernels::matmul_wt_dpbf16_pairs(xp, M, K, w, n0, n1, y, N);
  });
}

// Large-M bf16 where the CPU multiplies bf16 natively (AVX512-BF16 / AMX-BF16) and neither batch
// kernel takes the product (K not a multiple of 32, or --bf16-products aten): ATen's bf16
// product (oneDNN) on activations rounded to bf16 once, fp32 accumulation, the output rounded to
// bf16 (what the layers of a bf16 model see in ROLL's vLLM). Measured at the 0.5B shapes on Zen 4,
// 2 threads: 314 GFLOP/s at M = 512 against 162 for widened tiles, 221 against 105 at M = 64.
at::Tensor native_bf16(const at::Tensor& x, const at::Tensor& w) {
  return at::mm(x.to(at::kBFloat16), w.t()).to(at::kFloat);
}

}  // namespace

bool& linear_native_bf16() {
  static bool on = core::cpu_features().native_bf16();
  return on;
}

bool& linear_amx() {
  static bool on = kernels::amx_usable();
  return on;
}

// Whether large-M native products where the CPU has AVX512-BF16 but no usable AMX tiles run on
// the vdpbf16ps pair kernel rather than through ATen.
static bool& linear_pairs() {
  static bool on = core::cpu_features().avx512_bf16;
  return on;
}

bool select_bf16_products(const std::string& mode) {
  if (mode != "native" && mode != "aten" && mode != "widened" && mode != "split") return false;
  linear_native_bf16() = mode == "aten" || (mode == "native" && core::cpu_features().native_bf16());
  linear_split() = mode != "widened" && kernels::have_avx2();
  linear_amx() = mode == "native" && kernels::amx_usable();
  linear_pairs() = mode == "native" && core::cpu_features().avx512_bf16;
  return true;
}

const char* linear_path(at::ScalarType weight_dtype) {
  if (weight_dtype != at::kBFloat16)
    return core::cpu_features().avx512f ? "fp32: AVX-512 streaming kernel for small M, BLAS above"
           : linear_packed_fp32()       ? "fp32: AVX2 streaming kernel for small M, AVX2 kernel over packed weight panels above"
                                        : "fp32: AVX2 streaming kernel for small M, BLAS above";
  if (linear_native_bf16() && linear_amx())
    return "bf16: vdpbf16ps streaming kernel for one row (activations rounded to bf16), AMX tiles from 2 rows (AMX-BF16)";
  if (linear_native_bf16())
    return linear_pairs()
               ? "bf16: vdpbf16ps streaming kernel for small M, vdpbf16ps over x packed in pairs above (activations "
                 "rounded to bf16) (AVX512-BF16)"
               : "bf16: vdpbf16ps streaming kernel for small M (activations rounded to bf16), ATen's bf16 products "
                 "above (AVX512-BF16)";
  if (linear_split())
    return core::cpu_features().native_bf16()
               ? "bf16: streaming kernel for small M (AVX2 kernel over x split in even and odd elements on rows "
                 "over 2048 and up to 24 rows), AVX2 kernel over packed weight panels above (native "
                 "bf16 off)"
               : "bf16: streaming kernel for small M (AVX2 kernel over x split in even and odd elements on rows "
                 "over 2048 and up to 24 rows), AVX2 kernel over packed weight panels above (no native "
                 "bf16 here)";
  return core::cpu_features().native_bf16()
             ? "bf16: streaming kernel for small M, weight tiles widened to fp32 for BLAS above (native bf16 off)"
             : "bf16: streaming kernel for small M, weight tiles widened to fp32 for BLAS above (no native bf16 here)";
}

namespace {

enum class Path { kGemv, kStreaming, kDpbf16, kAmx, kPairs, kNativeBf16, kSplit, kPacked, kTiledBf16, kBlas };

Path path_of(int64_t M, int64_t K, at::ScalarType dtype) {
  // One fp32 row: BLAS gemv, except on AVX-512, where the streaming kernel (one weight row at a
  // time, one stream through memory) read the 0.5B shapes' weights at 29-34 GB/s against gemv's
  // 23-30 (Zen 4, interleaved).
  if (dtype == at::kFloat && M == 1 && !core::cpu_features().avx512f) return Path::kGemv;
  if (M <= linear_small_m_threshold(dtype, K)) {
    if (dtype != at::kBFloat16) return Path::kStreaming;
    if (linear_native_bf16() && core::cpu_features().avx512_bf16) return Path::kDpbf16;
    // Measured at the 0.5B shapes on Zen 3 (bench_linear, 2 threads): on long rows (K = 4864,
    // where 4 rows of x no longer sit in L1 beside the weight row) the split kernel ran 89-96
    // GFLOP/s at 8 rows against the streaming kernel's 42-63, and even at 2; on short rows (K =
    // 896) the streaming kernel's single stream per thread reads faster (q/o at 8 rows 107 against
    // 63-73). Above 12 rows the split and packed kernels take over (below).
    return M > 1 && K > 2048 && linear_split() ? Path::kSplit : Path::kStreaming;
  }
  if (dtype != at::kBFloat16) return dtype == at::kFloat && linear_packed_fp32() ? Path::kPacked : Path::kBlas;
  if (linear_native_bf16() && linear_amx() && K % 32 == 0) return Path::kAmx;
  if (linear_native_bf16() && linear_pairs() && K % 32 == 0) return Path::kPairs;
  if (linear_native_bf16()) return Path::kNativeBf16;
  // Measured at the 0.5B shapes on Zen 3 (2 threads, weights from memory, GFLOP/s): on rows up
  // to 2048 the split kernel ran 121-123 at 16 rows against the packed kernel's 114-117, 134-137
  // against 141-145 at 32, and fell to ~100 from 40 rows, where the packed kernel ran 161-169 at
  // 64 and 181-190 at 512; on K = 4864 the packed kernel led from 13 rows (111-113 against
  // 104-105). Widened tiles through OpenBLAS ran 59-106 up to 32 rows, 104-129 at 64.
  if (linear_split()) return K <= 2048 && M <= 24 ? Path::kSplit : Path::kPacked;
  return Path::kTiledBf16;
}

at::Tensor product(const at::Tensor& x, const at::Tensor& w) {
  switch (path_of(x.size(0), x.size(1), w.scalar_type())) {
    case Path::kGemv: return at::mv(w, x[0]).unsqueeze(0);  // BLAS gemv
    case Path::kStreaming: return streaming(x, w);
    case Path::kDpbf16: return streaming_dpbf16(x, {w})[0];
    case Path::kAmx: return amx_bf16(x, {w})[0];
    case Path::kPairs: return pairs_bf16(x, {w})[0];
    case Path::kNativeBf16: return native_bf16(x, w);
    case Path::kSplit: return split_bf16(x, {w})[0];
    case Path::kPacked: return w.scalar_type() == at::kFloat ? packed_fp32(x, w) : packed_bf16(x, {w})[0];
    case Path::kTiledBf16: return tiled_bf16(x, w);
    case Path::kBlas: break;
  }
  return at::mm(x, w.t());
}

}  // namespace

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  at::Tensor y = product(x, w);
  if (b.defined()) y.add_(b);
  return y;
}

std::vector<at::Tensor> linear_shared_input(const at::Tensor& x, const std::vector<at::Tensor>& ws,
                                            const std::vector<at::Tensor>& bs) {
  bool same_dtype = true;
  for (const at::Tensor& w : ws) same_dtype = same_dtype && w.scalar_type() == ws.front().scalar_type();
  std::vector<at::Tensor> ys;
  const Path path = ws.empty() || !same_dtype ? Path::kBlas : path_of(x.size(0), x.size(1), ws.front().scalar_type());
  if (path == Path::kDpbf16) ys = streaming_dpbf16(x, ws);
  else if (path == Path::kAmx) ys = amx_bf16(x, ws);
  else if (path == Path::kPairs) ys = pairs_bf16(x, ws);
  else if (path == Path::kSplit) ys = split_bf16(x, ws);
  else if (path == Path::kPacked && ws.front().scalar_type() == at::kBFloat16) ys = packed_bf16(x, ws);
  else
    for (const at::Tensor& w : ws) ys.push_back(product(x, w));
  for (size_t i = 0; i < ys.size() && i < bs.size(); ++i)
    if (bs[i].defined()) ys[i].add_(bs[i]);
  return ys;
}

}  // namespace roll::engine
