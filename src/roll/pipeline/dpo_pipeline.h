#pragma once
// ROLL's DPO pipeline (roll/pipeline/dpo/dpo_pipeline.py, docs/dpo.md): the preference pairs of
// actor_train.data_args.file_name (dpo_data.h) in global batches of dp x gradient_accumulation_steps
// x per_device_train_batch_size pairs, epoch after epoch (num_train_epochs), each epoch in an order
// shuffled from `seed` and the epoch (the last partial batch dropped), at most max_steps steps. Per
// step: the reference cluster's log-probs of both responses of every pair, then one
// actor_train.train_step with the DPO loss (dpo_trainer.h). Validation every eval_steps (step 0
// included): the pairs of validation.data_args.file_name through reference and actor_train.val_step,
// logged as val/actor/{loss,acc,chosen_reward,reject_reward}, the mean over all validation batches.
// Checkpoints of actor_train every save_steps and at the last step; resume continues at the next
// batch of the same epoch order.
#include <memory>

#include "roll/pipeline/pipeline_base.h"

namespace roll::pipeline {

class DpoPipeline : public PipelineBase {
 public:
  // Reads and encodes the pairs (the tokenizer and template of actor_train's model) and plans the
  // steps: max_steps, or fewer when num_train_epochs of the data end first.
  DpoPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options);
  ~DpoPipeline() override;

 protected:
  Metrics run_step(int64_t step) override;
  Metrics validate(int64_t step) override;
  bool has_validation() const override;
  nlohmann::json state_kv() const override;
  void restore_kv(const nlohmann::json& kv) override;
  std::vector<std::string> checkpoint_clusters() const override { return {"actor_train"}; }
  std::string role_of(const std::string& cluster) const override;
  // "epoch 2/3, loss 0.693, acc 0.5"
  std::string progress_postfix(const Metrics& step_metrics) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::pipeline
