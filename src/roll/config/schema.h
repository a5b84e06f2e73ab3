#pragma once
// Typed ROLL configuration (docs/config.md): one struct per ROLL dataclass, with ROLL's defaults.
// Each struct lists its keys once, in `visit`, which serves loading (reader.h), printing
// (`roll validate`) and the unknown-key check. Fields that ROLL has but rollcpp does not act on
// are still listed (as `inert`), so they are accepted; key_registry.h says for every key whether
// it is consumed or ignored, and a config that sets an ignored key gets a warning naming it.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "roll/config/node.h"

namespace roll::config {

template <typename T>
using Ordered = std::vector<std::pair<std::string, T>>;  // YAML order matters (domains, envs)

struct ModelArguments {
  std::optional<std::string> model_name_or_path;
  std::optional<std::string> adapter_name_or_path;
  std::optional<std::string> attn_implementation;  // sdpa | fa2 | auto (fa2 -> flash_attention_2)
  std::optional<double> moe_aux_loss_coef;
  bool disable_gradient_checkpointing = false;
  std::optional<bool> gradient_checkpointing_use_reentrant;
  std::string device_map = "balanced";
  std::string dtype = "bf16";  // fp32 | bf16 | fp16
  std::optional<std::string> model_type;
  int64_t num_labels = 1;
  NodePtr model_config_kwargs;
  std::optional<std::string> freeze_module_prefix;
  int64_t ulysses_size = 1;
  std::optional<std::string> lora_target;
  int64_t lora_rank = 8;
  std::optional<int64_t> lora_alpha;
  double lora_dropout = 0.0;
  std::optional<std::string> additional_target;
  bool autocast_adapter_dtype = true;

  template <typename V>
  void visit(V& v) {
    v("model_name_or_path", model_name_or_path);
    v("adapter_name_or_path", adapter_name_or_path);
    v("attn_implementation", attn_implementation);
    v("moe_aux_loss_coef", moe_aux_loss_coef);
    v("disable_gradient_checkpointing", disable_gradient_checkpointing);
    v("gradient_checkpointing_use_reentrant", gradient_checkpointing_use_reentrant);
    v("device_map", device_map);
    v("dtype", dtype);
    v("model_type", model_type);
    v("num_labels", num_labels);
    v("model_config_kwargs", model_config_kwargs);
    v("freeze_module_prefix", freeze_module_prefix);
    v("ulysses_size", ulysses_size);
    v("lora_target", lora_target);
    v("lora_rank", lora_rank);
    v("lora_alpha", lora_alpha);
    v("lora_dropout", lora_dropout);
    v("additional_target", additional_target);
    v("autocast_adapter_dtype", autocast_adapter_dtype);
    v.inert("trust_remote_code");
    v.inert("cache_dir");
    v.inert("model_revision");
  }
};

struct TrainingArguments {
  double learning_rate = 5e-5;
  std::string lr_scheduler_type = "linear";
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  int64_t per_device_train_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  int64_t warmup_steps = 0;
  double warmup_ratio = 0.0;
  int64_t max_steps = -1;  // derived (docs/config.md) unless set
  double num_train_epochs = 1;
  std::optional<int64_t> seed;
  std::optional<int64_t> data_seed;
  int64_t dataloader_num_workers = 0;
  bool fp16 = false;
  bool bf16 = false;
  std::optional<bool> tf32;
  bool save_hf_model = false;
  std::optional<std::string> output_dir;

