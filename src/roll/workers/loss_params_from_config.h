#pragma once
// ROLL config -> the rl/ loss parameters: the only place that maps the policy-loss knobs of
// PipelineConfig / actor_train (ppo_config.h, rl_config.h) onto rl::PolicyLossParams and rl::TrainInferParams.
#include "roll/config/schema.h"
#include "roll/rl/policy_loss.h"
#include "roll/rl/train_infer.h"

namespace roll::workers {

// The agentic ActorWorker's loss (docs/rl.md, last paragraph): fm = m, no sample weights, no
// rl_loss_coef, `ratio_type` (token | segment) instead of `importance_sampling` (token | seq).
bool agentic_loss(const config::PipelineConfig& pipeline);

// pg_variant comes from actor_train.pg_variant when actor_train.worker_cls is ROLL's ActorPGWorker
// (an error names the key when it is missing there); every other worker_cls runs PPO, as in ROLL.
// Bad enum names are ConfigErrors naming the key.
rl::PolicyLossParams policy_loss_params(const config::PipelineConfig& pipeline, const config::WorkerConfig& actor);

// train_infer_correction.{is_weight, filters}.
rl::TrainInferParams train_infer_params(const config::PipelineConfig& pipeline);

}  // namespace roll::workers
