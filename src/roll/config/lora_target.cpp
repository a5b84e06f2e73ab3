#include "roll/config/lora_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "roll/core/error.h"

namespace roll::config {
namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

}  // namespace

bool LoraTarget::matches(const std::string& module) const {
  if (!regex.empty()) return std::regex_match(module, std::regex(regex));
  return std::any_of(modules.begin(), modules.end(),
                     [&](const std::string& t) { return module == t || module.ends_with("." + t); });
}

std::string LoraTarget::describe() const {
  return regex.empty() ? fmt::format("{}", fmt::join(modules, ",")) : regex;
}

const std::vector<std::string>& decoder_linear_modules() {
  static const std::vector<std::string> names = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                                 "self_attn.o_proj", "mlp.gate_proj",    "mlp.up_proj",
                                                 "mlp.down_proj"};
  return names;
}

LoraTarget parse_lora_target(const std::string& value, const std::string& key) {
  LoraTarget t;
  const std::string v = trim(value);
  if (v.empty()) throw ConfigError(key, "lora_target is empty");
  if (v == "all-linear") {
    for (const std::string& m : decoder_linear_modules()) t.modules.push_back(m.substr(m.find('.') + 1));
    return t;
  }
  if (v.find_first_of("*$|(") != std::string::npos) {
    try {
      std::regex check(v);
    } catch (const std::regex_error& e) {
      throw ConfigError(key, fmt::format("lora_target '{}' is not a valid regex: {}", v, e.what()));
    }
    t.regex = v;
    return t;
  }
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    std::string name = trim(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!name.empty()) t.modules.push_back(std::move(name));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (lora_target_modules(t, 1).empty())
    throw ConfigError(key, fmt::format("lora_target '{}' names no linear module of the decoder (q_proj, k_proj, "
                                       "v_proj, o_proj, gate_proj, up_proj, down_proj, or all-linear)",
                                       v));
  return t;
}

std::vector<std::string> lora_target_modules(const LoraTarget& target, int64_t num_layers) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < num_layers; ++i)
    for (const std::string& m : decoder_linear_modules()) {
      std::string name = fmt::format("model.layers.{}.{}", i, m);
      if (target.matches(name)) out.push_back(std::move(name));
    }
  return out;
}

std::vector<std::string> parse_additional_target(const std::string& value, bool value_head, const std::string& key) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    const std::string name = trim(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!name.empty()) {
      std::string module;
      if (name == "embed_tokens" || name == "model.embed_tokens") module = "model.embed_tokens";
      else if (name == "norm" || name == "model.norm") module = "model.norm";
      else if (name == "lm_head" && !value_head) module = "lm_head";
      else if (name == "score" && value_head) module = "score";
      else if (name == "lm_head" || name == "score")
        throw ConfigError(key, fmt::format("additional_target '{}': {}", name,
                                           value_head ? "a value-head model (the critic) has no LM head; its head is "
                                                        "'score'"
                                                      : "'score' is the critic's value head; this model has an LM "
                                                        "head ('lm_head')"));
      else
        throw ConfigError(key, fmt::format("additional_target '{}': rollcpp trains whole only the modules outside the "
                                           "decoder layers (embed_tokens, lm_head, norm; score on the critic); a "
                                           "module inside the layers takes LoRA adapters (lora_target)",
                                           name));
      if (std::find(out.begin(), out.end(), module) == out.end()) out.push_back(module);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (out.empty()) throw ConfigError(key, "additional_target names no module");
  return out;
}

std::vector<std::string> saved_module_parameters(const std::string& module) {
  if (module == "score") return {"score.weight", "score.bias"};
  return {module + ".weight"};
}

}  // namespace roll::config
