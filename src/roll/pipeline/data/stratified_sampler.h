#pragma once
// How a batch is shared among domains (docs/pipelines.md and ROLL's roll/datasets/sampler.py).
//
// split_batch: ROLL's rule, used both by the RLVR pipeline (per-domain prompts per step, ratios as
// given) and by BatchStratifiedSampler (ratios normalised first): domains in the given order,
// int(ratio * batch_size) for all but the last, the last gets the remainder.
//
// BatchStratifiedSampler: batches of `batch_size` dataset indices in which each domain has its
// split_batch share. Domains of the ratios that have no row are dropped (with a warning) and the rest
// renormalised; the number of batches is the largest per-domain capacity (rows // share with
// drop_last, else ceil); a domain with fewer rows than it needs is tiled (its shuffled indices
// repeated), so every index of a domain is used at least once per epoch when drop_last is false.
// Shuffles use rollcpp's own seeded generator, not numpy's: the batches are deterministic in the
// seed but not the ones ROLL would draw.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace roll::pipeline {

using DomainRatios = std::vector<std::pair<std::string, double>>;
using DomainCounts = std::vector<std::pair<std::string, int64_t>>;

// Throws roll::Error when batch_size < 1, there are no domains, or a count comes out negative
// (ratios summing to more than 1), naming the domain.
DomainCounts split_batch(const DomainRatios& ratios, int64_t batch_size);

class BatchStratifiedSampler {
 public:
  // domain_of[i]: the domain of dataset row i. Throws roll::Error on an empty dataset, a negative
  // ratio, no domain left with rows, or a domain whose share of the batch is 0.
  BatchStratifiedSampler(const std::vector<std::string>& domain_of, const DomainRatios& domain_ratios,
                         int64_t batch_size, bool drop_last = true);

  const DomainRatios& domain_ratios() const { return ratios_; }      // normalised, empty domains dropped
  const DomainCounts& domain_batch_num() const { return batch_num_; }  // rows of each domain per batch
  int64_t size() const { return total_batches_; }                      // batches per epoch

  // One epoch: size() batches, each domain's rows shuffled and tiled, each batch shuffled, then the
  // batch order shuffled; all from `seed`.
  std::vector<std::vector<int64_t>> batches(uint64_t seed) const;

 private:
  int64_t batch_size_;
  DomainRatios ratios_;
  DomainCounts batch_num_;
  std::vector<std::vector<int64_t>> domain_indices_;  // in ratios_ order
  int64_t total_batches_ = 0;
};

}  // namespace roll::pipeline
