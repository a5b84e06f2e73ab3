#pragma once
// ROLL's SFT pipeline (roll/pipeline/sft/sft_pipeline.py): the examples of
// sft_train.data_args.file_name (sft_data.h) in global batches of dp x per_device_train_batch_size
// x gradient_accumulation_steps rows, epoch after epoch, each epoch in an order shuffled from
// `seed` and the epoch (the last partial batch dropped); per step one sft_train.train_step
// (DP_MP_COMPUTE). The step count follows plan_sft_steps (max_steps when set, else whole epochs of
// num_train_epochs) and is handed to the workers for their LR schedule. Validation every eval_steps
// (step 0 included): the rows of validation.data_args.file_name in batches of dp x
// gradient_accumulation_steps x infer_batch_size through sft_train.val_step, logged as
// sft_train/val_loss (the mean of the batches' token-mean losses). Checkpoints of sft_train every
// save_steps and at the last step; resume continues at the next batch of the same epoch order.
#include <memory>

#include "roll/pipeline/pipeline_base.h"
#include "roll/pipeline/data/sft_data.h"

namespace roll::pipeline {

class SftPipeline : public PipelineBase {
 public:
  // Reads and encodes the data (the tokenizer and template of sft_train's model), plans the steps
  // and sets max_steps and sft_train.training_args.max_steps for the driver and the workers.
  SftPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options);
  ~SftPipeline() override;

  const SftStepPlan& step_plan() const;

 protected:
  Metrics run_step(int64_t step) override;
  Metrics validate(int64_t step) override;
  bool has_validation() const override;
  nlohmann::json state_kv() const override;
  void restore_kv(const nlohmann::json& kv) override;
  std::vector<std::string> checkpoint_clusters() const override { return {"sft_train"}; }
  // "epoch 2/3, loss 1.234" (the SFT epochs' progress rides on the step line).
  std::string progress_postfix(const Metrics& step_metrics) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::pipeline
