#include "roll/engine/paged_attention.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>

#include "roll/core/error.h"
#include "roll/core/parallel_for.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine {

namespace {

constexpr int64_t kQueryTile = 16;  // query tokens per task: their keys are read once for all

struct Task {
  int64_t seq, head, i0, i1, cost;
};

struct Shapes {
  int64_t Hq, Hkv, D, group, block_size;
};

// Attention of queries [i0, i1) of sequence `s` for kv head `h` (and its `group` query heads).
template <typename T>
void attend_task(const Task& task, const AttentionMetadata& m, const Shapes& sh, const float* q, const T* kc,
                 const T* vc, float* out, std::vector<float>& buf) {
  const int64_t g = sh.group, D = sh.D, bs = sh.block_size;
  const int64_t rows = (task.i1 - task.i0) * g;
  buf.resize(rows * (2 * D + bs + 3) + 2 * bs * D);
  float* qs = buf.data();        // scaled queries [rows, D]
  float* acc = qs + rows * D;    // weighted values [rows, D]
  float* sc = acc + rows * D;    // scores of one block [rows, bs]
  float* mx = sc + rows * bs;    // running max
  float* sum = mx + rows;        // running denominator
  float* qpos = sum + rows;      // query positions (as float: compared with key positions)
  float* kf = qpos + rows;       // a bf16 block's keys and values widened once for all rows [bs, D]
  float* vf = kf + bs * D;
  const int64_t base = m.ctx_len[task.seq] - m.q_len[task.seq];  // position of the sequence's first query
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = task.i0 + r / g, head = task.head * g + r % g;
    const float* src = q + ((m.q_start[task.seq] + i) * sh.Hq + head) * D;
    for (int64_t d = 0; d < D; ++d) qs[r * D + d] = src[d] * scale;
    mx[r] = -std::numeric_limits<float>::infinity();
    sum[r] = 0;
    qpos[r] = static_cast<float>(base + i);
  }
  std::fill(acc, acc + rows * D, 0.0f);
  const int64_t keys = base + task.i1;  // the last query sees keys [0, keys)
  const int32_t* table = m.block_tables.data() + task.seq * m.max_blocks;
  const int64_t token_stride = sh.Hkv * D;
  for (int64_t blk = 0; blk * bs < keys; ++blk) {
    const int64_t n = std::min(bs, keys - blk * bs);
    const int64_t first = (static_cast<int64_t>(table[blk]) * bs * sh.Hkv + task.head) * D;
    const float* kb;
    const float* vb;
    int64_t stride = token_stride;
    if constexpr (std::is_same_v<T, float>) {
      kb = kc + first;
      vb = vc + first;
    } else {  // the group's rows all read this block: widen it once, not once per row
      for (int64_t t = 0; t < n; ++t) {
        kernels::bf16_to_float(kc + first + t * token_stride, kf + t * D, D);
        kernels::bf16_to_float(vc + first + t * token_stride, vf + t * D, D);
      }
      kb = kf, vb = vf, stride = D;
    }
    const int64_t first_pos = blk * bs;
    for (int64_t r = 0; r < rows; ++r) {
      float* s = sc + r * bs;
      kernels::dots(qs + r * D, kb, stride, n, D, s);
      // Causal mask: only the last blocks of a prefill chunk reach past a query.
      for (int64_t t = std::max<int64_t>(0, static_cast<int64_t>(qpos[r]) + 1 - first_pos); t < n; ++t)
        s[t] = -std::numeric_limits<float>::infinity();
      const float bm = kernels::max_of(s, n);
      if (bm == -std::numeric_limits<float>::infinity()) {  // every key of the block is in its future
        std::fill(s, s + n, 0.0f);
        continue;
      }
      if (bm > mx[r]) {
        const float rescale = std::exp(mx[r] - bm);  // 0 on the first block
        sum[r] *= rescale;
        for (int64_t d = 0; d < D; ++d) acc[r * D + d] *= rescale;
        mx[r] = bm;
      }
      sum[r] += static_cast<float>(kernels::sum_exp(s, n, mx[r], 1.0f, s));  // s <- exp(s - max)
      kernels::weighted_sum(acc + r * D, s, vb, stride, n, D);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = task.i0 + r / g, head = task.head * g + r % g;
    float* dst = out + ((m.q_start[task.seq] + i) * sh.Hq + head) * D;
    const float inv = 1.0f / sum[r];
    for (int64_t d = 0; d < D; ++d) dst[d] = acc[r * D + d] * inv;
  }
}

}  // namespace

PagedAttention::PagedAttention(PagedKvCache& cache, int64_t num_heads) : cache_(cache), num_heads_(num_heads) {}

at::Tensor PagedAttention::attend(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  if (!meta_) throw Error("PagedAttention::attend called outside an engine step");
  const AttentionMetadata& m = *meta_;
  const KvCacheShape& cs = cache_.shape();
  const Shapes sh{num_heads_, cs.num_kv_heads, cs.head_dim, num_heads_ / cs.num_kv_heads, cs.block_size};
  const int64_t N = q.size(0);

  // Write the step's keys and values into their slots first: queries of a prefill chunk attend
  // to keys of the same chunk.
  at::Tensor kc = cache_.keys(layer), vc = cache_.values(layer);
  kc.view({-1, sh.Hkv, sh.D}).index_copy_(0, m.slots, k.to(cache_.dtype()));
  vc.view({-1, sh.Hkv, sh.D}).index_copy_(0, m.slots, v.to(cache_.dtype()));

  at::Tensor q32 = q.to(at::kFloat).contiguous();
  at::Tensor out = at::empty({N, sh.Hq * sh.D}, q32.options());

  std::vector<Task> tasks;
  for (int64_t s = 0; s < static_cast<int64_t>(m.q_len.size()); ++s)
    for (int64_t i0 = 0; i0 < m.q_len[s]; i0 += kQueryTile) {
      const int64_t i1 = std::min(m.q_len[s], i0 + kQueryTile);
      const int64_t keys = m.ctx_len[s] - m.q_len[s] + i1;
      for (int64_t h = 0; h < sh.Hkv; ++h) tasks.push_back({s, h, i0, i1, keys * (i1 - i0)});
    }
  // Longest first, handed out one at a time: causal prefill tiles differ widely in cost.
  std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) { return a.cost > b.cost; });
  std::atomic<int64_t> next{0};
  const float* qp = q32.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const int64_t workers = std::min<int64_t>(at::get_num_threads(), static_cast<int64_t>(tasks.size()));
  auto run = [&](auto* kp, auto* vp) {
    at::parallel_for(0, std::max<int64_t>(1, workers), 1, [&](int64_t, int64_t) {
      std::vector<float> buf;
      for (int64_t t = next++; t < static_cast<int64_t>(tasks.size()); t = next++)
        attend_task(tasks[t], m, sh, qp, kp, vp, op, buf);
    });
  };
  if (cache_.dtype() == at::kBFloat16)
    run(reinterpret_cast<const uint16_t*>(kc.data_ptr<at::BFloat16>()),
        reinterpret_cast<const uint16_t*>(vc.data_ptr<at::BFloat16>()));
  else if (cache_.dtype() == at::kFloat)
    run(kc.data_ptr<float>(), vc.data_ptr<float>());
  else
    throw Error("the paged KV cache supports fp32 and bf16");
  return q.scalar_type() == at::kFloat ? out : out.to(q.scalar_type());
}

}  // namespace roll::engine
