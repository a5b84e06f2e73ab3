#pragma once
// One worker group's block (actor_train, actor_infer, critic, reference, rewards.<domain>, ...):
// ROLL's WorkerConfig with its strategy_args and sequence_packing_args (docs/config.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/data_args.h"
#include "roll/config/generating_args.h"
#include "roll/config/model_args.h"
#include "roll/config/node.h"
#include "roll/config/ordered.h"
#include "roll/config/training_args.h"

namespace roll::config {

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

}  // namespace roll::config
