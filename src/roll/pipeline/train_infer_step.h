#pragma once
// ROLL's batch-level train-infer correction (docs/rl.md): with enable_old_logprobs_recompute the
// pipeline compares the recomputed old log-probs with the engine's (`infer_logprobs`) before the
// train step. It reports actor/train_infer_*, and as train_infer_correction asks, stores the IS
// weights in `train_infer_is_weight` (the actor multiplies them into its policy loss) and multiplies
// the filters into response_mask and final_response_mask. Without recompute the actor does the
// same per micro-batch against its first-pass log-probs.
#include <map>
#include <string>

#include "roll/config/pipeline_config.h"
#include "roll/core/batch.h"

namespace roll::pipeline {

// No-op (no metrics) unless the run recomputes old log-probs.
std::map<std::string, double> apply_train_infer_correction(const config::PipelineConfig& config, Batch& batch);

}  // namespace roll::pipeline
