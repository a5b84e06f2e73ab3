#pragma once
// ROLL's agentic pipeline (docs/agentic.md): env workers play multi-turn episodes (FrozenLake, Sokoban)
// against actor_infer through the env-affinity router; the driver hosts the router and the
// GroupQueueManager as services and takes complete groups each step; then log-probs, response-level
// reward normalisation (reward_normalization.grouping), token rewards, advantages and train_step.
// Validation plays val_batch_size episodes on the val_env fleet every eval_steps (and dumps them
// as text under render_save_dir when set). A checkpoint keeps the train queue's episode counters
// and the adaptive KL coefficient, so a resumed run plays the episodes an uninterrupted one would.
#include <memory>

#include "roll/pipeline/pipeline_base.h"

namespace roll::pipeline {

class AgenticPipeline : public PipelineBase {
 public:
  AgenticPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options);
  ~AgenticPipeline() override;

 protected:
  Metrics run_step(int64_t step) override;
  Metrics validate(int64_t step) override;
  bool has_validation() const override;
  void on_started() override;
  void on_finished() override;
  Metrics before_model_update(int64_t step) override;
  nlohmann::json state_kv() const override;
  void restore_kv(const nlohmann::json& kv) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::pipeline
