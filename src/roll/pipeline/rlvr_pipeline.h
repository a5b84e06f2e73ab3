#pragma once
// ROLL's RLVR pipeline (docs/pipelines.md): per step, prompts of every reward domain -> n samples each from
// actor_infer through the prompt-affinity router -> rewards from the domain's reward cluster ->
// reference and old log-probs -> per domain sample masks, reward normalisation, token rewards and
// advantages -> actor_train (and critic) train_step; validation every eval_steps. With
// async_generation_ratio > 0 every domain generates on its own thread across steps
// (rollout/async_rollout.h) and pauses only around the model update and validation.
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
  void on_finished() override;
  Metrics before_model_update(int64_t step) override;

 private:
  void start_async();

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::pipeline
