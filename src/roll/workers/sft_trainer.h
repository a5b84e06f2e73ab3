#pragma once
// The training side of ROLL's SFTWorker (roll/pipeline/sft/sft_worker.py), as a plain class a
// worker process hosts. One instance per data-parallel rank; every rank makes the same calls
// (train_step, val_step and checkpoints are collective).
//
//   SftTrainer sft(pipeline, pipeline.sft_train, model_dir, rank, world, group);
//   Batch out = sft.train_step(batch);  // out.meta["metrics"]: sft_train/loss@sum, grad_norm, lr
//   Batch val = sft.val_step(batch);    // sft_train/loss@sum, no update
//
// The loss is ROLL's op_compute_language_loss: cross-entropy of the label tokens (labels != -100;
// the collator's labels are already shifted, labels[:, t] is the token predicted at position t),
// summed and divided by the label tokens of the whole backward mini-batch over all data-parallel
// ranks (docs/rl.md token-mean). Micro-batches of per_device_train_batch_size in batch order (the
// strategy does not shuffle), gradient_accumulation_steps per optimizer step, each loss scaled by
// rl::loss_scale_factor, grad clipping and the LR schedule of the strategy. See docs/sft.md.
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

// ROLL's IGNORE_INDEX: the label of positions that are not trained (prompt, padding).
inline constexpr int64_t kIgnoreIndex = -100;

class SftTrainer {
 public:
  // Loads `model_dir` in worker.model_args.dtype; options from train_options_from_config(pipeline,
  // worker, world_size, 1). `group`: the data-parallel group (null when world_size is 1). Collective.
  SftTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker, const std::string& model_dir,
             int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group);
  // The same with explicit training options (tests: another optimizer, no schedule).
  SftTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker, const std::string& model_dir,
             int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group, train::TrainOptions options);
  ~SftTrainer();
  SftTrainer(const SftTrainer&) = delete;
  SftTrainer& operator=(const SftTrainer&) = delete;

  // Reads input_ids, attention_mask, position_ids and labels [B, S] (labels[:, t] is
  // input_ids[:, t + 1] or -100). meta["metrics"]: <name>/loss@sum per micro-batch (÷ backward
  // steps, so that the ranks' values sum to the step's global token-mean loss), <name>/grad_norm
  // per optimizer step, <name>/lr (the rate of the next step, as ROLL's actor/lr).
  Batch train_step(const Batch& batch);
  // The same loss without grad or update, in infer_batch_size micro-batches, normalised by the
  // label tokens of the whole batch over all ranks: the ranks' <name>/loss@sum values sum to
  // the batch's token-mean loss.
  Batch val_step(const Batch& batch);

  // train/checkpoint.h under `root`; collective.
  std::string save_checkpoint(const std::string& root, int64_t step);
  void load_checkpoint(const std::string& dir);

  const std::string& name() const;  // sft_train unless the worker config names it
  train::TrainStrategy& strategy();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::workers
