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

}  // namespace roll::config
