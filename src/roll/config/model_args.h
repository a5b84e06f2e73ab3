#pragma once
// `<worker>.model_args` (ROLL's ModelArguments, docs/config.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/node.h"

namespace roll::config {

struct ModelArguments {
  std::optional<std::string> model_name_or_path;
  std::optional<std::string> adapter_name_or_path;
  std::optional<std::string> attn_implementation;  // sdpa | fa2 | auto (fa2 -> flash_attention_2)
  std::optional<double> moe_aux_loss_coef;
  bool disable_gradient_checkpointing = false;
  std::optional<bool> gradient_checkpointing_use_reentrant;
  std::string device_map = "balanced";
  std::string dtype = "bf16";  // fp32 | bf16 | fp16 | auto (rollcpp: config/platform.h resolve_auto_dtype)
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

}  // namespace roll::config
