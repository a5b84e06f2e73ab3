#include "roll/pipeline/data/stratified_sampler.h"

#include <fmt/format.h>

#include <algorithm>

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/data/shuffle.h"

namespace roll::pipeline {

DomainCounts split_batch(const DomainRatios& ratios, int64_t batch_size) {
  if (batch_size < 1) throw Error(fmt::format("batch size must be >= 1, got {}", batch_size));
  if (ratios.empty()) throw Error("no domains to share the batch among");
  DomainCounts counts;
  int64_t accumulated = 0;
  for (size_t i = 0; i < ratios.size(); ++i) {
    const auto& [domain, ratio] = ratios[i];
    // Python's int() truncates toward zero, as the cast does.
    const int64_t n = i + 1 == ratios.size() ? batch_size - accumulated : static_cast<int64_t>(ratio * batch_size);
    if (n < 0)
      throw Error(fmt::format("domain '{}' gets {} of a batch of {}: the ratios before it already take {} (they sum "
                              "to more than 1)",
                              domain, n, batch_size, accumulated));
    accumulated += n;
    counts.emplace_back(domain, n);
  }
  return counts;
}

BatchStratifiedSampler::BatchStratifiedSampler(const std::vector<std::string>& domain_of,
                                               const DomainRatios& domain_ratios, int64_t batch_size, bool drop_last)
    : batch_size_(batch_size) {
  if (domain_of.empty()) throw Error("BatchStratifiedSampler: the dataset is empty");
  double sum = 0;
  for (const auto& [domain, ratio] : domain_ratios) {
    if (ratio < 0) throw Error(fmt::format("BatchStratifiedSampler: domain '{}' has a negative ratio {}", domain, ratio));
    std::vector<int64_t> indices;
    for (size_t i = 0; i < domain_of.size(); ++i)
      if (domain_of[i] == domain) indices.push_back(static_cast<int64_t>(i));
    if (indices.empty()) {
      log::warn("BatchStratifiedSampler: domain '{}' has no rows; it is left out of sampling", domain);
      continue;
    }
    ratios_.emplace_back(domain, ratio);
    domain_indices_.push_back(std::move(indices));
    sum += ratio;
  }
  if (ratios_.empty() || sum <= 0)
    throw Error("BatchStratifiedSampler: no domain with rows and a positive ratio is left");
  for (auto& entry : ratios_) entry.second /= sum;
  batch_num_ = split_batch(ratios_, batch_size);
  for (size_t d = 0; d < batch_num_.size(); ++d) {
    const auto& [domain, num] = batch_num_[d];
    if (num == 0)
      throw Error(fmt::format("BatchStratifiedSampler: domain '{}' (ratio {}) gets 0 rows of a batch of {}; raise its "
                              "ratio or the batch size",
                              domain, ratios_[d].second, batch_size));
    const auto rows = static_cast<int64_t>(domain_indices_[d].size());
    total_batches_ = std::max(total_batches_, drop_last ? rows / num : (rows + num - 1) / num);
  }
}

std::vector<std::vector<int64_t>> BatchStratifiedSampler::batches(uint64_t seed) const {
  SeededRng rng(seed);
  // Each domain's indices shuffled, then tiled to the rows the epoch needs.
  std::vector<std::vector<int64_t>> extended(domain_indices_.size());
  for (size_t d = 0; d < domain_indices_.size(); ++d) {
    std::vector<int64_t> shuffled = domain_indices_[d];
    shuffle_in_place(shuffled, rng);
    const int64_t required = total_batches_ * batch_num_[d].second;
    extended[d].reserve(static_cast<size_t>(required));
    for (int64_t k = 0; k < required; ++k) extended[d].push_back(shuffled[static_cast<size_t>(k) % shuffled.size()]);
  }
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(total_batches_));
  for (int64_t b = 0; b < total_batches_; ++b) {
    auto& batch = out[static_cast<size_t>(b)];
    batch.reserve(static_cast<size_t>(batch_size_));
    for (size_t d = 0; d < extended.size(); ++d) {
      const int64_t num = batch_num_[d].second;
      batch.insert(batch.end(), extended[d].begin() + b * num, extended[d].begin() + (b + 1) * num);
    }
    shuffle_in_place(batch, rng);
  }
  shuffle_in_place(out, rng);
  return out;
}

}  // namespace roll::pipeline
