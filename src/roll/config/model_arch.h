#pragma once
// Which architecture a model name or path stands for, so that `roll validate` refuses a model
// model/ cannot load before any worker starts (docs/config.md, "Models"). A directory (or a hub id
// found in the local caches, config/model_path.h) answers with its config.json's model_type; any
// other hub id is looked up by name in a table of Qwen and Llama families.
#include <optional>
#include <string>
#include <string_view>

namespace roll::config {

// The HF model_type values model/ loads (model/hf_config.cpp).
inline constexpr std::string_view kLoadableModelTypes = "qwen2, qwen3, llama";
bool is_loadable_model_type(std::string_view model_type);

struct ModelArchitecture {
  std::string model_type;  // "qwen2", "qwen3_moe", "qwen2_5_vl", ...
  std::string source;      // "<dir>/config.json", or "the hub name"
};

// nullopt: not a local model and a name the table does not know.
std::optional<ModelArchitecture> model_architecture(const std::string& name_or_path);

// The table alone: the model_type a hub name ("Qwen/Qwen3-30B-A3B-Base") belongs to, or nullopt.
std::optional<std::string> model_type_from_hub_name(std::string_view name);

}  // namespace roll::config
