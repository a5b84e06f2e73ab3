#pragma once
// A role's metrics as they travel in Batch::meta["metrics"]: key -> list of numbers, one per
// micro-batch or optimizer step (ROLL's append_to_dict lists). Batch::concat appends the lists of
// the data-parallel ranks; rl::MetricMap::reduce then applies the "@sum/@max/..." reducers.
// This is the one codec of that payload: the roles write it, the pipelines read it.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string_view>

#include "roll/rl/metrics.h"

namespace roll::workers {

nlohmann::json metrics_to_json(const rl::MetricMap& metrics);
// The inverse. A value is a number (NaN and infinities included: msgpack carries them) or a list,
// possibly nested, of numbers; an empty list adds the key with no values (reduce() leaves it out).
// Anything else (null, a bool, a string, an object) is an error naming `source` (who sent the
// metrics, e.g. "actor_train.train_step"; may be empty) and the key: a malformed metric is never
// dropped, so a producer must write flags as 0/1. `metrics` itself must be an object.
rl::MetricMap metrics_from_json(const nlohmann::json& metrics, std::string_view source = {});

// ROLL ActorWorker.train_step: every "...@sum" list becomes one number, its total ÷ backward_steps
// (so that summing the ranks' values gives the mean over backward steps of the global value);
// other keys are kept. backward_steps <= 0 keeps the total.
rl::MetricMap average_sum_metrics(const rl::MetricMap& metrics, int64_t backward_steps);

}  // namespace roll::workers
