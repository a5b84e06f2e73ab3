#pragma once
// ROLL's logit-distillation pipeline (roll/pipeline/distill/distill_pipeline.py, docs/distill.md):
// the rows of student.data_args.file_name (question_key / answer_key, optionally prompt_key and
// system_key, encoded as SFT conversations, sft_data.h) in global batches of dp x
// per_device_train_batch_size x gradient_accumulation_steps rows, epoch after epoch (SFT's step
// plan). Per step: the teacher's top-k distribution at every trained position (teacher_forward),
// then one student.train_step (distill_trainer.h). Validation every eval_steps (step 0 included):
// student/val_loss (the cross-entropy) and student/val_distill_loss (the divergence to the teacher)
// over validation.data_args.file_name. Checkpoints of the student every save_steps and at the last
// step; resume continues at the next batch of the same epoch order.
#include <memory>

#include "roll/pipeline/pipeline_base.h"

namespace roll::pipeline {

class DistillPipeline : public PipelineBase {
 public:
  DistillPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options);
  ~DistillPipeline() override;

 protected:
  Metrics run_step(int64_t step) override;
  Metrics validate(int64_t step) override;
  bool has_validation() const override;
  nlohmann::json state_kv() const override;
  void restore_kv(const nlohmann::json& kv) override;
  std::vector<std::string> checkpoint_clusters() const override { return {"student"}; }
  std::string progress_postfix(const Metrics& step_metrics) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::pipeline
