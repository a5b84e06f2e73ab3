#pragma once
// The training side of ROLL's actor (actor_train: roll.pipeline.{rlvr,agentic}.actor_worker.ActorWorker
// and ActorPGWorker), as a plain class a worker process hosts. One instance per data-parallel
// rank; every rank makes the same calls (train_step and checkpoints are collective).
//
//   ActorTrainer actor(pipeline, pipeline.actor_train, model_dir, rank, world, group);
//   Batch lp = actor.compute_log_probs(batch);    // log_probs, entropy [B, S-1]
//   Batch out = actor.train_step(batch);          // out.meta["metrics"]: actor/pg_loss@sum, ...
//
// train_step (docs/rl.md): ppo_epochs passes over the rank's rows in plan_mini_batches
// order (with use_dynamic_batching_in_train: the token-budget micro-batches of
// dynamic_micro_batches.h, gradient_accumulation_steps per mini-batch, unshuffled); per mini-batch
// the normalisers of m = response_mask[:, 1:] and fm = final_response_mask are summed over the
// ranks, every micro-batch loss (rl::policy_loss) is scaled by rl::loss_scale_factor and one
// optimizer step follows. See docs/workers.md.
#include <cstdint>
#include <memory>
#include <string>

#include "roll/config/schema.h"
#include "roll/core/batch.h"
#include "roll/rl/policy_loss.h"
#include "roll/rl/train_infer.h"
#include "roll/train/options.h"

namespace roll::comm {
class ProcessGroup;
}
namespace roll::train {
class TrainStrategy;
}

namespace roll::workers {

class ActorTrainer {
 public:
  // Loads `model_dir` in actor.model_args.dtype; options from train_options_from_config(pipeline,
  // actor, world_size, pipeline.ppo_epochs). `group`: the data-parallel group of the role (null
  // when world_size is 1). Collective.
  ActorTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& actor, const std::string& model_dir,
               int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group);
  // The same with explicit training options (tests and benchmarks: another optimizer, no warmup).
  ActorTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& actor, const std::string& model_dir,
               int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group, train::TrainOptions options);
  ~ActorTrainer();
  ActorTrainer(const ActorTrainer&) = delete;
  ActorTrainer& operator=(const ActorTrainer&) = delete;

  // Reads input_ids, attention_mask, position_ids, response_mask [B, S]; advantages [B, S-1];
  // ref_log_probs (use_kl_loss), old_log_probs (enable_old_logprobs_recompute), final_response_mask,
  // infer_logprobs, train_infer_is_weight (recompute with is_weight.enabled), scores (topr) and the
  // non-tensor `difficulty` (difficulty_loss_weight). Returns an empty batch whose meta["metrics"]
  // holds ROLL's actor metrics (metrics_json.h format; "@sum" values already ÷ backward steps).
  Batch train_step(const Batch& batch);
  // No grad, in infer_batch_size micro-batches (or dynamic ones, use_dynamic_batching_in_infer):
  // log_probs and entropy [B, S-1] × response_mask[:, 1:], in the batch's row order.
  Batch compute_log_probs(const Batch& batch);

  // train/checkpoint.h under `root` (ROLL: <output_dir>/<worker name>); collective.
  std::string save_checkpoint(const std::string& root, int64_t step);
  void load_checkpoint(const std::string& dir);

  const std::string& name() const;  // actor_train unless the worker config names it
  bool agentic() const;
  const rl::PolicyLossParams& loss_params() const;
  train::TrainStrategy& strategy();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::workers
