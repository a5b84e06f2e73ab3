#pragma once
// What ROLL's `model_args.lora_target` names: "all-linear" (every linear module of the decoder
// layers, not the LM head), a comma list of module names, or a regex when the value contains any
// of `* $ | (` (docs/lora.md). Matching is PEFT's: a list entry matches a module named exactly so
// or ending in "." + entry; a regex must match the whole module name.
#include <cstdint>
#include <string>
#include <vector>

namespace roll::config {

struct LoraTarget {
  std::vector<std::string> modules;
  std::string regex;

  // Whether `module` ("model.layers.3.self_attn.q_proj") is targeted.
  bool matches(const std::string& module) const;
  // The value PEFT's adapter_config.json keeps (a list, or the regex string) as text.
  std::string describe() const;
};

// The linear modules of a decoder layer, relative to the layer ("self_attn.q_proj", ...).
const std::vector<std::string>& decoder_linear_modules();

// Parses the value; errors are ConfigErrors naming `key`.
LoraTarget parse_lora_target(const std::string& value, const std::string& key);

// The modules of a `num_layers`-layer decoder that `target` adapts, in model order.
std::vector<std::string> lora_target_modules(const LoraTarget& target, int64_t num_layers);

// ROLL's `model_args.additional_target`, PEFT's modules_to_save: a comma list of modules trained
// whole beside the adapters. rollcpp trains the modules outside the decoder layers:
// "embed_tokens", "lm_head", "norm" (the final norm) and, on a value-head model (the critic),
// "score"; PEFT's full names ("model.embed_tokens", "model.norm") are accepted. Returns full
// module names ("model.embed_tokens", "lm_head", "model.norm", "score") without repeats; any
// other entry is a ConfigError naming `key`.
std::vector<std::string> parse_additional_target(const std::string& value, bool value_head, const std::string& key);

// The parameters of such a module: "lm_head" -> {"lm_head.weight"}, "score" -> weight and bias.
std::vector<std::string> saved_module_parameters(const std::string& module);

}  // namespace roll::config
