#include "roll/pipeline/data/epoch_batches.h"

#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/pipeline/data/dataset_iterator.h"

namespace roll::pipeline {

EpochBatches::EpochBatches(int64_t rows, int64_t global_batch, int64_t seed)
    : rows_(rows), global_batch_(global_batch), steps_per_epoch_(rows / global_batch), seed_(seed) {
  if (global_batch < 1 || steps_per_epoch_ < 1)
    throw Error(fmt::format("EpochBatches: {} rows hold no whole batch of {}", rows, global_batch));
}

std::vector<int64_t> EpochBatches::rows_of_step(int64_t step) {
  const int64_t epoch = epoch_of(step), index = step % steps_per_epoch_;
  if (epoch != order_epoch_) {
    order_ = DatasetIterator::epoch_order(rows_, seed_, epoch);
    order_epoch_ = epoch;
  }
  return {order_.begin() + index * global_batch_, order_.begin() + (index + 1) * global_batch_};
}

nlohmann::json EpochBatches::state() const {
  return {{"rows", rows_}, {"global_batch", global_batch_}, {"steps_per_epoch", steps_per_epoch_}};
}

void EpochBatches::warn_if_changed(const nlohmann::json& saved, const std::string& pipeline) const {
  const nlohmann::json now = state();
  if (saved != now)
    log::warn("{}: the checkpoint was written for data {} and this run has {}: the resumed steps draw other rows "
              "than an uninterrupted run would",
              pipeline, saved.dump(), now.dump());
}

int64_t validation_batch_rows(int64_t rows, int64_t dp, int64_t wanted, const std::string& pipeline) {
  if (rows >= wanted) return wanted;
  if (rows < dp)
    throw ConfigError("validation.data_args.file_name",
                      fmt::format("validation.data_args.file_name: {} validation rows cannot be split over {} "
                                  "data-parallel ranks",
                                  rows, dp));
  const int64_t kept = rows / dp * dp;
  log::warn("{}: {} validation rows are fewer than one validation batch of {} (dp x gradient_accumulation_steps x "
            "infer_batch_size): validating on {} of them",
            pipeline, rows, wanted, kept);
  return kept;
}

}  // namespace roll::pipeline
