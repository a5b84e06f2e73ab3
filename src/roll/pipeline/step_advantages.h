#pragma once
// The step maths from scores to advantages, over the rl/ functions: RLVR's per domain (sample mask
// -> overlong penalty -> reward postprocess -> token reward -> advantage, with the domain's
// metrics) and the token-reward + advantage part the agentic step shares.
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

// Token rewards (docs/rl.md: reward on the last token, KL penalty, clip) and advantages (docs/rl.md)
// from `response_level_rewards` [B]; sets token_level_rewards, advantages, raw_advantages and
// returns on `b` (which holds attention_mask, position_ids, response_mask, old/ref log-probs and,
// with gae, values). `advantage_mask` [B, S-1]: fm (RLVR) or response_mask[:, 1:] (agentic).
rl::MetricMap token_rewards_and_advantages(Batch& b, const at::Tensor& response_level_rewards,
                                           const at::Tensor& advantage_mask, const config::PipelineConfig& c,
                                           rl::KlController& kl);
}  // namespace roll::pipeline
