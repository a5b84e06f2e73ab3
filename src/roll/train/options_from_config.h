#pragma once
// ROLL worker config -> TrainOptions. Strategy names and their knobs:
//   deepspeed_train: strategy_config.zero_optimization.stage (0-3);
//                    zero_optimization.offload_optimizer.device / offload_param.device: cpu
//   fsdp2_train:     reshard_after_forward true (default) -> stage 3, false -> stage 2;
//                    fsdp_size (HSDP when 1 < fsdp_size < world), offload_policy, param/reduce_dtype
//   megatron_train:  plain data parallel; use_distributed_optimizer -> stage 1
// What was interpreted how is recorded in TrainOptions::notes.
#include <cstdint>

#include "roll/config/base_config.h"
#include "roll/config/worker_config.h"
#include "roll/train/options.h"

namespace roll::train {

// `run`: the top-level seed and max_ckpt_to_keep; `max_grad_norm`: the pipeline's clip (PPOConfig).
// `dp_size`: data-parallel ranks of the worker (the LR schedule spans max_steps / dp_size
// optimizer steps, docs/config.md). `ppo_epochs`: passes per train call (the actor: pipeline.ppo_epochs;
// the critic: 1).
TrainOptions train_options_from_config(const config::BaseConfig& run, double max_grad_norm,
                                       const config::WorkerConfig& worker, int64_t dp_size, int64_t ppo_epochs);

}  // namespace roll::train
