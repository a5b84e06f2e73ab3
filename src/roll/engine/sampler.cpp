#include "roll/engine/sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cmath>

#include "roll/core/parallel_for.h"
#include "roll/core/rng.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine {

namespace {

// The row is read from memory once, in blocks that stay in L1 while the few passes a block
// needs (its max, its sums of exponentials, the top-k filter) re-read it.
constexpr int64_t kBlock = 2048;

struct Scratch {
  std::vector<float> work, terms, block_max;
  std::vector<double> block_raw, block_tempered;
  std::vector<int32_t> idx, context;
  std::vector<double> prob;
};

// Indices ordered largest value first, lower index first among equals.
struct LargerFirst {
  const float* x;
  bool operator()(int32_t a, int32_t b) const { return x[a] > x[b] || (x[a] == x[b] && a < b); }
};

// Keeps the k largest of the values offered, as a heap whose front is the smallest kept.
struct TopK {
  int64_t k = 0;
  std::vector<int32_t>* heap = nullptr;
  const float* x = nullptr;

  bool full() const { return static_cast<int64_t>(heap->size()) >= k; }
  float floor() const { return x[heap->front()]; }
  // Offers x[i0..i1): only values above the current floor can enter, so a block whose max is at
  // or below it is skipped by the caller, and first_above skips runs of the others 16 at a time.
  void offer(int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1;) {
      if (full()) {
        i = kernels::first_above(x, i, i1, floor());
        if (i >= i1) return;
        std::pop_heap(heap->begin(), heap->end(), LargerFirst{x});
        heap->back() = static_cast<int32_t>(i);
      } else {
        heap->push_back(static_cast<int32_t>(i));
      }
      std::push_heap(heap->begin(), heap->end(), LargerFirst{x});
      ++i;
    }
  }
};

// What one pass over a row gives: its max and first argmax, log-sum-exp of the raw logits, and
// the total of exp((x - max) * inv_t), with each block's share of it left in
// Scratch::block_tempered (for the inverse-CDF draw).
struct RowStats {
  float max = -INFINITY;
  int64_t argmax = 0;
  double lse = 0;
  double tempered_mass = 0;
};

// need_raw: the raw log-sum-exp; inv_t > 0: the tempered block masses; top: the top-k filter.
RowStats scan_row(const float* w, int64_t V, bool need_raw, float inv_t, TopK* top, Scratch& s) {
  const int64_t nb = (V + kBlock - 1) / kBlock;
  s.block_max.resize(nb);
  s.block_raw.assign(nb, 0.0);
  s.block_tempered.assign(nb, 0.0);
  RowStats r;
  int64_t best_block = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const float* x = w + b * kBlock;
    const int64_t n = std::min(kBlock, V - b * kBlock);
    const float m = kernels::max_of(x, n);
    s.block_max[b] = m;
    if (m > r.max) r.max = m, best_block = b;
    if (m == -INFINITY) continue;  // masked out: no mass
    if (need_raw) s.block_raw[b] = kernels::sum_exp(x, n, m, 1.0f);
    if (inv_t > 0) s.block_tempered[b] = inv_t == 1.0f && need_raw ? s.block_raw[b] : kernels::sum_exp(x, n, m, inv_t);
    if (top && (!top->full() || m > top->floor())) top->offer(b * kBlock, b * kBlock + n);
  }
  const float* x = w + best_block * kBlock;
  const int64_t n = std::min(kBlock, V - best_block * kBlock);
  r.argmax = best_block * kBlock + kernels::argmax_of(x, n);
  if (std::isnan(r.max) || r.max == -INFINITY) r.argmax = std::max_element(w, w + V) - w;  // degenerate rows
  for (int64_t b = 0; b < nb; ++b) {
    if (s.block_max[b] == -INFINITY) continue;
    if (need_raw) r.lse += s.block_raw[b] * std::exp(static_cast<double>(s.block_max[b]) - r.max);
    if (inv_t > 0) {
      s.block_tempered[b] *= std::exp((static_cast<double>(s.block_max[b]) - r.max) * inv_t);
      r.tempered_mass += s.block_tempered[b];
    }
  }
  r.lse = r.max + std::log(r.lse);
  return r;
}

