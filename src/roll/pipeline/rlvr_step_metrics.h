#pragma once
// The RLVR step's data metrics (token/*, critic/*, group/*), validation scores and sample log.
#include <cstdint>
#include <map>
#include <string>

#include "roll/core/batch.h"

namespace roll::pipeline {

// token/*, critic/*, group/* (n > 1) over the whole step's batch.
std::map<std::string, double> rollout_data_metrics(const Batch& batch, int64_t n);
// val_correct/<tag>/mean and val_correct/all/mean: the share of samples scoring 1.
std::map<std::string, double> validation_metrics(const Batch& scored);

// Logs the first few prompt/response pairs of the step every `logging_steps` steps.
void log_samples(const Batch& batch, int64_t step, int64_t logging_steps);

}  // namespace roll::pipeline
