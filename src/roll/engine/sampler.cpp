#include "roll/engine/sampler.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>

#include "roll/core/parallel_for.h"
#include "roll/core/rng.h"
#include "roll/engine/cpu_kernels.h"

namespace roll::engine {

namespace {

struct Scratch {
  std::vector<float> work, terms;
  std::vector<uint8_t> seen;
  std::vector<int32_t> idx;
  std::vector<double> prob;
};

int32_t argmax(const float* x, int64_t n) { return static_cast<int32_t>(kernels::argmax_of(x, n)); }

// Indices of the k largest values, largest first (lower index first among equals).
void top_k(const float* x, int64_t n, int64_t k, std::vector<int32_t>& out) {
  out.clear();
  auto worse = [&](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); };  // min-heap order
  for (int32_t i = 0; i < n; ++i) {
    if (static_cast<int64_t>(out.size()) < k) {
      out.push_back(i);
      std::push_heap(out.begin(), out.end(), worse);
    } else if (x[i] > x[out.front()]) {
      std::pop_heap(out.begin(), out.end(), worse);
      out.back() = i;
      std::push_heap(out.begin(), out.end(), worse);
    }
  }
  std::sort(out.begin(), out.end(), worse);
}

// All indices, largest value first (lower index first among equals).
void sort_all(const float* x, int64_t n, std::vector<int32_t>& out) {
  out.resize(n);
  std::iota(out.begin(), out.end(), 0);
  std::sort(out.begin(), out.end(), [&](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
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

int32_t sample_row(const float* w, int64_t V, const SamplingParams& p, double u, Scratch& s) {
  const double inv_t = 1.0 / p.temperature;
  const float wmax = kernels::max_of(w, V);
  const float scale = static_cast<float>(inv_t);
  const bool use_top_k = p.top_k > 0 && p.top_k < V;
  if (use_top_k || p.top_p < 1.0) {
    // Candidates largest first: the top-k, or for top-p alone a prefix that holds the nucleus.
    int64_t k = use_top_k ? p.top_k : std::min<int64_t>(V, 1024);
    double full_mass = 0;
    if (!use_top_k) full_mass = kernels::sum_exp(w, V, wmax, scale);
    top_k(w, V, k, s.idx);
    s.prob.resize(s.idx.size());
    double mass = 0;
    for (size_t i = 0; i < s.idx.size(); ++i) mass += s.prob[i] = std::exp((w[s.idx[i]] - wmax) * inv_t);
    if (!use_top_k && mass < p.top_p * full_mass) {  // a flat distribution: sort the whole vocabulary
      sort_all(w, V, s.idx);
      s.prob.resize(V);
      mass = 0;
      for (int64_t i = 0; i < V; ++i) mass += s.prob[i] = std::exp((w[s.idx[i]] - wmax) * inv_t);
    }
    size_t keep = s.idx.size();
    if (p.top_p < 1.0) {
      // Keep tokens while the mass before them is below top_p (at least one).
      const double limit = p.top_p * mass;
      double before = 0;
      keep = 0;
      while (keep < s.idx.size() && (keep == 0 || before < limit)) before += s.prob[keep++];
    }
    return draw(s.idx, s.prob, keep, u);
  }
  // Whole vocabulary: inverse CDF in index order.
  s.terms.resize(V);
  const double total = kernels::sum_exp(w, V, wmax, scale, s.terms.data());
  const double target = u * total;
  double acc = 0;
  for (int64_t i = 0; i < V; ++i) {
    acc += s.terms[i];
    if (target < acc) return static_cast<int32_t>(i);
  }
  return argmax(w, V);
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
  // Raw log-probs: logit - logsumexp(logits), one fused pass per row.
  const int64_t R = logits.size(0);
  std::vector<float> lse(R);
  at::parallel_for(0, R, 4, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = base + r * V;
      const float m = kernels::max_of(row, V);
      lse[r] = m + static_cast<float>(std::log(kernels::sum_exp(row, V, m, 1.0f)));
    }
  });
  std::atomic<int64_t> next{0};
  const int64_t workers = std::min<int64_t>(at::get_num_threads(), static_cast<int64_t>(specs.size()));
  at::parallel_for(0, workers, 1, [&](int64_t, int64_t) {
    Scratch s;
    for (int64_t i = next++; i < static_cast<int64_t>(specs.size()); i = next++) {
      const SampleSpec& spec = specs[i];
      const SamplingParams& p = *spec.params;
      const float* row = base + spec.row * V;
      const float* w = row;
      if (p.repetition_penalty != 1.0) {
        s.work.assign(row, row + V);
        s.seen.assign(V, 0);
        const float pen = static_cast<float>(p.repetition_penalty);
        for (int32_t t : spec.context) {
          if (t < 0 || t >= V || s.seen[t]) continue;
          s.seen[t] = 1;
          s.work[t] = s.work[t] > 0 ? s.work[t] / pen : s.work[t] * pen;
        }
        w = s.work.data();
      }
      const int32_t tok = p.temperature == 0.0
                              ? argmax(w, V)
                              : sample_row(w, V, p, sample_uniform(spec.seed, spec.sample_index, spec.position), s);
      out[i] = {tok, row[tok] - lse[spec.row]};
    }
  });
  return out;
}

}  // namespace roll::engine
