#include "roll/model/lora.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/model/lora_merge_kernel.h"

namespace fs = std::filesystem;

namespace roll::model {
namespace {

constexpr const char* kPeftPrefix = "base_model.model.";
constexpr const char* kAdapterFile = "adapter_model.safetensors";
constexpr const char* kAdapterConfig = "adapter_config.json";

// "model.layers.3.self_attn.q_proj.lora_A.weight" -> "model.layers.3.self_attn.q_proj"
std::string module_of(const std::string& adapter_name) {
  for (const char* tail : {".lora_A.weight", ".lora_B.weight"})
    if (adapter_name.ends_with(tail)) return adapter_name.substr(0, adapter_name.size() - std::string(tail).size());
  return "";
}

}  // namespace

LoraConfig lora_config_from_args(const std::string& lora_target, int64_t rank, std::optional<int64_t> alpha,
                                 double dropout, const std::string& key,
                                 const std::optional<std::string>& additional_target, bool value_head) {
  if (rank < 1) throw ConfigError(key + ".lora_rank", fmt::format("lora_rank must be >= 1, got {}", rank));
  if (dropout < 0 || dropout >= 1)
    throw ConfigError(key + ".lora_dropout", fmt::format("lora_dropout must be in [0, 1), got {}", dropout));
  LoraConfig c;
  c.target = config::parse_lora_target(lora_target, key + ".lora_target");
  c.rank = rank;
  c.alpha = static_cast<double>(alpha.value_or(2 * rank));
  c.dropout = dropout;
  if (additional_target)
    c.modules_to_save = config::parse_additional_target(*additional_target, value_head, key + ".additional_target");
  if (value_head && std::find(c.modules_to_save.begin(), c.modules_to_save.end(), "score") == c.modules_to_save.end())
    c.modules_to_save.push_back("score");
  return c;
}

std::vector<std::string> lora_modules(const LoraConfig& config, int64_t num_layers) {
  return config::lora_target_modules(config.target, num_layers);
}

std::string lora_a_name(const std::string& module) { return module + ".lora_A.weight"; }
std::string lora_b_name(const std::string& module) { return module + ".lora_B.weight"; }

void lora_merge_into(const at::Tensor& out, const at::Tensor& w, const at::Tensor& a, const at::Tensor& b, double scale,
                     const std::string& module) {
  lora_merge_all_into({LoraMergeItem{out, w, a, b, module}}, scale);
}

void lora_merge_all_into(const std::vector<LoraMergeItem>& items, double scale) {
  std::vector<LoraMergeJob> on_cpu;
  for (const auto& [out, w, a, b, module] : items) {
    if (a.dim() != 2 || b.dim() != 2 || w.dim() != 2 || a.size(1) != w.size(1) || b.size(0) != w.size(0) ||
        a.size(0) != b.size(1))
      throw Error(fmt::format("LoRA adapter of '{}': A {} and B {} do not fit the weight {}", module,
                              c10::str(a.sizes()), c10::str(b.sizes()), c10::str(w.sizes())));
    if (out.scalar_type() != w.scalar_type() || !out.sizes().equals(w.sizes()))
      throw Error(fmt::format("LoRA merge of '{}': the target is {} {}, the weight {} {}", module,
                              c10::toString(out.scalar_type()), c10::str(out.sizes()),
                              c10::toString(w.scalar_type()), c10::str(w.sizes())));
    if (lora_merge_kernel_applies(out, w)) {
      on_cpu.push_back({out, w, a, b, scale});
      continue;
    }
    at::NoGradGuard no_grad;
    at::Tensor dst = out;  // copy_ takes a non-const reference
    dst.copy_(at::addmm(w.to(at::kFloat), b.to(at::kFloat), a.to(at::kFloat), 1.0, scale));
  }
  if (!on_cpu.empty()) lora_merge_cpu(on_cpu);
}

NamedTensors merge_lora(const NamedTensors& base, const LoraConfig& config, const NamedTensors& adapters) {
  std::map<std::string, at::Tensor> a, b;
  for (const auto& [name, t] : adapters) {
    const std::string module = module_of(name);
    if (module.empty()) throw Error(fmt::format("'{}' is not a LoRA adapter tensor (lora_A / lora_B)", name));
    (name.ends_with(".lora_A.weight") ? a : b)[module] = t;
  }
  NamedTensors out;
  std::vector<LoraMergeItem> items;
  for (const auto& [module, A] : a) {
    auto Bit = b.find(module);
    if (Bit == b.end()) throw Error(fmt::format("LoRA adapter of '{}' has lora_A but no lora_B", module));
    const std::string weight = module + ".weight";
    auto w = std::find_if(base.begin(), base.end(), [&](const auto& p) { return p.first == weight; });
    if (w == base.end()) throw Error(fmt::format("LoRA adapter names '{}', which the model does not have", weight));
    out.emplace_back(weight, at::empty_like(w->second));
    items.push_back({out.back().second, w->second, A, Bit->second, module});
  }
  for (const auto& [module, B] : b)
    if (!a.count(module)) throw Error(fmt::format("LoRA adapter of '{}' has lora_B but no lora_A", module));
  lora_merge_all_into(items, config.scale());
  return out;
}

bool is_peft_adapter_dir(const std::string& dir) {
  return fs::is_regular_file(fs::path(dir) / kAdapterConfig);
}

void save_peft_adapter(const std::string& dir, const LoraConfig& config, const NamedTensors& adapters,
                       const std::string& base_model) {
  fs::create_directories(dir);
  NamedTensors file;
  for (const auto& [name, t] : adapters) file.emplace_back(kPeftPrefix + name, t.contiguous());
  write_safetensors((fs::path(dir) / kAdapterFile).string(), file);
  nlohmann::json targets = config.target.regex.empty() ? nlohmann::json(config.target.modules)
                                                       : nlohmann::json(config.target.regex);
  const bool value_head =
      std::find(config.modules_to_save.begin(), config.modules_to_save.end(), "score") != config.modules_to_save.end();
  nlohmann::json j = {{"peft_type", "LORA"},
                      {"task_type", value_head ? "TOKEN_CLS" : "CAUSAL_LM"},
                      {"base_model_name_or_path", base_model},
                      {"r", config.rank},
                      {"lora_alpha", config.alpha},
                      {"lora_dropout", config.dropout},
                      {"target_modules", targets},
                      {"bias", "none"},
                      {"fan_in_fan_out", false},
                      {"use_rslora", false},
                      {"use_dora", false},
                      {"init_lora_weights", true},
                      {"inference_mode", true},
                      {"modules_to_save", config.modules_to_save.empty()
                                              ? nlohmann::json(nullptr)
                                              : nlohmann::json(config.modules_to_save)},
                      {"rank_pattern", nlohmann::json::object()},
                      {"alpha_pattern", nlohmann::json::object()},
                      {"layers_to_transform", nullptr},
                      {"layers_pattern", nullptr},
                      {"revision", nullptr}};
  std::ofstream out(fs::path(dir) / kAdapterConfig);
  out << j.dump(2) << "\n";
  if (!out) throw Error(fmt::format("cannot write {}", (fs::path(dir) / kAdapterConfig).string()));
}

PeftAdapter load_peft_adapter(const std::string& dir) {
  const fs::path cfg_path = fs::path(dir) / kAdapterConfig;
  const std::string where = cfg_path.string();
  std::ifstream in(cfg_path);
  if (!in) throw Error(fmt::format("{}: cannot read the adapter config", where));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not JSON ({})", where, e.what()));
  }
  auto refuse_if = [&](bool bad, const std::string& field, const std::string& why) {
    if (bad) throw Error(fmt::format("{}: {} ({}); rollcpp applies plain LoRA only", where, field, why));
  };
  refuse_if(j.value("peft_type", "LORA") != "LORA", "peft_type", j.value("peft_type", ""));
  refuse_if(j.value("use_dora", false), "use_dora", "DoRA");
  refuse_if(j.value("use_rslora", false), "use_rslora", "rank-stabilised scaling");
  refuse_if(j.value("fan_in_fan_out", false), "fan_in_fan_out", "transposed Conv1D weights");
  refuse_if(j.contains("bias") && j["bias"] != "none", "bias", "trained biases");
  for (const char* pattern : {"rank_pattern", "alpha_pattern"})
    refuse_if(j.contains(pattern) && !j[pattern].is_null() && !j[pattern].empty(), pattern, "per-module values");
  refuse_if(j.contains("layers_to_transform") && !j["layers_to_transform"].is_null(), "layers_to_transform",
            "a subset of layers");

