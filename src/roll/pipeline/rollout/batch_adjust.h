#pragma once
// ROLL's adjust_batch (docs/agentic.md, `batch_adjust_mode`): the agentic batch is made a multiple of D,
// the lcm of the batch sizes the train and forward passes cut it into, so every data-parallel
// rank gets whole micro-batches. r = B mod D;
//   copy           duplicate D - r random rows (drawn with replacement only when D - r > B)
//   delete         remove r random rows (copy instead when that would empty the batch)
//   auto           copy when r >= B/2 or B < D, else delete
//   random_sample  keep exactly D random rows (copy when B < D)
// Duplicates keep their masks, so they are trained twice (as in ROLL).
#include <cstdint>
#include <string>

#include "roll/core/batch.h"

namespace roll::config {
struct PipelineConfig;
struct PlacementPlan;
}

namespace roll::pipeline {

struct AdjustedBatch {
  Batch batch;
  int64_t added = 0;    // system/batch_add_count
  int64_t removed = 0;  // system/batch_remove_count
};

// lcm(per_device_train_batch_size x GA x dp, infer_batch_size x dp) of actor_train, and the
// reference's infer_batch_size x dp and the critic's train and infer sizes when those run.
int64_t batch_divisor(const config::PipelineConfig& config, const config::PlacementPlan& plan);

// `mode` as batch_adjust_mode; an unknown one is a roll::ConfigError naming the key.
AdjustedBatch adjust_batch(const Batch& batch, int64_t divisor, const std::string& mode, uint64_t seed);

}  // namespace roll::pipeline