  template <typename V>
  void visit(V& v) {
    v("learning_rate", learning_rate);
    v("lr_scheduler_type", lr_scheduler_type);
    v("weight_decay", weight_decay);
    v("adam_beta1", adam_beta1);
    v("adam_beta2", adam_beta2);
    v("adam_epsilon", adam_epsilon);
    v("per_device_train_batch_size", per_device_train_batch_size);
    v("gradient_accumulation_steps", gradient_accumulation_steps);
    v("warmup_steps", warmup_steps);
    v("warmup_ratio", warmup_ratio);
    v("max_steps", max_steps);
    v("num_train_epochs", num_train_epochs);
    v("seed", seed);
    v("data_seed", data_seed);
    v("dataloader_num_workers", dataloader_num_workers);
    v("fp16", fp16);
    v("bf16", bf16);
    v("tf32", tf32);
    v("save_hf_model", save_hf_model);
    v("output_dir", output_dir);
    v.inert("lr_scheduler_kwargs");
    v.inert("logging_steps");
    v.inert("save_steps");
    v.inert("max_grad_norm");
  }
};

struct DataArguments {
  std::string template_name = "native";  // YAML key `template`
  std::vector<std::string> file_name;    // a string or a list in YAML
  Ordered<double> domain_interleave_probs;
  std::optional<std::string> messages;
  std::optional<std::string> prompt;
  std::string tag = "tag";
  std::string id = "id";
  std::string response = "solution";
  std::optional<int64_t> preprocessing_num_workers;
  std::string dataset_type = "json";
  std::vector<std::string> eval_file_name;

  template <typename V>
  void visit(V& v) {
    v("template", template_name);
    v("file_name", file_name);
    v("domain_interleave_probs", domain_interleave_probs);
    v("messages", messages);
    v("prompt", prompt);
    v("tag", tag);
    v("id", id);
    v("response", response);
    v("preprocessing_num_workers", preprocessing_num_workers);
    v("dataset_type", dataset_type);
    v("eval_file_name", eval_file_name);
    for (const char* k : {"image_max_pixels", "image_min_pixels", "video_max_pixels", "video_min_pixels",
                          "video_total_pixels", "video_fps", "video_max_frames", "video_resize_chunk_frames",
                          "image_folder", "video_folder", "audio_folder", "custom_data_kwargs_func", "max_samples",
                          "overwrite_cache", "cutoff_len"})
      v.inert(k);
  }
};

struct GeneratingArguments {
  bool do_sample = true;
  double temperature = 0.95;
  double top_p = 0.7;
  int64_t top_k = 50;
  int64_t num_beams = 1;
  int64_t max_length = 8192;
  int64_t max_new_tokens = 8192;
  double repetition_penalty = 1.0;
  double length_penalty = 1.0;
  int64_t num_return_sequences = 1;
  std::vector<std::string> stop_strings;
  std::optional<bool> include_stop_str_in_output;
  int64_t logprobs = 0;

  template <typename V>
  void visit(V& v) {
    v("do_sample", do_sample);
    v("temperature", temperature);
    v("top_p", top_p);
    v("top_k", top_k);
    v("num_beams", num_beams);
    v("max_length", max_length);
    v("max_new_tokens", max_new_tokens);
    v("repetition_penalty", repetition_penalty);
    v("length_penalty", length_penalty);
    v("num_return_sequences", num_return_sequences);
    v("stop_strings", stop_strings);
    v("include_stop_str_in_output", include_stop_str_in_output);
    v("logprobs", logprobs);
  }
};

struct StrategyArguments {
  std::string strategy_name = "fsdp2_train";
  NodePtr strategy_config;  // backend-specific mapping; null -> {}

  template <typename V>
  void visit(V& v) {
    v("strategy_name", strategy_name);
    v("strategy_config", strategy_config);
  }
};

struct SequencePackingArgs {
  std::string algorithm = "none";  // none | load_balance
  std::optional<int64_t> max_packed_sequence_length_forward;
  std::optional<int64_t> max_packed_sequence_length_train;
  int64_t min_num_micro_batches_forward = 1;
  int64_t min_num_micro_batches_train = 1;