  PeftAdapter out;
  try {
    out.config.rank = j.at("r").get<int64_t>();
    out.config.alpha = j.at("lora_alpha").get<double>();
    out.config.dropout = j.value("lora_dropout", 0.0);
    const nlohmann::json& t = j.at("target_modules");
    // PEFT keeps a string as a regex, a list as module names.
    if (t.is_string())
      out.config.target.regex = t.get<std::string>();
    else
      out.config.target.modules = t.get<std::vector<std::string>>();
    if (j.contains("modules_to_save") && !j["modules_to_save"].is_null()) {
      // PEFT matches these by the end of the module name; rollcpp trains the modules outside the
      // layers (config/lora_target.h), "score" for a value head.
      for (const std::string& m : j["modules_to_save"].get<std::vector<std::string>>()) {
        const bool score = m == "score" || m.ends_with(".score");
        std::vector<std::string> full;
        try {
          full = config::parse_additional_target(score ? "score" : m, score, "modules_to_save");
        } catch (const ConfigError& e) {
          throw Error(fmt::format("{}: modules_to_save: {}", where, e.what()));
        }
        out.config.modules_to_save.push_back(full.front());
      }
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: {}", where, e.what()));
  }
  std::vector<std::string> saved_params;
  for (const std::string& m : out.config.modules_to_save)
    for (const std::string& p : config::saved_module_parameters(m)) saved_params.push_back(p);
  if (out.config.rank < 1) throw Error(fmt::format("{}: r must be >= 1", where));
  std::string base = j.value("base_model_name_or_path", "");
  if (j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_null()) base.clear();
  if (!base.empty() && fs::path(base).is_relative() && fs::exists(fs::path(dir) / base))
    base = (fs::path(dir) / base).lexically_normal().string();
  out.base_model = base;

  const fs::path weights = fs::path(dir) / kAdapterFile;
  if (!fs::exists(weights)) throw Error(fmt::format("adapter directory {}: {} is missing", dir, kAdapterFile));
  auto file = SafetensorsFile::open(weights.string());
  for (const SafetensorsEntry& e : file->entries()) {
    std::string name = e.name;
    if (name.rfind(kPeftPrefix, 0) == 0) name = name.substr(std::string(kPeftPrefix).size());
    // PEFT keeps the adapter name in memory ("lora_A.default.weight") and drops it in files; accept both.
    for (const char* part : {".lora_A.", ".lora_B."}) {
      const size_t at = name.find(part);
      if (at == std::string::npos) continue;
      const size_t rest = at + std::string(part).size();
      if (name.compare(rest, std::string::npos, "weight") != 0) {
        const size_t dot = name.find('.', rest);
        if (dot != std::string::npos && name.compare(dot + 1, std::string::npos, "weight") == 0)
          name = name.substr(0, rest) + "weight";
      }
    }
    // A saved module: PEFT keeps "<module>.modules_to_save.<adapter>.<param>" in memory and
    // "<module>.<param>" in files.
    if (const size_t at = name.find(".modules_to_save."); at != std::string::npos) {
      const size_t adapter_end = name.find('.', at + std::string(".modules_to_save.").size());
      if (adapter_end != std::string::npos) name = name.substr(0, at) + name.substr(adapter_end);
    }
    if (module_of(name).empty() && std::find(saved_params.begin(), saved_params.end(), name) == saved_params.end())
      throw Error(fmt::format("{}: tensor '{}' is neither a LoRA adapter (lora_A / lora_B) nor a parameter of "
                              "modules_to_save",
                              weights.string(), e.name));
    out.adapters.emplace_back(name, file->get(e.name).to(at::kFloat).clone());
  }
  return out;
}

}  // namespace roll::model
