#include "roll/train/options_from_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "roll/config/diagnostics.h"
#include "roll/config/scalar_read.h"
#include "roll/core/error.h"

namespace roll::train {
namespace {

using config::NodePtr;

NodePtr child(const NodePtr& n, const char* key) { return n && n->is_map() ? n->get(key) : nullptr; }

int64_t int_at(const NodePtr& n, const std::string& path, int64_t fallback, config::Diagnostics& d) {
  if (!n || n->is_null() || (n->is_scalar() && n->text() == "auto")) return fallback;
  int64_t v = fallback;
  config::read_int(n, path, v, d);
  return v;
}

bool bool_at(const NodePtr& n, const std::string& path, bool fallback, config::Diagnostics& d) {
  if (!n || n->is_null()) return fallback;
  bool v = fallback;
  config::read_bool(n, path, v, d);
  return v;
}

std::string text_at(const NodePtr& n, const std::string& fallback) {
  return n && n->is_scalar() ? n->text() : fallback;
}

}  // namespace

TrainOptions train_options_from_config(const config::BaseConfig& p, double max_grad_norm,
                                       const config::WorkerConfig& w, int64_t dp_size, int64_t ppo_epochs) {
  const config::TrainingArguments& t = w.training_args;
  const std::string role = w.name.value_or("worker");
  TrainOptions o;
  o.optimizer = "adamw";
  o.learning_rate = t.learning_rate;
  o.adam_beta1 = t.adam_beta1;
  o.adam_beta2 = t.adam_beta2;
  o.adam_epsilon = t.adam_epsilon;
  o.weight_decay = t.weight_decay;
  o.lr_scheduler_type = t.lr_scheduler_type;
  o.warmup_steps = t.warmup_steps;
  o.warmup_ratio = t.warmup_ratio;
  o.total_steps = std::max<int64_t>(1, t.max_steps / std::max<int64_t>(1, dp_size));
  o.per_device_train_batch_size = t.per_device_train_batch_size;
  o.gradient_accumulation_steps = t.gradient_accumulation_steps;
  o.max_grad_norm = max_grad_norm;
  o.ppo_epochs = ppo_epochs;
  o.seed = static_cast<uint64_t>(p.seed);
  o.gradient_checkpointing = !w.model_args.disable_gradient_checkpointing;
  o.max_ckpt_to_keep = p.max_ckpt_to_keep;
  if (w.model_args.model_name_or_path && std::filesystem::is_directory(*w.model_args.model_name_or_path))
    o.tokenizer_dir = *w.model_args.model_name_or_path;
  if (w.model_args.dtype == "fp16")
    throw ConfigError(role + ".model_args.dtype",
                      "fp16 training needs dynamic loss scaling, which rollcpp does not implement; use bf16");

  const std::string name = w.strategy_args ? w.strategy_args->strategy_name : "fsdp2_train";
  const NodePtr sc = w.strategy_args ? w.strategy_args->strategy_config : nullptr;
  const std::string key = role + ".strategy_args.strategy_config";
  config::Diagnostics d;
  if (name == "deepspeed_train") {
    NodePtr zero = child(sc, "zero_optimization");
    o.zero_stage = static_cast<int>(int_at(child(zero, "stage"), key + ".zero_optimization.stage", 0, d));
    for (const char* what : {"offload_optimizer", "offload_param"}) {
      std::string device = text_at(child(child(zero, what), "device"), "none");
      if (device == "cpu") {
        if (std::string(what) == "offload_optimizer") o.offload_optimizer = true;
        o.notes.push_back(fmt::format("zero_optimization.{}.device=cpu accepted: on CPU the {} already live in host "
                                      "memory (no-op)",
                                      what, std::string(what) == "offload_optimizer" ? "optimizer states" : "parameters"));
      } else if (device != "none") {
        o.notes.push_back(fmt::format("zero_optimization.{}.device={} ignored (only cpu is meaningful)", what, device));
      }
    }
  } else if (name == "fsdp2_train") {
    const bool reshard = bool_at(child(sc, "reshard_after_forward"), key + ".reshard_after_forward", true, d);
    o.zero_stage = reshard ? 3 : 2;
    o.notes.push_back(fmt::format("fsdp2 reshard_after_forward={} -> ZeRO stage {}", reshard, o.zero_stage));
    const int64_t fsdp_size = int_at(child(sc, "fsdp_size"), key + ".fsdp_size", 1, d);
    if (fsdp_size > 1 && fsdp_size < dp_size)
      o.notes.push_back(fmt::format("fsdp_size={} < {} ranks asks for HSDP; rollcpp shards over all {} ranks (same "
                                    "numerics, less replication)",
                                    fsdp_size, dp_size, dp_size));
    if (bool_at(child(sc, "offload_policy"), key + ".offload_policy", false, d)) {
      o.offload_optimizer = true;
      o.notes.push_back("fsdp2 offload_policy accepted: on CPU everything already lives in host memory (no-op)");
    }
    const std::string reduce = text_at(child(sc, "reduce_dtype"), "float32");
    if (reduce != "float32" && reduce != "fp32")
      o.notes.push_back(fmt::format("reduce_dtype={} -> gradients are reduced in float32 (Gloo cannot reduce "
                                    "bf16, and fp32 is the more exact)",
                                    reduce));
  } else if (name == "megatron_train") {
    const bool dist_opt = bool_at(child(sc, "use_distributed_optimizer"), key + ".use_distributed_optimizer", false, d);
    int64_t model_parallel = 1;
    for (const char* k : {"tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"})
      model_parallel *= std::max<int64_t>(1, int_at(child(sc, k), key + "." + k, 1, d));
    // A model-parallel layout runs as ZeRO-3 data parallel: parameters sharded over the ranks, as
    // tensor/pipeline parallel would split them (config/derive.cpp keeps the global batch).
    o.zero_stage = model_parallel > 1 ? 3 : dist_opt ? 1 : 0;
    o.notes.push_back(fmt::format("megatron_train runs as data parallel{}",
                                  model_parallel > 1 ? " with ZeRO-3 in place of its model-parallel layout"
                                  : dist_opt         ? " with the optimizer state sharded (ZeRO-1)"
                                                     : ""));
  } else {
    throw ConfigError(role + ".strategy_args.strategy_name",
                      fmt::format("'{}' is not a training strategy (deepspeed_train, fsdp2_train, megatron_train)", name));
  }
  d.throw_if_errors();
  if (o.zero_stage < 0 || o.zero_stage > 3)
    throw ConfigError(key + ".zero_optimization.stage",
                      fmt::format("ZeRO stage {} does not exist (0, 1, 2 or 3)", o.zero_stage));
  return o;
}

}  // namespace roll::train
