#pragma once
// ROLL's AgenticConfig: envs, env managers, the agentic reward and its normalisation, batch
// adjustment and the step-reward weights (docs/config.md, docs/agentic.md).
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/env_manager_config.h"
#include "roll/config/node.h"
#include "roll/config/ordered.h"
#include "roll/config/reward_config.h"
#include "roll/config/rl_config.h"

namespace roll::config {

struct AgenticConfig {
  Ordered<NodePtr> custom_envs;
  EnvManagerConfig train_env_manager, val_env_manager;
  std::optional<std::string> render_save_dir;
  std::optional<RewardConfig> reward;
  RewardNormalizationConfig reward_normalization;
  EnvMonitorConfig env_monitor;
  std::string batch_adjust_mode = "copy";
  double episode_reward_weight = 1.0;
  double step_reward_weight = 1.0;
  double step_reward_gamma = 0.95;
  std::string ratio_type = "token";
  bool partial_gpu_mode = true;
  bool skip_mock_system_prompt = false;
  std::string exp_mode = "train";
  bool parse_tool_call_parameter_to_dict = false;
  std::string pipeline_cls = "roll.pipeline.agentic.agentic_pipeline.AgenticPipeline";

  template <typename V>
  void visit(V& v) {
    v("custom_envs", custom_envs);
    v.nested("train_env_manager", train_env_manager);
    v.nested("val_env_manager", val_env_manager);
    v("render_save_dir", render_save_dir);
    v.nested("reward", reward);
    v.nested("reward_normalization", reward_normalization);
    v.nested("env_monitor", env_monitor);
    v("batch_adjust_mode", batch_adjust_mode);
    v("episode_reward_weight", episode_reward_weight);
    v("step_reward_weight", step_reward_weight);
    v("step_reward_gamma", step_reward_gamma);
    v("ratio_type", ratio_type);
    v("partial_gpu_mode", partial_gpu_mode);
    v("skip_mock_system_prompt", skip_mock_system_prompt);
    v("exp_mode", exp_mode);
    v("parse_tool_call_parameter_to_dict", parse_tool_call_parameter_to_dict);
    v("pipeline_cls", pipeline_cls);
    for (const char* k : {"dirty_data_mask", "open_feedback_turn", "use_token_reward"}) v.inert(k);
  }
};

}  // namespace roll::config