  template <typename V>
  void visit(V& v) {
    v("algorithm", algorithm);
    v("max_packed_sequence_length_forward", max_packed_sequence_length_forward);
    v("max_packed_sequence_length_train", max_packed_sequence_length_train);
    v("min_num_micro_batches_forward", min_num_micro_batches_forward);
    v("min_num_micro_batches_train", min_num_micro_batches_train);
  }
};

struct WorkerConfig {
  std::optional<std::string> name;
  std::optional<std::string> worker_cls;
  std::optional<std::string> pg_variant;
  ModelArguments model_args;
  TrainingArguments training_args;
  std::optional<DataArguments> data_args;
  std::optional<GeneratingArguments> generating_args;
  std::optional<StrategyArguments> strategy_args;
  std::optional<int64_t> world_size;
  std::optional<std::vector<int>> device_mapping;  // parsed from ROLL's expression forms
  int64_t num_gpus_per_worker = 1;
  int64_t model_update_frequency = 1;
  int64_t infer_batch_size = 16;
  int64_t backend_timeout = 30;
  Ordered<std::string> system_envs;
  double topr_positive_weight = 1.0;
  double topr_negative_weight = 1.0;
  int64_t max_concurrency = 1;
  bool use_dynamic_batching_in_train = false;
  int64_t max_tokens_per_microbatch_in_train = 0;
  int64_t sequence_length_round_in_train = 4;
  bool use_dynamic_batching_in_infer = false;
  std::optional<int64_t> max_tokens_per_microbatch_in_infer;
  int64_t sequence_length_round_in_infer = 4;
  bool offload_nccl = false;
  bool use_sequence_packing = false;
  SequencePackingArgs sequence_packing_args;
  bool logits_in_fp32 = false;
  NodePtr router_replay;
  bool apply_loss_scale = true;
  std::string mtp_training_mode = "disabled";
  std::optional<double> opd_kl_coef;
  std::vector<std::string> tag_included;
  NodePtr checkpoint_config;  // propagated from the top level
  // Off-policy variant knobs: ROLL reads them but drops them from YAML (docs/compat.md); we honour them.
  double tis_lower_bound = 0.0;
  double tis_upper_bound = 1.0;
  double cispo_epsilon_low = 0.1;
  double cispo_epsilon_high = 0.1;
  bool cispo_use_unified_mask = false;
  double kimi15_tau = 0.1;

  template <typename V>
  void visit(V& v) {
    v("name", name);
    v("worker_cls", worker_cls);
    v("pg_variant", pg_variant);
    v.nested("model_args", model_args);
    v.nested("training_args", training_args);
    v.nested("data_args", data_args);
    v.nested("generating_args", generating_args);
    v.nested("strategy_args", strategy_args);
    v("world_size", world_size);
    v.device_mapping("device_mapping", device_mapping);
    v("num_gpus_per_worker", num_gpus_per_worker);
    v("model_update_frequency", model_update_frequency);
    v("infer_batch_size", infer_batch_size);
    v("backend_timeout", backend_timeout);
    v("system_envs", system_envs);
    v("topr_positive_weight", topr_positive_weight);
    v("topr_negative_weight", topr_negative_weight);
    v("max_concurrency", max_concurrency);
    v("use_dynamic_batching_in_train", use_dynamic_batching_in_train);
    v("max_tokens_per_microbatch_in_train", max_tokens_per_microbatch_in_train);
    v("sequence_length_round_in_train", sequence_length_round_in_train);
    v("use_dynamic_batching_in_infer", use_dynamic_batching_in_infer);
    v("max_tokens_per_microbatch_in_infer", max_tokens_per_microbatch_in_infer);
    v("sequence_length_round_in_infer", sequence_length_round_in_infer);
    v("offload_nccl", offload_nccl);
    v("use_sequence_packing", use_sequence_packing);
    v.nested("sequence_packing_args", sequence_packing_args);
    v("logits_in_fp32", logits_in_fp32);
    v("router_replay", router_replay);
    v("apply_loss_scale", apply_loss_scale);
    v("mtp_training_mode", mtp_training_mode);
    v("opd_kl_coef", opd_kl_coef);
    v("tag_included", tag_included);
    v("checkpoint_config", checkpoint_config);
    v("tis_lower_bound", tis_lower_bound);
    v("tis_upper_bound", tis_upper_bound);
    v("cispo_epsilon_low", cispo_epsilon_low);
    v("cispo_epsilon_high", cispo_epsilon_high);
    v("cispo_use_unified_mask", cispo_use_unified_mask);
    v("kimi15_tau", kimi15_tau);
    v.inert("resource_placement_groups");
    v.inert("lora_target");
  }
};

struct QueryFilterConfig {
  std::string type = "no_filter";  // no_filter | mean_filter | std_filter
  NodePtr filter_args;

