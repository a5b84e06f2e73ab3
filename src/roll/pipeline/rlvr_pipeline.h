#pragma once
// ROLL's RLVR pipeline (docs/pipelines.md): per step, prompts of every reward domain -> n samples each from
// actor_infer through the prompt-affinity router -> rewards from the domain's reward cluster ->
// reference and old log-probs -> per domain sample masks, reward normalisation, token rewards and
// advantages -> actor_train (and critic) train_step; validation every eval_steps.
#include <memory>

#include "roll/pipeline/pipeline_base.h"

namespace roll::pipeline {

class RlvrPipeline : public PipelineBase {
 public:
  RlvrPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options);
  ~RlvrPipeline() override;

 protected:
  Metrics run_step(int64_t step) override;
  Metrics validate(int64_t step) override;
  bool has_validation() const override;
  nlohmann::json state_kv() const override;
  void restore_kv(const nlohmann::json& kv) override;
  void on_started() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::pipeline
