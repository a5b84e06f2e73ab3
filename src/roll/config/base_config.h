#pragma once
// The top-level keys every pipeline has: ROLL's BaseConfig and ScheduleConfig (run, output, tracking,
// checkpoint, lengths, cluster size; docs/config.md).
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/node.h"
#include "roll/config/ordered.h"

namespace roll::config {

struct BaseConfig {
  std::optional<std::string> exp_name;
  int64_t seed = 42;
  int64_t rpc_timeout = 3600;
  std::string output_dir = "./output";
  std::optional<std::string> base_dir;
  std::string logging_dir = "./output/logs";
  std::optional<std::string> rollout_dump_dir;
  std::string track_with = "tensorboard";
  NodePtr tracker_kwargs;
  int64_t max_steps = 500;
  int64_t save_steps = 50;
  int64_t max_ckpt_to_keep = 0;
  int64_t logging_steps = 1;
  int64_t eval_steps = 10;
  int64_t rollout_batch_size = 128;
  int64_t val_batch_size = 128;
  int64_t max_running_requests = 128;
  int64_t local_rank = -1;
  NodePtr resume_from_checkpoint;  // false | true | path
  NodePtr checkpoint_config;
  int64_t prompt_length = 1024;
  std::optional<int64_t> response_length;
  std::optional<int64_t> sequence_length;
  std::optional<int64_t> val_prompt_length;
  std::optional<int64_t> val_sequence_length;
  bool profiler_timeline = false;
  bool profiler_memory = false;
  bool report_length_and_rewards = false;
  bool is_offload_states = false;
  bool is_offload_optimizer_states_in_train_step = false;
  Ordered<std::string> system_envs;
  int64_t model_update_buffer_size_mb = 1024;
  int64_t num_nodes = 1;
  int64_t num_gpus_per_node = 8;
  std::optional<std::string> model_download_type;
  NodePtr rollout_mock;
  NodePtr transfer_backend;
  int64_t generate_opt_level = 1;
  bool is_num_return_sequences_expand = false;
  bool is_use_additional_prompts = false;
  int64_t max_additional_running_prompts = 16;
  std::string user_defined_rollout_loop_cls = "roll.distributed.scheduler.user_defined_rollout_loop.UserDefinedRolloutLoop";
  NodePtr router_args;

  template <typename V>
  void visit(V& v) {
    v("exp_name", exp_name);
    v("seed", seed);
    v("rpc_timeout", rpc_timeout);
    v("output_dir", output_dir);
    v("base_dir", base_dir);
    v("logging_dir", logging_dir);
    v("rollout_dump_dir", rollout_dump_dir);
    v("track_with", track_with);
    v("tracker_kwargs", tracker_kwargs);
    v("max_steps", max_steps);
    v("save_steps", save_steps);
    v("max_ckpt_to_keep", max_ckpt_to_keep);
    v("logging_steps", logging_steps);
    v("eval_steps", eval_steps);
    v("rollout_batch_size", rollout_batch_size);
    v("val_batch_size", val_batch_size);
    v("max_running_requests", max_running_requests);
    v("local_rank", local_rank);
    v("resume_from_checkpoint", resume_from_checkpoint);
    v("checkpoint_config", checkpoint_config);
    v("prompt_length", prompt_length);
    v("response_length", response_length);
    v("sequence_length", sequence_length);
    v("val_prompt_length", val_prompt_length);
    v("val_sequence_length", val_sequence_length);
    v("profiler_timeline", profiler_timeline);
    v("profiler_memory", profiler_memory);
    v("report_length_and_rewards", report_length_and_rewards);
    v("is_offload_states", is_offload_states);
    v("is_offload_optimizer_states_in_train_step", is_offload_optimizer_states_in_train_step);
    v("system_envs", system_envs);
    v("model_update_buffer_size_mb", model_update_buffer_size_mb);
    v("num_nodes", num_nodes);
    v("num_gpus_per_node", num_gpus_per_node);
    v("model_download_type", model_download_type);
    v("rollout_mock", rollout_mock);
    v("transfer_backend", transfer_backend);
    v("generate_opt_level", generate_opt_level);
    v("is_num_return_sequences_expand", is_num_return_sequences_expand);
    v("is_use_additional_prompts", is_use_additional_prompts);
    v("max_additional_running_prompts", max_additional_running_prompts);
    v("user_defined_rollout_loop_cls", user_defined_rollout_loop_cls);
    v("router_args", router_args);
    for (const char* k : {"length_profiler_dir", "profiler_output_dir", "otlp_output_dir", "hydra"}) v.inert(k);
  }
};

}  // namespace roll::config
