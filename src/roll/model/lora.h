#pragma once
// LoRA adapters as PEFT's LoraModel builds them (docs/lora.md). A targeted linear layer W [out, in]
// gets A [rank, in] (Kaiming-uniform with a = sqrt(5), PEFT's init: U(-1/sqrt(in), 1/sqrt(in))) and
// B [out, rank] (zeros) and computes W x + (alpha / rank) B A dropout(x), the adapter part in fp32.
// In the model an adapter is named after its module: "<module>.lora_A.weight" / ".lora_B.weight";
// PEFT's files add the prefix "base_model.model.".
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "roll/config/lora_target.h"
#include "roll/model/safetensors.h"

namespace roll::model {

struct LoraConfig {
  config::LoraTarget target;
  int64_t rank = 8;
  double alpha = 16;
  double dropout = 0;
  bool fp32_adapters = true;  // PEFT's autocast_adapter_dtype; false: the model's dtype
  // PEFT's modules_to_save (ROLL's additional_target): full names of modules outside the decoder
  // layers trained whole beside the adapters (config/lora_target.h), in the adapters' dtype.
  std::vector<std::string> modules_to_save;

  double scale() const { return alpha / static_cast<double>(rank); }
};

// From ROLL's model_args (lora_target and additional_target parsed by config/lora_target.h;
// lora_alpha defaults to 2 * rank; a value-head model also trains its head, "score", whole).
// Errors name `key` (e.g. "actor_train.model_args").
LoraConfig lora_config_from_args(const std::string& lora_target, int64_t rank, std::optional<int64_t> alpha,
                                 double dropout, const std::string& key,
                                 const std::optional<std::string>& additional_target = std::nullopt,
                                 bool value_head = false);

// The modules of a `num_layers`-layer decoder that get adapters, in model order.
std::vector<std::string> lora_modules(const LoraConfig& config, int64_t num_layers);

// Internal adapter names of a module.
std::string lora_a_name(const std::string& module);
std::string lora_b_name(const std::string& module);

// out = W + scale * B A for one module (`out` of W's shape and dtype, may not alias W): A and B
// in fp32, the sum formed in fp32 and rounded once to W's dtype; on CPU in one pass over W and
// out (model/lora_merge_kernel.h). Shapes that do not fit are an error naming `module`.
void lora_merge_into(const at::Tensor& out, const at::Tensor& w, const at::Tensor& a, const at::Tensor& b, double scale,
                     const std::string& module);

// The same for many modules (a weight sync), the CPU ones in one parallel region.
struct LoraMergeItem {
  at::Tensor out, w, a, b;
  std::string module;
};
void lora_merge_all_into(const std::vector<LoraMergeItem>& items, double scale);

// W + scale * B A for every module with adapters in `adapters`, read from `base` (HF names) and
// returned under the base weight's name in its dtype; the product is taken in fp32.
NamedTensors merge_lora(const NamedTensors& base, const LoraConfig& config, const NamedTensors& adapters);

// PEFT's adapter directory: adapter_config.json and adapter_model.safetensors. `adapters` holds
// the LoRA tensors (internal names) and the saved modules' parameters (HF names, written as PEFT
// does: "base_model.model.lm_head.weight").
bool is_peft_adapter_dir(const std::string& dir);
void save_peft_adapter(const std::string& dir, const LoraConfig& config, const NamedTensors& adapters,
                       const std::string& base_model);

struct PeftAdapter {
  LoraConfig config;
  NamedTensors adapters;   // LoRA tensors (internal names) and saved modules' parameters, fp32
  std::string base_model;  // base_model_name_or_path, resolved against `dir` when relative
};
// Reads what save_peft_adapter (or PEFT) writes; options rollcpp does not apply (DoRA, rsLoRA,
// per-module ranks, bias, modules_to_save inside the layers) are an error naming the file and the
// field.
PeftAdapter load_peft_adapter(const std::string& dir);

}  // namespace roll::model
