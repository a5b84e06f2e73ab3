#pragma once
// The critic of the GAE path (ROLL's CriticWorker): a value-head model trained on the returns,
// one epoch per pipeline step (docs/rl.md). One instance per data-parallel rank; train_step and
// checkpoints are collective.
//
//   CriticTrainer critic(pipeline, pipeline.critic, model_dir, rank, world, group);
//   Batch v = critic.compute_values(batch);   // values [B, S-1]
//   Batch out = critic.train_step(batch);     // out.meta["metrics"]: critic/loss, ...
#include <cstdint>
#include <memory>
#include <optional>
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

class CriticTrainer {
 public:
  // Loads `model_dir` with a value head (initialised from pipeline.seed when the directory has
  // none: ROLL's critic starts from a policy model); options from train_options_from_config(pipeline,
  // critic, world_size, 1). Collective.
  CriticTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& critic,
                const std::string& model_dir, int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group);
  CriticTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& critic,
                const std::string& model_dir, int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group,
                train::TrainOptions options);
  ~CriticTrainer();
  CriticTrainer(const CriticTrainer&) = delete;
  CriticTrainer& operator=(const CriticTrainer&) = delete;

  // No grad, in infer_batch_size micro-batches (or dynamic ones, use_dynamic_batching_in_infer):
  // `values` [B, S-1] = value head output[:, :-1] (unmasked, as ROLL), in the batch's row order.
  Batch compute_values(const Batch& batch);
  // One epoch over the rank's rows in plan_mini_batches order (or dynamic micro-batches,
  // use_dynamic_batching_in_train: dynamic_micro_batches.h). Reads input_ids, attention_mask,
  // position_ids, response_mask [B, S]; values (V_old) and returns [B, S-1]. meta["metrics"]:
  // critic/{loss, value, vpred, clipfrac, error} per micro-batch, <name>/grad_norm per step, critic/lr.
  Batch train_step(const Batch& batch);

  std::string save_checkpoint(const std::string& root, int64_t step);
  void load_checkpoint(const std::string& dir);

  const std::string& name() const;  // critic unless the worker config names it
  std::optional<double> value_clip() const;
  train::TrainStrategy& strategy();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::workers
