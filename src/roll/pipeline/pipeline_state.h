#pragma once
// The driver's resumable state (docs/pipelines.md): ROLL's WorkerState as
// <output_dir>/pipeline/checkpoint-<step>/pipeline/worker_state_pipeline.json =
//   {step, log_history: [metrics per step], kv: {scheduler_state_<domain>: {...}, ...}}
// written to a temporary file and renamed, so a crash never leaves half a state file.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace roll::pipeline {

struct PipelineState {
  int64_t step = -1;  // the last step completed (-1: none)
  nlohmann::json log_history = nlohmann::json::array();
  nlohmann::json kv = nlohmann::json::object();
  std::string exp_name;  // the run that wrote it (empty in checkpoints from before it was kept)
  nlohmann::json config;  // the run's config as written (composed, not interpolated); null in older checkpoints
};

// <output_dir>/pipeline/checkpoint-<step>
std::string pipeline_checkpoint_dir(const std::string& output_dir, int64_t step);
void save_pipeline_state(const std::string& checkpoint_dir, const PipelineState& state);
// Reads <checkpoint_dir>/pipeline/worker_state_pipeline.json; roll::Error naming the file when it
// is missing or malformed.
PipelineState load_pipeline_state(const std::string& checkpoint_dir);

// The checkpoint `resume_from_checkpoint` names: a directory holding pipeline/worker_state_pipeline.json,
// or "true"/"latest" for the newest complete checkpoint-N under <output_dir>/pipeline. nullopt when
// the value is false/empty, and for "true"/"latest" when no complete checkpoint exists yet (a run
// stopped before its first checkpoint starts again from step 0). A directory without a complete
// state is a roll::Error naming it.
std::optional<std::string> find_resume_checkpoint(const std::string& value, const std::string& output_dir);

// A run resumes its own experiment: a checkpoint written under another exp_name is a ConfigError
// naming both (a checkpoint without a recorded exp_name is accepted).
void check_resume_exp_name(const std::string& checkpoint_dir, const PipelineState& state, const std::string& exp_name);

// Deletes checkpoint-N folders of every sub-folder of output_dir but the newest `keep` (max_ckpt_to_keep > 0).
void prune_checkpoints(const std::string& output_dir, int64_t keep);

}  // namespace roll::pipeline