// Draws from the candidates `idx` with unnormalised probabilities `prob` (same order).
int32_t draw(const std::vector<int32_t>& idx, const std::vector<double>& prob, size_t count, double u) {
  double total = 0;
  for (size_t i = 0; i < count; ++i) total += prob[i];
  double target = u * total, acc = 0;
  for (size_t i = 0; i < count; ++i) {
    acc += prob[i];
    if (target < acc) return idx[i];
  }
  for (size_t i = count; i-- > 0;)  // rounding at the very end: the last candidate with mass
    if (prob[i] > 0) return idx[i];
  return idx[0];
}

// Inverse CDF over the whole vocabulary in index order: the block that holds u * mass from the
// blocks' shares (scan_row), then the token inside it.
int32_t draw_whole_vocabulary(const float* w, int64_t V, const RowStats& r, float inv_t, double u, Scratch& s) {
  const int64_t nb = static_cast<int64_t>(s.block_tempered.size());
  int64_t last = nb - 1;  // the last block with mass
  while (last > 0 && s.block_tempered[last] <= 0) --last;
  const double target = u * r.tempered_mass;
  double acc = 0;
  for (int64_t b = 0; b <= last; ++b) {
    const double share = s.block_tempered[b];
    if (share <= 0) continue;
    if (b < last && target >= acc + share) {
      acc += share;
      continue;
    }
    const float* x = w + b * kBlock;
    const int64_t n = std::min(kBlock, V - b * kBlock);
    s.terms.resize(kBlock);
    kernels::sum_exp(x, n, r.max, inv_t, s.terms.data());
    double inner = acc;
    for (int64_t i = 0; i < n; ++i) {
      inner += s.terms[i];
      if (target < inner) return static_cast<int32_t>(b * kBlock + i);
    }
    // The block's terms, summed one by one, fell short of its share by rounding.
    if (b == last)
      for (int64_t i = n; i-- > 0;)
        if (s.terms[i] > 0) return static_cast<int32_t>(b * kBlock + i);
    acc += share;
  }
  return static_cast<int32_t>(r.argmax);
}

// The nucleus of the candidates `s.idx` (any order): largest first, tokens kept while the mass
// before them is below top_p * mass (at least one); returns how many lead s.idx and s.prob.
// Pops from a heap, so only the kept tokens are ordered.
size_t nucleus(const float* w, double max, double inv_t, double top_p, double mass, Scratch& s) {
  auto smaller_first = [&](int32_t a, int32_t b) { return LargerFirst{w}(b, a); };
  std::make_heap(s.idx.begin(), s.idx.end(), smaller_first);
  s.prob.clear();
  const double limit = top_p < 1.0 ? top_p * mass : INFINITY;  // top_p 1: all (whatever the rounding)
  double before = 0;
  auto end = s.idx.end();
  while (end != s.idx.begin() && (s.prob.empty() || before < limit)) {
    std::pop_heap(s.idx.begin(), end, smaller_first);
    --end;
    s.prob.push_back(std::exp((w[*end] - max) * inv_t));
    before += s.prob.back();
  }
  std::reverse(end, s.idx.end());  // the kept tokens, largest first, then to the front
  std::rotate(s.idx.begin(), end, s.idx.end());
  return s.prob.size();
}