  template <typename V>
  void visit(V& v) {
    v("type", type);
    v("filter_args", filter_args);
  }
};

struct LlmProxyConfig {
  std::string proxy_type = "policy";  // policy | openai | random
  NodePtr proxy_config;

  template <typename V>
  void visit(V& v) {
    v("proxy_type", proxy_type);
    v("proxy_config", proxy_config);
  }
};

struct RewardConfig {
  WorkerConfig worker;
  std::optional<std::string> code_url;
  bool use_local = true;
  std::optional<std::string> judge_prompt;
  std::optional<std::string> judge_model_type;  // api | inference
  std::optional<std::string> judge_model_name;
  std::optional<std::string> judge_api_url;
  std::optional<std::string> judge_api_key;
  std::optional<std::string> format_pattern;
  std::optional<std::string> reward_type;
  double response_length_penalty_coef = 0.0;
  QueryFilterConfig query_filter_config;
  NodePtr response_filter_config;
  NodePtr reward_manager_config;
  std::optional<LlmProxyConfig> llm_proxy;

  template <typename V>
  void visit(V& v) {
    worker.visit(v);
    v("code_url", code_url);
    v("use_local", use_local);
    v("judge_prompt", judge_prompt);
    v("judge_model_type", judge_model_type);
    v("judge_model_name", judge_model_name);
    v("judge_api_url", judge_api_url);
    v("judge_api_key", judge_api_key);
    v("format_pattern", format_pattern);
    v("reward_type", reward_type);
    v("response_length_penalty_coef", response_length_penalty_coef);
    v.nested("query_filter_config", query_filter_config);
    v("response_filter_config", response_filter_config);
    v("reward_manager_config", reward_manager_config);
    v.nested("llm_proxy", llm_proxy);
  }
};

struct EnvManagerConfig {
  WorkerConfig worker;
  LlmProxyConfig llm_proxy;
  int64_t num_env_groups = 128;
  int64_t group_size = 1;
  int64_t group_size_redundancy = 0;
  std::vector<std::string> tags{"SimpleSokoban"};
  std::vector<int64_t> num_groups_partition{128};
  int64_t max_traj_per_env = -1;
  double format_penalty = 0.0;  // inert in ROLL (docs/compat.md)
  int64_t max_env_num_per_worker = 0;
  std::string group_filter_cls = "roll.pipeline.agentic.agentic_pipeline.GroupFilter";

  template <typename V>
  void visit(V& v) {
    worker.visit(v);
    v.nested("llm_proxy", llm_proxy);
    v("num_env_groups", num_env_groups);
    v("group_size", group_size);
    v("group_size_redundancy", group_size_redundancy);
    v("tags", tags);
    v("num_groups_partition", num_groups_partition);
    v("max_traj_per_env", max_traj_per_env);
    v("format_penalty", format_penalty);
    v("max_env_num_per_worker", max_env_num_per_worker);
    v("group_filter_cls", group_filter_cls);
  }
};

struct IsWeightConfig {
  bool enabled = false;
  std::string weight_type = "token";  // token | geometric | sequence | segment
  double upper_bound = 1.2;
  bool detach = true;

  template <typename V>
  void visit(V& v) {
    v("enabled", enabled);
    v("weight_type", weight_type);
    v("upper_bound", upper_bound);
    v("detach", detach);
  }
};

struct TrainInferFilterConfig {
  bool enabled = false;
  std::string agg_type = "token";
  bool ratio_enabled = true;
  double ratio_low = 0.8;
  double ratio_high = 1.2;
  bool diff_enabled = false;
  double diff_low = -0.2;
  double diff_high = 0.2;

  template <typename V>
  void visit(V& v) {
    v("enabled", enabled);
    v("agg_type", agg_type);
    v("ratio_enabled", ratio_enabled);
    v("ratio_low", ratio_low);
    v("ratio_high", ratio_high);
    v("diff_enabled", diff_enabled);
    v("diff_low", diff_low);
    v("diff_high", diff_high);
  }
};

struct TrainInferCorrection {
  IsWeightConfig is_weight;
  std::vector<TrainInferFilterConfig> filters;

