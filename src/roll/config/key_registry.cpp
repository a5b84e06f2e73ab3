#include "roll/config/key_registry.h"

#include <optional>
#include <unordered_map>

namespace roll::config {
namespace {

constexpr KeyEntry consumed(std::string_view key, std::string_view file, std::string_view member = {}) {
  return {key, KeyUse::consumed, file, member};
}
constexpr KeyEntry ignored(std::string_view key, std::string_view reason) { return {key, KeyUse::ignored, reason, {}}; }

// Reasons shared by several keys.
constexpr std::string_view kMedia = "no image, video or audio input in rollcpp";
constexpr std::string_view kPacking = "sequence packing is not implemented";
constexpr std::string_view kApiJudge = "API judges are refused (judge_model_type: api)";
constexpr std::string_view kProfiler = "no profiler in rollcpp";
constexpr std::string_view kLegacyTopr = "ROLL's legacy TOPR switch; use pg_variant: topr with topr_*_weight";

// One entry per key, grouped per struct in visit order. A consumed key names the file that
// reads its value (not a config struct's header or reader.cpp); derive.cpp counts only where the value derives
// another value or refuses a setting rollcpp cannot honour.
constexpr KeyEntry kRegistry[] = {
    // ModelArguments
    consumed("ModelArguments.model_name_or_path", "src/roll/workers/role_config.cpp"),
    consumed("ModelArguments.adapter_name_or_path", "src/roll/workers/role_model.cpp"),
    ignored("ModelArguments.attn_implementation",
            "rollcpp has one attention implementation; the value is checked against the platform's rules, and on "
            "accelerators the memory plan counts no [seq, seq] attention tensors unless it is eager"),
    ignored("ModelArguments.moe_aux_loss_coef", "no MoE models in rollcpp"),
    consumed("ModelArguments.disable_gradient_checkpointing", "src/roll/train/options_from_config.cpp"),
    ignored("ModelArguments.gradient_checkpointing_use_reentrant", "rollcpp's gradient checkpointing has one form"),
    ignored("ModelArguments.device_map", "devices come from device_mapping"),
    consumed("ModelArguments.dtype", "src/roll/workers/role_model.cpp"),
    ignored("ModelArguments.model_type", "the architecture is read from the model's config.json"),
    ignored("ModelArguments.num_labels", "read from the model's config.json"),
    ignored("ModelArguments.model_config_kwargs", "the model's config.json is used as it is"),
    ignored("ModelArguments.freeze_module_prefix", "every parameter is trained (no module freezing)"),
    consumed("ModelArguments.ulysses_size", "src/roll/config/derive.cpp"),  // > 1 is refused
    consumed("ModelArguments.lora_target", "src/roll/workers/role_model.cpp"),
    consumed("ModelArguments.lora_rank", "src/roll/workers/role_model.cpp"),
    consumed("ModelArguments.lora_alpha", "src/roll/workers/role_model.cpp"),
    consumed("ModelArguments.lora_dropout", "src/roll/workers/role_model.cpp"),
    consumed("ModelArguments.additional_target", "src/roll/workers/role_model.cpp"),
    consumed("ModelArguments.autocast_adapter_dtype", "src/roll/workers/role_model.cpp"),
    ignored("ModelArguments.trust_remote_code", "no Python model code is run"),
    ignored("ModelArguments.cache_dir", "models are found in the local hub caches ($HF_HOME, $MODELSCOPE_CACHE)"),
    ignored("ModelArguments.model_revision", "the local snapshot is used; nothing is downloaded"),

    // TrainingArguments
    consumed("TrainingArguments.learning_rate", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.lr_scheduler_type", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.weight_decay", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.adam_beta1", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.adam_beta2", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.adam_epsilon", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.per_device_train_batch_size", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.gradient_accumulation_steps", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.warmup_steps", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.warmup_ratio", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.max_steps", "src/roll/train/options_from_config.cpp"),
    consumed("TrainingArguments.num_train_epochs", "src/roll/pipeline/sft_pipeline.cpp"),
    ignored("TrainingArguments.seed", "the top-level seed is used, as in ROLL"),
    ignored("TrainingArguments.data_seed", "data order follows the top-level seed"),
    ignored("TrainingArguments.dataloader_num_workers", "data is loaded in the driver process"),
    ignored("TrainingArguments.fp16", "precision follows model_args.dtype"),
    ignored("TrainingArguments.bf16", "precision follows model_args.dtype"),
    ignored("TrainingArguments.tf32", "no TF32 switch; precision follows model_args.dtype"),
    ignored("TrainingArguments.save_hf_model", "checkpoints always hold the model as HF safetensors"),
    ignored("TrainingArguments.output_dir", "checkpoints go under the top-level output_dir"),
    ignored("TrainingArguments.lr_scheduler_kwargs", "the LR schedules take no extra arguments"),
    ignored("TrainingArguments.logging_steps", "the top-level logging_steps applies"),
    ignored("TrainingArguments.save_steps", "the top-level save_steps applies"),
    ignored("TrainingArguments.max_grad_norm", "the top-level max_grad_norm applies"),

    // DataArguments
    consumed("DataArguments.template", "src/roll/pipeline/data/rlvr_data.cpp", "template_name"),
    consumed("DataArguments.file_name", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("DataArguments.domain_interleave_probs", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("DataArguments.messages", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("DataArguments.prompt", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("DataArguments.tag", "src/roll/pipeline/data/rlvr_data.cpp"),
    ignored("DataArguments.id", "rows are not keyed by an id column"),
    ignored("DataArguments.response",
            "RLVR answers come from the ground_truth column, SFT responses from response_key"),
    ignored("DataArguments.preprocessing_num_workers", "data is encoded in the driver process"),
    consumed("DataArguments.dataset_type", "src/roll/pipeline/data/rlvr_data.cpp"),
    ignored("DataArguments.eval_file_name", "validation data comes from validation.data_args.file_name"),
    ignored("DataArguments.image_max_pixels", kMedia),
    ignored("DataArguments.image_min_pixels", kMedia),
    ignored("DataArguments.video_max_pixels", kMedia),
    ignored("DataArguments.video_min_pixels", kMedia),
    ignored("DataArguments.video_total_pixels", kMedia),
    ignored("DataArguments.video_fps", kMedia),
    ignored("DataArguments.video_max_frames", kMedia),
    ignored("DataArguments.video_resize_chunk_frames", kMedia),
    ignored("DataArguments.image_folder", kMedia),
    ignored("DataArguments.video_folder", kMedia),
    ignored("DataArguments.audio_folder", kMedia),
    ignored("DataArguments.custom_data_kwargs_func", "no Python data hooks"),
    ignored("DataArguments.max_samples", "every row of the data files is used"),
    ignored("DataArguments.overwrite_cache", "no dataset cache"),
    ignored("DataArguments.cutoff_len", "lengths are bounded by prompt_length and sequence_length"),

    // GeneratingArguments
    consumed("GeneratingArguments.do_sample", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.temperature", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.top_p", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.top_k", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.num_beams", "src/roll/config/sampling_params.cpp"),  // > 1 is refused
    consumed("GeneratingArguments.max_length", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.max_new_tokens", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.repetition_penalty", "src/roll/config/sampling_params.cpp"),
    ignored("GeneratingArguments.length_penalty", "applies to beam search, which is refused (num_beams > 1)"),
    consumed("GeneratingArguments.num_return_sequences", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.stop_strings", "src/roll/config/sampling_params.cpp"),
    consumed("GeneratingArguments.include_stop_str_in_output", "src/roll/config/sampling_params.cpp"),
    ignored("GeneratingArguments.logprobs", "the engine always returns the sampled tokens' log-probabilities"),

    // StrategyArguments
    consumed("StrategyArguments.strategy_name", "src/roll/train/options_from_config.cpp"),
    consumed("StrategyArguments.strategy_config", "src/roll/train/options_from_config.cpp"),

    // SequencePackingArgs
    ignored("SequencePackingArgs.algorithm", kPacking),
    ignored("SequencePackingArgs.max_packed_sequence_length_forward", kPacking),
    ignored("SequencePackingArgs.max_packed_sequence_length_train", kPacking),
    ignored("SequencePackingArgs.min_num_micro_batches_forward", kPacking),
    ignored("SequencePackingArgs.min_num_micro_batches_train", kPacking),

    // WorkerConfig (also the keys of RewardConfig and EnvManagerConfig that come from their worker)
    consumed("WorkerConfig.name", "src/roll/workers/role_model.cpp"),
    consumed("WorkerConfig.worker_cls", "src/roll/workers/reward_role.cpp"),
    consumed("WorkerConfig.pg_variant", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("WorkerConfig.model_args", "src/roll/workers/role_config.cpp"),
    consumed("WorkerConfig.training_args", "src/roll/train/options_from_config.cpp"),
    consumed("WorkerConfig.data_args", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("WorkerConfig.generating_args", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("WorkerConfig.strategy_args", "src/roll/train/options_from_config.cpp"),
    consumed("WorkerConfig.world_size", "src/roll/config/placement.cpp"),
    consumed("WorkerConfig.device_mapping", "src/roll/config/placement.cpp"),
    consumed("WorkerConfig.num_gpus_per_worker", "src/roll/config/placement.cpp"),
    consumed("WorkerConfig.model_update_frequency", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("WorkerConfig.infer_batch_size", "src/roll/workers/actor_trainer.cpp"),
    ignored("WorkerConfig.backend_timeout", "collective timeouts follow rpc_timeout"),
    consumed("WorkerConfig.system_envs", "src/roll/config/placement.cpp"),
    consumed("WorkerConfig.topr_positive_weight", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("WorkerConfig.topr_negative_weight", "src/roll/workers/loss_params_from_config.cpp"),
    ignored("WorkerConfig.max_concurrency", "rollcpp sizes each worker's request concurrency itself"),
    consumed("WorkerConfig.use_dynamic_batching_in_train", "src/roll/workers/token_budget.cpp"),
    consumed("WorkerConfig.max_tokens_per_microbatch_in_train", "src/roll/workers/token_budget.cpp"),
    consumed("WorkerConfig.sequence_length_round_in_train", "src/roll/workers/token_budget.cpp"),
    consumed("WorkerConfig.use_dynamic_batching_in_infer", "src/roll/workers/token_budget.cpp"),
    consumed("WorkerConfig.max_tokens_per_microbatch_in_infer", "src/roll/workers/token_budget.cpp"),
    consumed("WorkerConfig.sequence_length_round_in_infer", "src/roll/workers/token_budget.cpp"),
    ignored("WorkerConfig.offload_nccl", "no NCCL buffer offload in rollcpp"),
    ignored("WorkerConfig.use_sequence_packing", kPacking),
    ignored("WorkerConfig.sequence_packing_args", kPacking),
    ignored("WorkerConfig.logits_in_fp32", "log-probabilities are always computed in fp32"),
    ignored("WorkerConfig.router_replay", "no MoE models, so no router replay"),
    consumed("WorkerConfig.apply_loss_scale", "src/roll/workers/actor_trainer.cpp"),
    ignored("WorkerConfig.mtp_training_mode", "no multi-token-prediction training"),
    consumed("WorkerConfig.opd_kl_coef", "src/roll/pipeline/opd_scoring.cpp"),
    consumed("WorkerConfig.tag_included", "src/roll/pipeline/data/rlvr_data.cpp"),
    ignored("WorkerConfig.checkpoint_config", "checkpoints are written under the top-level output_dir"),
    consumed("WorkerConfig.tis_lower_bound", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("WorkerConfig.tis_upper_bound", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("WorkerConfig.cispo_epsilon_low", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("WorkerConfig.cispo_epsilon_high", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("WorkerConfig.cispo_use_unified_mask", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("WorkerConfig.kimi15_tau", "src/roll/workers/loss_params_from_config.cpp"),
    ignored("WorkerConfig.resource_placement_groups", "placement comes from device_mapping (no Ray placement groups)"),
    ignored("WorkerConfig.lora_target", "ROLL's historic worker-level key; LoRA reads model_args.lora_target"),

    // QueryFilterConfig
    consumed("QueryFilterConfig.type", "src/roll/pipeline/data/prompt_filter.cpp"),
    consumed("QueryFilterConfig.filter_args", "src/roll/pipeline/data/prompt_filter.cpp"),

    // LlmProxyConfig
    consumed("LlmProxyConfig.proxy_type", "src/roll/workers/env_role.cpp"),  // only policy is accepted
    ignored("LlmProxyConfig.proxy_config", "the one supported proxy type, policy, has no settings"),

    // RewardConfig
    ignored("RewardConfig.code_url", "code is run in the local sandbox"),
    ignored("RewardConfig.use_local", "code is always run in the local sandbox"),
    consumed("RewardConfig.judge_prompt", "src/roll/workers/llm_judge_scorer.cpp"),
    consumed("RewardConfig.judge_model_type", "src/roll/workers/llm_judge_scorer.cpp"),
    ignored("RewardConfig.judge_model_name", kApiJudge),
    ignored("RewardConfig.judge_api_url", kApiJudge),
    ignored("RewardConfig.judge_api_key", kApiJudge),
    ignored("RewardConfig.format_pattern", "rollcpp's reward workers give no format reward"),
    consumed("RewardConfig.reward_type", "src/roll/workers/reward_role.cpp"),  // CrossThinkQA's loose/soft/strict
    consumed("RewardConfig.response_length_penalty_coef", "src/roll/workers/reward_role.cpp"),  // CrossThinkQA
    consumed("RewardConfig.query_filter_config", "src/roll/pipeline/rlvr_pipeline.cpp"),
    ignored("RewardConfig.response_filter_config", "response filters are not implemented"),
    ignored("RewardConfig.reward_manager_config", "no reward manager in rollcpp"),
    ignored("RewardConfig.llm_proxy", "reward workers call no LLM proxy"),

    // EnvManagerConfig
    consumed("EnvManagerConfig.llm_proxy", "src/roll/workers/env_role.cpp"),
    consumed("EnvManagerConfig.num_env_groups", "src/roll/agentic/env_layout.cpp"),
    consumed("EnvManagerConfig.group_size", "src/roll/agentic/env_layout.cpp"),
    consumed("EnvManagerConfig.group_size_redundancy", "src/roll/agentic/env_layout.cpp"),
    consumed("EnvManagerConfig.tags", "src/roll/agentic/env_layout.cpp"),
    consumed("EnvManagerConfig.num_groups_partition", "src/roll/agentic/env_layout.cpp"),
    consumed("EnvManagerConfig.max_traj_per_env", "src/roll/pipeline/agentic_pipeline.cpp"),
    ignored("EnvManagerConfig.format_penalty",
            "unused in ROLL too; custom_envs.<tag>.env_config.format_penalty is the one that applies"),
    consumed("EnvManagerConfig.max_env_num_per_worker", "src/roll/agentic/env_layout.cpp"),
    ignored("EnvManagerConfig.group_filter_cls", "custom group filters are not supported (every group is kept)"),

    // IsWeightConfig
    consumed("IsWeightConfig.enabled", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("IsWeightConfig.weight_type", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("IsWeightConfig.upper_bound", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("IsWeightConfig.detach", "src/roll/workers/loss_params_from_config.cpp"),

    // TrainInferFilterConfig
    consumed("TrainInferFilterConfig.enabled", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferFilterConfig.agg_type", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferFilterConfig.ratio_enabled", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferFilterConfig.ratio_low", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferFilterConfig.ratio_high", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferFilterConfig.diff_enabled", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferFilterConfig.diff_low", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferFilterConfig.diff_high", "src/roll/workers/loss_params_from_config.cpp"),

    // TrainInferCorrection
    consumed("TrainInferCorrection.is_weight", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("TrainInferCorrection.filters", "src/roll/workers/loss_params_from_config.cpp"),

    // OverlongRewardConfig
    consumed("OverlongRewardConfig.enable", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("OverlongRewardConfig.buffer_len", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("OverlongRewardConfig.penalty_factor", "src/roll/pipeline/agentic_rewards.cpp"),

    // RewardNormalizationConfig
    consumed("RewardNormalizationConfig.grouping", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("RewardNormalizationConfig.method", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("RewardNormalizationConfig.norm_mean_type", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("RewardNormalizationConfig.norm_std_type", "src/roll/pipeline/agentic_rewards.cpp"),
    ignored("RewardNormalizationConfig.global_scale_factor", "not applied by rollcpp's reward normalization"),
    ignored("RewardNormalizationConfig.global_shift_value", "not applied by rollcpp's reward normalization"),

    // EnvMonitorConfig
    consumed("EnvMonitorConfig.enable", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("EnvMonitorConfig.monitor_interval", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("EnvMonitorConfig.hung_timeout", "src/roll/pipeline/agentic_pipeline.cpp"),

    // PipelineConfig: BaseConfig and ScheduleConfig
    consumed("PipelineConfig.exp_name", "src/roll/track/tracker.cpp"),
    consumed("PipelineConfig.seed", "src/roll/train/options_from_config.cpp"),
    consumed("PipelineConfig.rpc_timeout", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.output_dir", "src/roll/pipeline/pipeline_base.cpp"),
    ignored("PipelineConfig.base_dir", "paths are used as written"),
    consumed("PipelineConfig.logging_dir", "src/roll/pipeline/pipeline_base.cpp"),
    ignored("PipelineConfig.rollout_dump_dir", "rollouts are not dumped"),
    consumed("PipelineConfig.track_with", "src/roll/track/tracker.cpp"),
    consumed("PipelineConfig.tracker_kwargs", "src/roll/track/tracker.cpp"),
    consumed("PipelineConfig.max_steps", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.save_steps", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.max_ckpt_to_keep", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.logging_steps", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.eval_steps", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.rollout_batch_size", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("PipelineConfig.val_batch_size", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("PipelineConfig.max_running_requests", "src/roll/pipeline/rlvr_pipeline.cpp"),
    ignored("PipelineConfig.local_rank", "ranks are assigned by the launcher"),
    consumed("PipelineConfig.resume_from_checkpoint", "src/roll/pipeline/pipeline_base.cpp"),
    ignored("PipelineConfig.checkpoint_config", "checkpoints are written under output_dir; nothing is uploaded"),
    consumed("PipelineConfig.prompt_length", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("PipelineConfig.response_length", "src/roll/config/derive.cpp"),  // derives sequence_length
    consumed("PipelineConfig.sequence_length", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("PipelineConfig.val_prompt_length", "src/roll/config/derive.cpp"),  // derives max_new_tokens
    consumed("PipelineConfig.val_sequence_length", "src/roll/pipeline/rlvr_pipeline.cpp"),
    ignored("PipelineConfig.profiler_timeline", kProfiler),
    ignored("PipelineConfig.profiler_memory", kProfiler),
    ignored("PipelineConfig.report_length_and_rewards", "no per-sample length and reward report"),
    ignored("PipelineConfig.is_offload_states", "model states stay in memory between phases"),
    ignored("PipelineConfig.is_offload_optimizer_states_in_train_step", "optimizer states stay in memory"),
    consumed("PipelineConfig.system_envs", "src/roll/config/derive.cpp"),  // merged into each worker's
    consumed("PipelineConfig.model_update_buffer_size_mb", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.num_nodes", "src/roll/config/placement.cpp"),
    consumed("PipelineConfig.num_gpus_per_node", "src/roll/config/placement.cpp"),
    ignored("PipelineConfig.model_download_type", "nothing is downloaded; models come from local paths or caches"),
    consumed("PipelineConfig.rollout_mock", "src/roll/config/derive.cpp"),       // enable is refused
    consumed("PipelineConfig.transfer_backend", "src/roll/config/derive.cpp"),   // refused
    consumed("PipelineConfig.generate_opt_level", "src/roll/pipeline/rlvr_pipeline.cpp"),
    ignored("PipelineConfig.is_num_return_sequences_expand",
            "samples per prompt always come from the engine's n (num_return_sequences)"),
    consumed("PipelineConfig.is_use_additional_prompts", "src/roll/pipeline/rollout/rlvr_rollout.cpp"),
    consumed("PipelineConfig.max_additional_running_prompts", "src/roll/pipeline/rollout/rlvr_rollout.cpp"),
    ignored("PipelineConfig.user_defined_rollout_loop_cls", "no Python rollout loop hooks"),
    ignored("PipelineConfig.router_args", "the built-in request router has no settings"),
    ignored("PipelineConfig.length_profiler_dir", kProfiler),
    ignored("PipelineConfig.profiler_output_dir", kProfiler),
    ignored("PipelineConfig.otlp_output_dir", "no OpenTelemetry tracing in rollcpp"),
    ignored("PipelineConfig.hydra", "Hydra's own settings; rollcpp neither changes directory nor writes .hydra"),

    // PipelineConfig: PPOConfig
    consumed("PipelineConfig.pretrain", "src/roll/config/derive.cpp"),         // the roles' model paths
    consumed("PipelineConfig.reward_pretrain", "src/roll/config/derive.cpp"),  // the critic's model path
    consumed("PipelineConfig.actor_train", "src/roll/workers/role_config.cpp"),
    consumed("PipelineConfig.actor_infer", "src/roll/workers/role_config.cpp"),
    consumed("PipelineConfig.critic", "src/roll/workers/role_config.cpp"),
    consumed("PipelineConfig.reference", "src/roll/workers/role_config.cpp"),
    consumed("PipelineConfig.async_generation_ratio", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("PipelineConfig.ppo_epochs", "src/roll/workers/actor_trainer.cpp"),
    consumed("PipelineConfig.max_grad_norm", "src/roll/train/options_from_config.cpp"),
    consumed("PipelineConfig.lambd", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.gamma", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.pg_clip", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.use_pg_clip_range", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.pg_clip_low", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.pg_clip_high", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.value_clip", "src/roll/workers/critic_trainer.cpp"),
    consumed("PipelineConfig.kl_penalty", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.target_kl", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("PipelineConfig.init_kl_coef", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("PipelineConfig.kl_horizon", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("PipelineConfig.reward_clip", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.whiten_rewards", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.whiten_advantages", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.advantage_clip", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.adv_estimator", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.norm_mean_type", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.norm_std_type", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.add_token_level_kl", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.critic_warmup", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.use_kl_loss", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.kl_loss_coef", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.entropy_loss_coef", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.loss_agg_mode", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.dual_clip_loss", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.enable_reference", "src/roll/config/placement.cpp"),
    consumed("PipelineConfig.enable_old_logprobs_recompute", "src/roll/pipeline/pipeline_base.cpp"),
    consumed("PipelineConfig.force_disable_old_logprobs_recompute", "src/roll/config/derive.cpp"),
    consumed("PipelineConfig.train_infer_correction", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.overlong_reward", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("PipelineConfig.is_pure_opd", "src/roll/config/derive.cpp"),
    consumed("PipelineConfig.use_opd", "src/roll/config/derive.cpp"),
    ignored("PipelineConfig.l2", "no L2 term in the loss (use training_args.weight_decay)"),
    ignored("PipelineConfig.use_reward_scaling", "ROLL's legacy switch; use norm_mean_type and norm_std_type"),
    ignored("PipelineConfig.use_reward_norm", "ROLL's legacy switch; use norm_mean_type and norm_std_type"),
    ignored("PipelineConfig.add_len_reward", "no length reward in rollcpp"),
    consumed("PipelineConfig.student_train", "src/roll/config/opd.cpp"),
    consumed("PipelineConfig.student_infer", "src/roll/config/opd.cpp"),
    consumed("PipelineConfig.pure_opd_pipeline_type", "src/roll/config/load.cpp"),

    // PipelineConfig: RLVRConfig
    consumed("PipelineConfig.global_template", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("PipelineConfig.tag_to_template", "src/roll/pipeline/data/rlvr_data.cpp"),
    consumed("PipelineConfig.num_return_sequences_in_group", "src/roll/pipeline/rlvr_pipeline.cpp"),
    ignored("PipelineConfig.save_logging_board_dir", "metrics go to the tracker of track_with"),
    consumed("PipelineConfig.validation", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("PipelineConfig.rewards", "src/roll/pipeline/rlvr_pipeline.cpp"),
    consumed("PipelineConfig.reward_model", "src/roll/config/placement.cpp"),
    consumed("PipelineConfig.difficulty_loss_weight", "src/roll/workers/actor_trainer.cpp"),
    consumed("PipelineConfig.length_loss_weight", "src/roll/workers/actor_trainer.cpp"),
    consumed("PipelineConfig.rl_loss_coef", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.importance_sampling", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.max_len_mask", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.difficulty_mask", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.difficulty_low_threshold", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.difficulty_high_threshold", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.error_max_len_clip", "src/roll/pipeline/step_advantages.cpp"),
    consumed("PipelineConfig.error_max_len_threshold", "src/roll/pipeline/step_advantages.cpp"),
    ignored("PipelineConfig.dataset_filter", "no dataset filter in rollcpp"),
    ignored("PipelineConfig.postive_loss_coef", kLegacyTopr),
    ignored("PipelineConfig.use_topr_neg_loss_coef", kLegacyTopr),
    ignored("PipelineConfig.use_policy_loss_type", "the policy loss follows pg_variant"),
    ignored("PipelineConfig.use_topr_loss", kLegacyTopr),
    ignored("PipelineConfig.val_greedy", "validation sampling follows validation.generating_args"),
    ignored("PipelineConfig.val_n_sample", "validation sampling follows validation.generating_args"),
    ignored("PipelineConfig.mask_type", "the loss masks follow max_len_mask and difficulty_mask"),
    ignored("PipelineConfig.balance_length", "no length balancing in rollcpp"),
    ignored("PipelineConfig.minibatch_data_iter_num", "mini-batches follow ppo_epochs and the training batch sizes"),

    // PipelineConfig: AgenticConfig
    consumed("PipelineConfig.custom_envs", "src/roll/agentic/env_layout.cpp"),
    consumed("PipelineConfig.train_env_manager", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("PipelineConfig.val_env_manager", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("PipelineConfig.render_save_dir", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("PipelineConfig.reward", "src/roll/config/placement.cpp"),
    consumed("PipelineConfig.reward_normalization", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("PipelineConfig.env_monitor", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("PipelineConfig.batch_adjust_mode", "src/roll/pipeline/agentic_pipeline.cpp"),
    consumed("PipelineConfig.episode_reward_weight", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("PipelineConfig.step_reward_weight", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("PipelineConfig.step_reward_gamma", "src/roll/pipeline/agentic_rewards.cpp"),
    consumed("PipelineConfig.ratio_type", "src/roll/workers/loss_params_from_config.cpp"),
    consumed("PipelineConfig.partial_gpu_mode", "src/roll/config/derive.cpp"),  // selects the colocation checks
    consumed("PipelineConfig.skip_mock_system_prompt", "src/roll/workers/env_role.cpp"),
    ignored("PipelineConfig.exp_mode", "rollcpp always trains; eval_gt and eval_test change nothing"),
    ignored("PipelineConfig.parse_tool_call_parameter_to_dict", "no tool calls in rollcpp's environments"),
    ignored("PipelineConfig.pipeline_cls", "the pipeline follows the command and the config's keys"),
    ignored("PipelineConfig.dirty_data_mask", "not implemented in rollcpp"),
    ignored("PipelineConfig.open_feedback_turn", "not implemented in rollcpp"),
    ignored("PipelineConfig.use_token_reward", "not implemented in rollcpp"),

    // PipelineConfig: SFTConfig
    consumed("PipelineConfig.sft_train", "src/roll/pipeline/sft_pipeline.cpp"),
    consumed("PipelineConfig.prompt_key", "src/roll/pipeline/data/sft_data.cpp"),
    consumed("PipelineConfig.query_key", "src/roll/pipeline/data/sft_data.cpp"),
    consumed("PipelineConfig.response_key", "src/roll/pipeline/data/sft_data.cpp"),
    consumed("PipelineConfig.system_key", "src/roll/pipeline/data/sft_data.cpp"),

    // PipelineConfig: DPOConfig
    consumed("PipelineConfig.ipo", "src/roll/workers/dpo_trainer.cpp"),
    consumed("PipelineConfig.beta", "src/roll/workers/dpo_trainer.cpp"),
    consumed("PipelineConfig.label_smoothing", "src/roll/workers/dpo_trainer.cpp"),
    consumed("PipelineConfig.chosen_key", "src/roll/pipeline/dpo_pipeline.cpp"),
    consumed("PipelineConfig.rejected_key", "src/roll/pipeline/dpo_pipeline.cpp"),

    // PipelineConfig: DistillConfig
    consumed("PipelineConfig.student", "src/roll/config/placement.cpp"),
    consumed("PipelineConfig.teacher", "src/roll/config/placement.cpp"),
    consumed("PipelineConfig.student_pretrain", "src/roll/config/derive.cpp"),
    consumed("PipelineConfig.teacher_pretrain", "src/roll/config/derive.cpp"),
    consumed("PipelineConfig.question_key", "src/roll/pipeline/distill_pipeline.cpp"),
    consumed("PipelineConfig.answer_key", "src/roll/pipeline/distill_pipeline.cpp"),
    consumed("PipelineConfig.distill_on_prompt", "src/roll/pipeline/distill_pipeline.cpp"),
    consumed("PipelineConfig.logits_topk", "src/roll/workers/teacher_role.cpp"),
    consumed("PipelineConfig.teacher_temperature", "src/roll/workers/teacher_role.cpp"),
    consumed("PipelineConfig.kd_temperature", "src/roll/workers/distill_trainer.cpp"),
    consumed("PipelineConfig.distill_loss_weight", "src/roll/workers/distill_trainer.cpp"),
    consumed("PipelineConfig.kd_objective", "src/roll/workers/distill_trainer.cpp"),
    consumed("PipelineConfig.adaptive_kl_alpha", "src/roll/workers/distill_trainer.cpp"),
    consumed("PipelineConfig.skew_lambda", "src/roll/workers/distill_trainer.cpp"),
    ignored("PipelineConfig.logits_transfer_backend",
            "the teacher's top-k logits reach the student through the driver's RPC (no NCCL/IPC transfer group)"),
};

const KeyEntry* lookup(std::string_view struct_name, std::string_view key) {
  static const auto* index = [] {
    auto* m = new std::unordered_map<std::string, const KeyEntry*>();
    for (const auto& e : kRegistry) m->emplace(std::string(e.key), &e);
    return m;
  }();
  std::string k;
  k.reserve(struct_name.size() + 1 + key.size());
  k.append(struct_name).append(".").append(key);
  auto it = index->find(k);
  return it == index->end() ? nullptr : it->second;
}

// Walks a config tree alongside the schema's `visit`, collecting the ignored keys it sets.
class IgnoredKeyFinder {
 public:
  IgnoredKeyFinder(NodePtr map, std::string path, std::string_view owner, std::string_view embedded,
                   std::vector<IgnoredKeySet>& out)
      : map_(std::move(map)), path_(std::move(path)), owner_(owner), embedded_(embedded), out_(out) {}

  template <typename S>
  static void walk(const NodePtr& map, const std::string& path, std::vector<IgnoredKeySet>& out) {
    S s{};
    IgnoredKeyFinder f(map, path, config_struct_name<S>(), EmbedsWorkerConfig<S> ? "WorkerConfig" : "", out);
    s.visit(f);
  }

  template <typename T>
  void operator()(const char* key, T&) {
    present_and_used(key);
  }
  void inert(const char* key) { present_and_used(key); }
  template <typename T>
  void device_mapping(const char* key, T&) {
    present_and_used(key);
  }
  template <typename S>
  void nested(const char* key, S&) {
    if (NodePtr n = present_and_used(key); n && n->is_map()) walk<S>(n, sub(key), out_);
  }
  template <typename S>
  void nested(const char* key, std::optional<S>&) {
    if (NodePtr n = present_and_used(key); n && n->is_map()) walk<S>(n, sub(key), out_);
  }
  template <typename S>
  void nested_map(const char* key, Ordered<S>&) {
    NodePtr n = present_and_used(key);
    if (!n || !n->is_map()) return;
    for (const auto& [k, v] : n->entries())
      if (v && v->is_map()) walk<S>(v, sub(key) + "." + k, out_);
  }
  template <typename S>
  void nested_list(const char* key, std::vector<S>&) {
    NodePtr n = present_and_used(key);
    if (!n || !n->is_sequence()) return;
    for (size_t i = 0; i < n->items().size(); ++i)
      if (n->items()[i]->is_map()) walk<S>(n->items()[i], sub(key) + "." + std::to_string(i), out_);
  }

 private:
  // The key's node when the config sets it and the registry does not call it ignored (an ignored
  // key is recorded instead, and its contents are not looked at). A null value asks for nothing,
  // so ignoring it loses nothing.
  NodePtr present_and_used(const char* key) {
    NodePtr n = map_->get(key);
    if (!n || n->is_null()) return n;
    const KeyEntry* e = lookup(owner_, key);
    if (!e && !embedded_.empty()) e = lookup(embedded_, key);
    if (e && e->use == KeyUse::ignored) {
      out_.push_back({sub(key), n->loc().str(), std::string(e->detail)});
      return nullptr;
    }
    return n;
  }
  std::string sub(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  NodePtr map_;
  std::string path_;
  std::string_view owner_, embedded_;
  std::vector<IgnoredKeySet>& out_;
};

}  // namespace

std::span<const KeyEntry> key_registry() { return kRegistry; }

const KeyEntry* find_key_entry(std::string_view struct_name, std::string_view key) { return lookup(struct_name, key); }

std::vector<IgnoredKeySet> ignored_keys_set(const NodePtr& root) {
  std::vector<IgnoredKeySet> out;
  if (root && root->is_map()) IgnoredKeyFinder::walk<PipelineConfig>(root, "", out);
  return out;
}

std::vector<IgnoredKeySet> ignored_worker_keys_set(const NodePtr& worker, const std::string& path) {
  std::vector<IgnoredKeySet> out;
  if (worker && worker->is_map()) IgnoredKeyFinder::walk<WorkerConfig>(worker, path, out);
  return out;
}

}  // namespace roll::config