// Top-k and/or top-p. With top-k, the k candidates the scan kept, renormalised, then top-p among
// them (vLLM's order). Top-p alone takes the nucleus of the whole vocabulary from the tokens
// with probability >= (1 - top_p) / V: the others hold less than 1 - top_p of the mass together,
// so the nucleus is among those.
int32_t draw_restricted(const float* w, int64_t V, const SamplingParams& p, const RowStats& r, double u, Scratch& s) {
  const double inv_t = 1.0 / p.temperature;
  const bool use_top_k = p.top_k > 0 && p.top_k < V;
  double mass = r.tempered_mass;
  if (use_top_k) {
    mass = 0;
    for (int32_t i : s.idx) mass += std::exp((w[i] - r.max) * inv_t);
  } else {
    // exp((x - max) / t) >= (1 - top_p) * mass / V, less a margin for the exponential's rounding.
    const double log_floor = std::log((1.0 - p.top_p) * mass / static_cast<double>(V)) - 1e-3;
    const float threshold = static_cast<float>(r.max + log_floor / inv_t);
    s.idx.clear();
    for (int64_t i = kernels::first_above(w, 0, V, threshold); i < V; i = kernels::first_above(w, i + 1, V, threshold))
      s.idx.push_back(static_cast<int32_t>(i));
  }
  const size_t keep = nucleus(w, r.max, inv_t, p.top_p, mass, s);
  return draw(s.idx, s.prob, keep, u);
}

// The row with the repetition penalty applied to the context's tokens (vLLM/HF rule), in s.work.
const float* penalised(const float* row, int64_t V, const SampleSpec& spec, double penalty, Scratch& s) {
  s.work.assign(row, row + V);
  s.context.assign(spec.context.begin(), spec.context.end());
  std::sort(s.context.begin(), s.context.end());
  s.context.erase(std::unique(s.context.begin(), s.context.end()), s.context.end());
  const float pen = static_cast<float>(penalty);
  for (int32_t t : s.context)
    if (t >= 0 && t < V) s.work[t] = s.work[t] > 0 ? s.work[t] / pen : s.work[t] * pen;
  return s.work.data();
}

SampledToken sample_one(const float* row, int64_t V, const SampleSpec& spec, Scratch& s) {
  const SamplingParams& p = *spec.params;
  const bool greedy = p.temperature == 0.0;
  const float* w = row;
  double raw_lse = 0;
  if (p.repetition_penalty != 1.0) {
    raw_lse = scan_row(row, V, /*need_raw=*/true, 0.0f, nullptr, s).lse;
    w = penalised(row, V, spec, p.repetition_penalty, s);
  }
  const bool raw_here = w == row;
  const float inv_t = greedy ? 0.0f : static_cast<float>(1.0 / p.temperature);
  const bool use_top_k = !greedy && p.top_k > 0 && p.top_k < V;
  const bool restricted = !greedy && (use_top_k || p.top_p < 1.0);
  TopK top;
  if (use_top_k) {
    s.idx.clear();
    top = TopK{p.top_k, &s.idx, w};
  }
  const RowStats r = scan_row(w, V, raw_here, inv_t, use_top_k ? &top : nullptr, s);
  if (raw_here) raw_lse = r.lse;
  int32_t tok;
  if (greedy) tok = static_cast<int32_t>(r.argmax);
  else {
    const double u = sample_uniform(spec.seed, spec.sample_index, spec.position);
    tok = restricted ? draw_restricted(w, V, p, r, u, s) : draw_whole_vocabulary(w, V, r, inv_t, u, s);
  }
  return {tok, static_cast<float>(row[tok] - raw_lse)};
}

}  // namespace

double sample_uniform(uint64_t seed, int64_t sample_index, int64_t position) {
  const uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ static_cast<uint64_t>(sample_index)) ^ static_cast<uint64_t>(position));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

std::vector<SampledToken> sample_tokens(const at::Tensor& logits, std::span<const SampleSpec> specs) {
  std::vector<SampledToken> out(specs.size());
  if (specs.empty()) return out;
  const int64_t V = logits.size(1);
  const float* base = logits.data_ptr<float>();
  std::atomic<int64_t> next{0};
  const int64_t workers = std::min<int64_t>(at::get_num_threads(), static_cast<int64_t>(specs.size()));
  at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
    Scratch s;
    for (int64_t i = next++; i < static_cast<int64_t>(specs.size()); i = next++)
      out[i] = sample_one(base + specs[i].row * V, V, specs[i], s);
  });
  return out;
}

}  // namespace roll::engine
