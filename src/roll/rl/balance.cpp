#include "roll/rl/balance.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "roll/core/error.h"

namespace roll::rl {
namespace {

// ROLL's partition sets and states, compared exactly as its Python __lt__ methods compare them, so the
// heap below pops them in the same order and the partitions come out identical.
struct KkSet {
  int64_t sum = 0;
  std::vector<std::pair<int64_t, int64_t>> items;  // (index, workload)

  bool operator<(const KkSet& o) const {
    if (sum != o.sum) return sum < o.sum;
    if (items.size() != o.items.size()) return items.size() < o.items.size();
    return items < o.items;
  }
};

struct KkState {
  std::vector<KkSet> sets;

  void sort_sets() {
    // sorted(sets, reverse=True): descending and stable.
    std::stable_sort(sets.begin(), sets.end(), [](const KkSet& a, const KkSet& b) { return b < a; });
  }
  int64_t spread() const { return sets.front().sum - sets.back().sum; }
  // Larger spread first; ties: the larger first set first.
  bool operator<(const KkState& o) const {
    if (spread() != o.spread()) return spread() > o.spread();
    return o.sets.front() < sets.front();
  }
  void merge(const KkState& o) {
    const size_t k = sets.size();
    for (size_t i = 0; i < k; ++i) {
      const KkSet& src = o.sets[k - 1 - i];
      sets[i].items.insert(sets[i].items.end(), src.items.begin(), src.items.end());
      sets[i].sum += src.sum;
    }
    sort_sets();
  }
};

// CPython's heapq (_siftdown/_siftup), which decides the order among equal states.
void sift_down(std::vector<KkState>& heap, size_t start, size_t pos) {
  KkState item = std::move(heap[pos]);
  while (pos > start) {
    size_t parent = (pos - 1) >> 1;
    if (item < heap[parent]) {
      heap[pos] = std::move(heap[parent]);
      pos = parent;
      continue;
    }
    break;
  }
  heap[pos] = std::move(item);
}

void sift_up(std::vector<KkState>& heap, size_t pos) {
  const size_t end = heap.size(), start = pos;
  KkState item = std::move(heap[pos]);
  size_t child = 2 * pos + 1;
  while (child < end) {
    size_t right = child + 1;
    if (right < end && !(heap[child] < heap[right])) child = right;
    heap[pos] = std::move(heap[child]);
    pos = child;
    child = 2 * pos + 1;
  }
  heap[pos] = std::move(item);
  sift_down(heap, start, pos);
}

void heap_push(std::vector<KkState>& heap, KkState s) {
  heap.push_back(std::move(s));
  sift_down(heap, 0, heap.size() - 1);
}

KkState heap_pop(std::vector<KkState>& heap) {
  KkState last = std::move(heap.back());
  heap.pop_back();
  if (heap.empty()) return last;
  KkState top = std::move(heap[0]);
  heap[0] = std::move(last);
  sift_up(heap, 0);
  return top;
}

KkState make_state(const std::vector<std::pair<int64_t, int64_t>>& items, int64_t k) {
  KkState s;
  s.sets.resize(k);
  for (size_t i = 0; i < items.size(); ++i) {
    s.sets[i].items.push_back(items[i]);
    s.sets[i].sum += items[i].second;
  }
  s.sort_sets();
  return s;
}

MetricMap seqlen_unbalance(const std::vector<int64_t>& seq_lens, const Partitions& parts, std::string_view prefix) {
  const size_t k = parts.size(), n = seq_lens.size();
  const size_t bs = n / k;
  int64_t mn = 0, mx = 0, total = 0;
  bool first = true;
  for (size_t off = 0; off < n; off += bs) {
    int64_t cur = 0;
    for (size_t i = off; i < std::min(n, off + bs); ++i) cur += seq_lens[i];
    if (first || cur < mn) mn = cur;
    if (first || cur > mx) mx = cur;
    first = false;
    total += cur;
  }
  std::vector<int64_t> balanced;
  for (const auto& p : parts) {
    int64_t s = 0;
    for (int64_t i : p) s += seq_lens[i];
    balanced.push_back(s);
  }
  MetricMap m;
  std::string pre(prefix);
  m.add(pre + "/min", static_cast<double>(mn));
  m.add(pre + "/max", static_cast<double>(mx));
  m.add(pre + "/minmax_diff", static_cast<double>(mx - mn));
  m.add(pre + "/balanced_min", static_cast<double>(*std::min_element(balanced.begin(), balanced.end())));
  m.add(pre + "/balanced_max", static_cast<double>(*std::max_element(balanced.begin(), balanced.end())));
  m.add(pre + "/mean", static_cast<double>(total) / static_cast<double>(k));
  return m;
}

}  // namespace

Partitions karmarkar_karp(const std::vector<int64_t>& workloads, int64_t k, bool equal_size) {
  const int64_t n = static_cast<int64_t>(workloads.size());
  if (k <= 0) throw Error(fmt::format("karmarkar_karp: number of partitions must be positive, got {}", k));
  if (n < k) throw Error(fmt::format("karmarkar_karp: {} items cannot fill {} partitions", n, k));
  if (equal_size && n % k != 0)
    throw Error(fmt::format("karmarkar_karp: {} items do not split into {} equal partitions", n, k));
  std::vector<std::pair<int64_t, int64_t>> sorted;  // (workload, index), ascending
  for (int64_t i = 0; i < n; ++i) sorted.emplace_back(workloads[i], i);
  std::sort(sorted.begin(), sorted.end());
  std::vector<KkState> heap;
  if (equal_size) {
    for (int64_t off = 0; off < n; off += k) {
      std::vector<std::pair<int64_t, int64_t>> items;
      for (int64_t i = 0; i < k; ++i) items.emplace_back(sorted[off + i].second, sorted[off + i].first);
      heap_push(heap, make_state(items, k));
    }
  } else {
    for (const auto& [w, i] : sorted) heap_push(heap, make_state({{i, w}}, k));
  }
  while (heap.size() > 1) {
    KkState a = heap_pop(heap);
    KkState b = heap_pop(heap);
    a.merge(b);
    heap_push(heap, std::move(a));
  }
  Partitions parts;
  std::vector<bool> seen(n, false);
  for (const KkSet& s : heap.front().sets) {
    std::vector<int64_t> p;
    for (const auto& [idx, w] : s.items) {
      p.push_back(idx);
      seen[idx] = true;
    }
    if (p.empty()) throw Error(fmt::format("karmarkar_karp: partition {} of {} is empty", parts.size(), k));
    std::sort(p.begin(), p.end());
    parts.push_back(std::move(p));
  }
  if (std::find(seen.begin(), seen.end(), false) != seen.end()) throw Error("karmarkar_karp: not all items placed");
  return parts;
}

int64_t sequence_workload(int64_t len) { return 24576 * len + len * len; }

BalanceResult batch_balance(const std::vector<int64_t>& seq_lens, int64_t dp_size, std::string_view prefix,
                            bool keep_minibatch, int64_t minibatch_size) {
  const int64_t n = static_cast<int64_t>(seq_lens.size());
  if (dp_size <= 0) throw Error(fmt::format("batch_balance: dp_size must be positive, got {}", dp_size));
  std::vector<int64_t> work(n);
  for (int64_t i = 0; i < n; ++i) work[i] = sequence_workload(seq_lens[i]);
  BalanceResult out;
  if (keep_minibatch) {
    if (minibatch_size <= 0 || n % minibatch_size != 0 || minibatch_size % dp_size != 0)
      throw Error(fmt::format("batch_balance: with keep_minibatch the minibatch_size ({}) must be positive, divide "
                              "the batch ({} samples) and be divisible by dp_size ({})",
                              minibatch_size, n, dp_size));
    out.partitions.assign(dp_size, {});
    for (int64_t mb = 0; mb < n / minibatch_size; ++mb) {
      std::vector<int64_t> w(work.begin() + mb * minibatch_size, work.begin() + (mb + 1) * minibatch_size);
      Partitions parts = karmarkar_karp(w, dp_size, true);
      for (int64_t r = 0; r < dp_size; ++r)
        for (int64_t i : parts[r]) out.partitions[r].push_back(i + mb * minibatch_size);
    }
  } else {
    if (n % dp_size != 0)
      throw Error(fmt::format("batch_balance: {} samples do not split evenly over dp_size {}", n, dp_size));
    out.partitions = karmarkar_karp(work, dp_size, true);
  }
  for (auto& p : out.partitions) {
    std::sort(p.begin(), p.end(), [&](int64_t a, int64_t b) { return std::pair(work[a], a) < std::pair(work[b], b); });
    std::vector<int64_t> ordered;
    for (size_t i = 0; i < p.size(); i += 2) ordered.push_back(p[i]);
    const int64_t sz = static_cast<int64_t>(p.size());
    for (int64_t i = sz % 2 == 0 ? sz - 1 : sz - 2; i >= 1; i -= 2) ordered.push_back(p[i]);
    p = std::move(ordered);
  }
  for (const auto& p : out.partitions) out.order.insert(out.order.end(), p.begin(), p.end());
  out.metrics = seqlen_unbalance(seq_lens, out.partitions, prefix);
  return out;
}

int64_t packing_pad_factor(int64_t tp, int64_t cp) {
  int64_t f = cp > 1 ? cp * 2 * tp : tp;
  return std::lcm<int64_t>(16, f);
}

namespace {

std::vector<int64_t> padded_lengths(const std::vector<int64_t>& seq_lens, const SequencePackingParams& p) {
  int64_t f = packing_pad_factor(p.tp_size, p.cp_size);
  std::vector<int64_t> out;
  for (int64_t l : seq_lens) out.push_back((l + f - 1) / f * f);
  return out;
}

}  // namespace

int64_t packing_num_micro_batches(const std::vector<int64_t>& seq_lens, int64_t padded_width,
                                  const SequencePackingParams& p) {
  if (p.max_packed_sequence_length < padded_width)
    throw Error(fmt::format("max_packed_sequence_length ({}) must be >= the padded sequence length of the batch ({})",
                            p.max_packed_sequence_length, padded_width));
  if (seq_lens.empty()) throw Error("sequence packing: empty batch");
  std::vector<int64_t> eff = padded_lengths(seq_lens, p);
  int64_t total = std::accumulate(eff.begin(), eff.end(), int64_t{0});
  int64_t num = std::max<int64_t>(1, (total + p.max_packed_sequence_length - 1) / p.max_packed_sequence_length);
  num = std::min<int64_t>(num, static_cast<int64_t>(seq_lens.size()));
  return std::max(num, p.min_num_micro_batches);
}

PackingPlan load_balance_pack(const std::vector<int64_t>& seq_lens, int64_t padded_width, int64_t num_micro_batches,
                              const SequencePackingParams& p, bool is_train) {
  const int64_t n = static_cast<int64_t>(seq_lens.size());
  int64_t num = num_micro_batches;
  // Megatron's interleaved schedule needs the count to be a multiple of pp (microbatch group size).
  if (p.vp_size > 1 && p.pp_size > 0) num = (num + p.pp_size - 1) / p.pp_size * p.pp_size;
  if (num > n)
    throw Error(fmt::format("sequence packing: {} micro-batches for {} samples on this rank (the count is the "
                            "maximum over data-parallel ranks)",
                            num, n));
  std::vector<int64_t> eff = padded_lengths(seq_lens, p);
  std::vector<int64_t> work(n);
  for (int64_t i = 0; i < n; ++i) work[i] = sequence_workload(eff[i]);
  Partitions parts = karmarkar_karp(work, num, false);
  std::vector<std::pair<std::pair<int64_t, int64_t>, size_t>> keyed;  // ((workload, first idx), part)
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t w = 0;
    for (int64_t j : parts[i]) w += work[j];
    keyed.push_back({{w, parts[i].empty() ? 0 : parts[i][0]}, i});
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return b.first < a.first; });
  PackingPlan plan;
  plan.num_micro_batches = num;
  // sorted[::2][::-1] + sorted[1::2]
  std::vector<size_t> even, odd;
  for (size_t i = 0; i < keyed.size(); ++i) (i % 2 == 0 ? even : odd).push_back(keyed[i].second);
  for (auto it = even.rbegin(); it != even.rend(); ++it) plan.partitions.push_back(parts[*it]);
  for (size_t i : odd) plan.partitions.push_back(parts[i]);

  std::string phase = is_train ? "train" : "forward";
  int64_t total = std::accumulate(seq_lens.begin(), seq_lens.end(), int64_t{0});
  int64_t mx = 0, mn = -1;
  for (const auto& part : plan.partitions) {
    int64_t s = 0;
    for (int64_t j : part) s += seq_lens[j];
    mx = std::max(mx, s);
    mn = mn < 0 ? s : std::min(mn, s);
  }
  double cells = static_cast<double>(n) * static_cast<double>(padded_width);
  plan.metrics.add(phase + "/num_micro_batches", static_cast<double>(num));
  plan.metrics.add(phase + "/effective_ratio", cells > 0 ? static_cast<double>(total) / cells : 0.0);
  plan.metrics.add(phase + "/seq_len_balance_ratio", mx > 0 ? static_cast<double>(mn) / static_cast<double>(mx) : 0.0);
  plan.metrics.add(phase + "/avg_samples_per_pack", static_cast<double>(n) / static_cast<double>(num));
  return plan;
}