  template <typename V>
  void visit(V& v) {
    v.nested("is_weight", is_weight);
    v.nested_list("filters", filters);
  }
};

struct OverlongRewardConfig {  // DAPO overlong reward shaping: a rollcpp extension
  bool enable = false;
  int64_t buffer_len = 0;
  double penalty_factor = 1.0;

  template <typename V>
  void visit(V& v) {
    v("enable", enable);
    v("buffer_len", buffer_len);
    v("penalty_factor", penalty_factor);
  }
};

struct RewardNormalizationConfig {
  std::string grouping = "batch";
  std::string method = "identity";  // identity | mean | mean_std | asym_clip
  std::optional<std::string> norm_mean_type;
  std::optional<std::string> norm_std_type;
  std::optional<double> global_scale_factor;
  std::optional<double> global_shift_value;

  template <typename V>
  void visit(V& v) {
    v("grouping", grouping);
    v("method", method);
    v("norm_mean_type", norm_mean_type);
    v("norm_std_type", norm_std_type);
    v("global_scale_factor", global_scale_factor);
    v("global_shift_value", global_shift_value);
  }
};

struct EnvMonitorConfig {
  bool enable = true;
  int64_t monitor_interval = 30;
  int64_t hung_timeout = 3600;

  template <typename V>
  void visit(V& v) {
    v("enable", enable);
    v("monitor_interval", monitor_interval);
    v("hung_timeout", hung_timeout);
  }
};

enum class PipelineKind { rlvr, agentic, sft };
const char* pipeline_kind_name(PipelineKind kind);

// Everything of BaseConfig, PPOConfig, RLVRConfig, AgenticConfig and SFTConfig. `kind` says which
// pipeline the file is for; keys of the other pipelines keep their defaults.
struct PipelineConfig {
  PipelineKind kind = PipelineKind::rlvr;

  // BaseConfig + ScheduleConfig
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

  // PPOConfig
  std::optional<std::string> pretrain;
  std::optional<std::string> reward_pretrain;
  WorkerConfig actor_train, actor_infer, critic, reference;
  double async_generation_ratio = 0;
  int64_t ppo_epochs = 1;
  double max_grad_norm = 1.0;
  double lambd = 0.95;
  double gamma = 1.0;
  double pg_clip = 0.2;
  bool use_pg_clip_range = false;
  double pg_clip_low = 0.2;
  double pg_clip_high = 0.2;
  std::optional<double> value_clip;
  std::string kl_penalty = "kl";
  std::optional<double> target_kl;
  double init_kl_coef = 0.2;
  double kl_horizon = 10000;
  std::optional<double> reward_clip;
  bool whiten_rewards = false;
  bool whiten_advantages = false;
  std::optional<double> advantage_clip;
  std::string adv_estimator = "gae";
  std::optional<std::string> norm_mean_type;
  std::optional<std::string> norm_std_type;
  bool add_token_level_kl = false;
  int64_t critic_warmup = 0;
  bool use_kl_loss = false;
  double kl_loss_coef = 0.0;
  double entropy_loss_coef = 0.0;
  std::string loss_agg_mode = "seq-mean-token-mean";
  bool dual_clip_loss = false;
  bool enable_reference = false;              // derived (or forced on)
  bool enable_old_logprobs_recompute = false;  // derived (or forced on)
  bool force_disable_old_logprobs_recompute = false;
  TrainInferCorrection train_infer_correction;
  OverlongRewardConfig overlong_reward;
  bool is_pure_opd = false;
  bool use_opd = false;

  // RLVRConfig
  std::optional<std::string> global_template;
  Ordered<std::string> tag_to_template;
  int64_t num_return_sequences_in_group = 1;
  std::optional<std::string> save_logging_board_dir;
  std::optional<WorkerConfig> validation;
  Ordered<RewardConfig> rewards;
  std::optional<WorkerConfig> reward_model;
  bool difficulty_loss_weight = false;
  bool length_loss_weight = false;
  double rl_loss_coef = 1.0;
  std::string importance_sampling = "token";
  bool max_len_mask = false;
  bool difficulty_mask = false;
  double difficulty_low_threshold = 0.0;
  double difficulty_high_threshold = 1.0;
  bool error_max_len_clip = false;
  int64_t error_max_len_threshold = 9999999999;

