#pragma once
// The drop-last loader of ROLL's SFT, DPO and distillation pipelines: each epoch's order shuffled
// from `seed` and the epoch (DatasetIterator::epoch_order), cut into steps_per_epoch global batches,
// the rows past the last whole batch left out. Also what their checkpoints record of it, and how
// their validation sets are cut.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace roll::pipeline {

class EpochBatches {
 public:
  EpochBatches() = default;
  // global_batch >= 1 and rows >= global_batch (the callers' step plans check both).
  EpochBatches(int64_t rows, int64_t global_batch, int64_t seed);

  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t epoch_of(int64_t step) const { return step / steps_per_epoch_; }
  // The dataset rows of pipeline step `step`, in batch order.
  std::vector<int64_t> rows_of_step(int64_t step);

  // {"rows", "global_batch", "steps_per_epoch"}: a resumed run draws the same batches only when
  // these are unchanged.
  nlohmann::json state() const;
  // A warning naming `pipeline` when a checkpoint's state() differs from this run's.
  void warn_if_changed(const nlohmann::json& saved, const std::string& pipeline) const;

 private:
  int64_t rows_ = 0, global_batch_ = 1, steps_per_epoch_ = 1, seed_ = 0;
  int64_t order_epoch_ = -1;  // the epoch order_ holds
  std::vector<int64_t> order_;
};

// Rows per validation batch: `wanted` (dp x gradient_accumulation_steps x infer batch), or, when
// the validation set is smaller, its largest multiple of dp with a warning (ROLL's drop-last loader
// would validate nothing). Fewer rows than dp is a ConfigError on validation.data_args.file_name.
int64_t validation_batch_rows(int64_t rows, int64_t dp, int64_t wanted, const std::string& pipeline);

}  // namespace roll::pipeline
