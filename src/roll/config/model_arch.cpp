#include "roll/config/model_arch.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "roll/config/model_path.h"

namespace roll::config {

bool is_loadable_model_type(std::string_view t) { return t == "qwen2" || t == "qwen3" || t == "llama"; }

std::optional<std::string> model_type_from_hub_name(std::string_view name) {
  std::string n(name);
  while (!n.empty() && n.back() == '/') n.pop_back();
  n = n.substr(n.find_last_of('/') == std::string::npos ? 0 : n.find_last_of('/') + 1);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto has = [&](std::string_view s) { return n.find(s) != std::string::npos; };
  // Mixture-of-experts releases name their active parameters: Qwen3-30B-A3B, Qwen3.5-397B-A17B.
  static const std::regex kActive(R"(-a[0-9.]+b(\b|-|$))");
  const bool moe = std::regex_search(n, kActive) || has("moe");
  if (has("qwen2.5-vl") || has("qwen2_5_vl")) return "qwen2_5_vl";
  if (has("qwen2-vl")) return "qwen2_vl";
  if (has("qwen3-vl")) return moe ? "qwen3_vl_moe" : "qwen3_vl";
  if (has("qwen3-omni")) return "qwen3_omni_moe";
  if (has("qwen2.5-omni")) return "qwen2_5_omni";
  if (has("qwen3.5")) return moe ? "qwen3_5_moe" : "qwen3_5";
  if (has("qwen3-next")) return "qwen3_next";
  if (has("qwen3")) return moe ? "qwen3_moe" : "qwen3";
  if (has("qwen2") || has("qwq")) return moe ? "qwen2_moe" : "qwen2";  // Qwen2, Qwen2.5, QwQ (and RLVR fine-tunes)
  if (has("llama")) return "llama";
  return std::nullopt;
}

std::optional<ModelArchitecture> model_architecture(const std::string& name_or_path) {
  const ModelPathLookup found = find_model_path(name_or_path);
  if (found.path) {
    const std::filesystem::path cfg = std::filesystem::path(*found.path) / "config.json";
    std::ifstream in(cfg);
    const nlohmann::json j = in ? nlohmann::json::parse(in, nullptr, false) : nlohmann::json();
    if (j.is_object() && j.contains("model_type") && j["model_type"].is_string())
      return ModelArchitecture{j["model_type"].get<std::string>(), cfg.string()};
    return ModelArchitecture{"", cfg.string()};  // unreadable: the worker's load names the fault
  }
  if (auto t = model_type_from_hub_name(name_or_path)) return ModelArchitecture{*t, "the hub name"};
  return std::nullopt;
}

}  // namespace roll::config