  // AgenticConfig
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

  // SFTConfig
  WorkerConfig sft_train;
  std::optional<std::string> prompt_key;
  std::optional<std::string> query_key;
  std::optional<std::string> response_key;
  std::optional<std::string> system_key;

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

    v("pretrain", pretrain);
    v("reward_pretrain", reward_pretrain);
    v.nested("actor_train", actor_train);
    v.nested("actor_infer", actor_infer);
    v.nested("critic", critic);
    v.nested("reference", reference);
    v("async_generation_ratio", async_generation_ratio);
    v("ppo_epochs", ppo_epochs);
    v("max_grad_norm", max_grad_norm);
    v("lambd", lambd);
    v("gamma", gamma);
    v("pg_clip", pg_clip);
    v("use_pg_clip_range", use_pg_clip_range);
    v("pg_clip_low", pg_clip_low);
    v("pg_clip_high", pg_clip_high);
    v("value_clip", value_clip);
    v("kl_penalty", kl_penalty);
    v("target_kl", target_kl);
    v("init_kl_coef", init_kl_coef);
    v("kl_horizon", kl_horizon);
    v("reward_clip", reward_clip);
    v("whiten_rewards", whiten_rewards);
    v("whiten_advantages", whiten_advantages);
    v("advantage_clip", advantage_clip);
    v("adv_estimator", adv_estimator);
    v("norm_mean_type", norm_mean_type);
    v("norm_std_type", norm_std_type);
    v("add_token_level_kl", add_token_level_kl);
    v("critic_warmup", critic_warmup);
    v("use_kl_loss", use_kl_loss);
    v("kl_loss_coef", kl_loss_coef);
    v("entropy_loss_coef", entropy_loss_coef);
    v("loss_agg_mode", loss_agg_mode);
    v("dual_clip_loss", dual_clip_loss);
    v("enable_reference", enable_reference);
    v("enable_old_logprobs_recompute", enable_old_logprobs_recompute);
    v("force_disable_old_logprobs_recompute", force_disable_old_logprobs_recompute);
    v.nested("train_infer_correction", train_infer_correction);
    v.nested("overlong_reward", overlong_reward);
    v("is_pure_opd", is_pure_opd);
    v("use_opd", use_opd);
    for (const char* k : {"l2", "use_reward_scaling", "use_reward_norm", "add_len_reward", "teacher", "student_train",
                          "student_infer", "pure_opd_pipeline_type"})
      v.inert(k);

    v("global_template", global_template);
    v("tag_to_template", tag_to_template);
    v("num_return_sequences_in_group", num_return_sequences_in_group);
    v("save_logging_board_dir", save_logging_board_dir);
    v.nested("validation", validation);
    v.nested_map("rewards", rewards);
    v.nested("reward_model", reward_model);
    v("difficulty_loss_weight", difficulty_loss_weight);
    v("length_loss_weight", length_loss_weight);
    v("rl_loss_coef", rl_loss_coef);
    v("importance_sampling", importance_sampling);
    v("max_len_mask", max_len_mask);
    v("difficulty_mask", difficulty_mask);
    v("difficulty_low_threshold", difficulty_low_threshold);
    v("difficulty_high_threshold", difficulty_high_threshold);
    v("error_max_len_clip", error_max_len_clip);
    v("error_max_len_threshold", error_max_len_threshold);
    for (const char* k : {"dataset_filter", "postive_loss_coef", "use_topr_neg_loss_coef", "use_policy_loss_type",
                          "use_topr_loss", "val_greedy", "val_n_sample", "mask_type", "balance_length",
                          "minibatch_data_iter_num"})
      v.inert(k);

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

    v.nested("sft_train", sft_train);
    v("prompt_key", prompt_key);
    v("query_key", query_key);
    v("response_key", response_key);
    v("system_key", system_key);
  }
};

}  // namespace roll::config
