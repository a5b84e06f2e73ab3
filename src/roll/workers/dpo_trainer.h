#pragma once
// The training side of ROLL's DPO ActorWorker (roll/pipeline/dpo/actor_worker.py, docs/dpo.md), as
// a plain class the actor_train worker of a DPO pipeline hosts. One instance per data-parallel rank;
// every rank makes the same calls (train_step, val_step and checkpoints are collective).
//
//   DpoTrainer dpo(pipeline, pipeline.actor_train, model_dir, rank, world, group);
//   Batch out = dpo.train_step(batch);  // meta["metrics"]: actor/loss, actor/acc, actor/chosen_reward,
//                                       // actor/reject_reward, actor_train/grad_norm, actor/lr
//   Batch val = dpo.val_step(batch);    // the same four, no update
//
// The batch holds pairs: rows 2i and 2i+1 are pair i's chosen and rejected response (collate_dpo),
// with input_ids, attention_mask, position_ids, response_mask [2P, S] and the reference's
// ref_log_probs [2P, S-1] (the reference cluster's compute_log_probs). A sequence's log-prob is the
// sum of its response tokens' log-probs; the loss is rl::dpo_loss with the config's beta,
// label_smoothing and ipo. Micro-batches of per_device_train_batch_size rows (ROLL doubles the
// configured pairs) in batch order, gradient_accumulation_steps per optimizer step; each
// micro-batch's loss is its pairs' summed loss over the pairs of the whole mini-batch on all ranks,
// so the step's gradient is that of the mean loss over the global batch's pairs.
#include <cstdint>
#include <memory>
#include <string>

#include "roll/config/schema.h"
#include "roll/core/batch.h"
#include "roll/train/options.h"

namespace roll::comm {
class ProcessGroup;
}
namespace roll::train {
class TrainStrategy;
}

namespace roll::workers {

class DpoTrainer {
 public:
  // Loads `model_dir` in worker.model_args.dtype; options from train_options_from_config. `group`:
  // the data-parallel group (null when world_size is 1). Collective.
  DpoTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker, const std::string& model_dir,
             int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group);
  ~DpoTrainer();
  DpoTrainer(const DpoTrainer&) = delete;
  DpoTrainer& operator=(const DpoTrainer&) = delete;

  Batch train_step(const Batch& batch);
  // No grad, in infer_batch_size-row micro-batches (whole pairs).
  Batch val_step(const Batch& batch);

  // train/checkpoint.h under `root`; collective.
  std::string save_checkpoint(const std::string& root, int64_t step);
  void load_checkpoint(const std::string& dir);

  const std::string& name() const;  // actor_train unless the worker config names it
  train::TrainStrategy& strategy();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::workers
