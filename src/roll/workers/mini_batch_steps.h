#pragma once
// The optimizer steps of the SFT, DPO and distillation trainers: one per backward mini-batch of
// ROLL's fixed plan (no shuffle, one epoch), each loss divided by its mini-batch's global
// normaliser (label tokens, or pairs, summed over the data-parallel ranks) and scaled as ROLL's
// backends scale a micro-batch (rl::loss_scale_factor).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "roll/rl/metrics.h"

namespace roll::comm {
class ProcessGroup;
}
namespace roll::train {
class TrainStrategy;
}

namespace roll::workers {

struct MiniBatchSteps {
  train::TrainStrategy& strategy;
  comm::ProcessGroup* norm_group;  // the normalisers' all-reduce (null: one rank)
  int64_t world = 1;
  bool apply_loss_scale = true;    // false: the loss is not divided by micro-batches and ranks
  std::string role;                // names <role>/grad_norm
};

// Runs the steps over `rows` rows: `local_normaliser(rows of the mini-batch)` is this rank's part
// of the normaliser (the sum over ranks, at least 1, is what the losses divide by);
// `micro_loss(rows of the micro-batch, normaliser)` is a micro-batch's normalised loss, which the
// callback also logs. Adds <role>/grad_norm per step to `metrics`; returns the number of steps.
// Collective over the ranks of norm_group and of the strategy.
int64_t run_mini_batch_steps(const MiniBatchSteps& steps, int64_t rows,
                             const std::function<double(const std::vector<int64_t>&)>& local_normaliser,
                             const std::function<at::Tensor(const std::vector<int64_t>&, double)>& micro_loss,
                             rl::MetricMap& metrics);

}  // namespace roll::workers