std::vector<int64_t> packing_order(const Partitions& partitions) {
  std::vector<int64_t> order;
  for (const auto& p : partitions) order.insert(order.end(), p.begin(), p.end());
  return order;
}

std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& order) {
  const int64_t n = static_cast<int64_t>(order.size());
  std::vector<int64_t> inv(n, -1);
  for (int64_t pos = 0; pos < n; ++pos) {
    int64_t orig = order[pos];
    if (orig < 0 || orig >= n || inv[orig] != -1)
      throw Error(fmt::format("inverse_permutation: entry {} (= {}) is out of range or repeated", pos, orig));
    inv[orig] = pos;
  }
  return inv;
}

at::Tensor restore_results_order(const at::Tensor& results, const Partitions& partitions) {
  std::vector<int64_t> inv = inverse_permutation(packing_order(partitions));
  if (results.dim() == 0 || results.size(0) != static_cast<int64_t>(inv.size()))
    throw Error(fmt::format("restore_results_order: results have {} rows but the partitions hold {} samples",
                            results.dim() ? results.size(0) : 0, inv.size()));
  at::Tensor idx = at::tensor(at::ArrayRef<int64_t>(inv), at::TensorOptions().dtype(at::kLong));
  return results.index_select(0, idx.to(results.device()));
}

}  // namespace roll::rl
