#pragma once
// The RLVR step's per-domain math (spec 4.3 step 9: sample mask -> reward postprocess -> token
// reward -> advantage, with the domain's metrics) and the step's data metrics (spec 4.4), over the
// rl/ functions.
#include <map>
#include <string>

#include "roll/config/schema.h"
#include "roll/core/batch.h"
#include "roll/rl/kl.h"
#include "roll/rl/metrics.h"
#include "roll/rl/reward.h"

namespace roll::pipeline {

// Adds final_response_mask, response_level_rewards, token_level_rewards, advantages, raw_advantages
// and returns to `d` (one domain's rows: scores, old/ref log-probs, masks; values with gae).
rl::MetricMap compute_domain_advantages(Batch& d, const config::PipelineConfig& c, const std::string& domain,
                                        rl::RunningMomentsMap& running, rl::KlController& kl);

// Token rewards (spec 3.1: reward on the last token, KL penalty, clip) and advantages (spec 3.2)
// from `response_level_rewards` [B]; sets token_level_rewards, advantages, raw_advantages and
// returns on `b` (which holds attention_mask, position_ids, response_mask, old/ref log-probs and,
// with gae, values). `advantage_mask` [B, S-1]: fm (RLVR) or response_mask[:, 1:] (agentic).
rl::MetricMap token_rewards_and_advantages(Batch& b, const at::Tensor& response_level_rewards,
                                           const at::Tensor& advantage_mask, const config::PipelineConfig& c,
                                           rl::KlController& kl);

// token/*, critic/*, group/* (n > 1) over the whole step's batch.
std::map<std::string, double> rollout_data_metrics(const Batch& batch, int64_t n);
// val_correct/<tag>/mean and val_correct/all/mean: the share of samples scoring 1.
std::map<std::string, double> validation_metrics(const Batch& scored);

// Logs the first few prompt/response pairs of the step every `logging_steps` steps.
void log_samples(const Batch& batch, int64_t step, int64_t logging_steps);

}  // namespace roll::pipeline
