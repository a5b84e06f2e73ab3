#pragma once
// A role's metrics as they travel in Batch::meta["metrics"]: key -> list of numbers, one per
// micro-batch or optimizer step (ROLL's append_to_dict lists). Batch::concat appends the lists of
// the data-parallel ranks; rl::MetricMap::reduce then applies the "@sum/@max/..." reducers.
#include <nlohmann/json.hpp>

#include <cstdint>

#include "roll/rl/metrics.h"

namespace roll::workers {

nlohmann::json metrics_to_json(const rl::MetricMap& metrics);
// The inverse: numbers and (nested) lists of numbers; anything else is an error naming the key.
rl::MetricMap metrics_from_json(const nlohmann::json& metrics);

// ROLL ActorWorker.train_step: every "...@sum" list becomes one number, its total ÷ backward_steps
// (so that summing the ranks' values gives the mean over backward steps of the global value);
// other keys are kept. backward_steps <= 0 keeps the total.
rl::MetricMap average_sum_metrics(const rl::MetricMap& metrics, int64_t backward_steps);

}  // namespace roll::workers
