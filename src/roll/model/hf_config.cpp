#include "roll/model/hf_config.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "roll/core/error.h"
#include "roll/core/json_number.h"

namespace roll::model {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("cannot read {}", path));
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

std::string key_name(const std::string& path, const char* key) { return fmt::format("{}: key '{}'", path, key); }

// j[key] as T: integers only from integral values in range (json_integer), bool only from a
// bool, strings from strings; otherwise an error naming the file, key and value.
template <typename T>
T typed(const nlohmann::json& v, const char* key, const std::string& path) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return json_integer<T>(v, key_name(path, key));
  } else {
    try {
      return v.get<T>();
    } catch (const std::exception&) {
      throw Error(fmt::format("{} has the wrong type ({})", key_name(path, key), v.dump()));
    }
  }
}

template <typename T>
T required(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) throw Error(fmt::format("{}: key '{}' is missing", path, key));
  return typed<T>(j[key], key, path);
}

template <typename T>
T optional_or(const nlohmann::json& j, const char* key, T def, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return def;
  return typed<T>(j[key], key, path);
}

// A token id, or the first of a list of them.
std::optional<int64_t> first_id(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  if (j[key].is_array())
    return j[key].empty() ? std::nullopt : std::optional<int64_t>(typed<int64_t>(j[key][0], key, path));
  return typed<int64_t>(j[key], key, path);
}

}  // namespace

ModelConfig ModelConfig::load(const std::string& path) {
  const auto j = read_json(path);
  ModelConfig c;
  c.model_type = required<std::string>(j, "model_type", path);
  if (c.model_type == "qwen2") {
    c.arch = Architecture::qwen2;
  } else if (c.model_type == "qwen3") {
    c.arch = Architecture::qwen3;
  } else if (c.model_type == "llama") {
    c.arch = Architecture::llama;
  } else {
    throw Error(fmt::format("{}: model_type '{}' is not supported (supported: qwen2, qwen3, llama)", path,
                            c.model_type));
  }
  c.vocab_size = required<int64_t>(j, "vocab_size", path);
  c.hidden_size = required<int64_t>(j, "hidden_size", path);
  c.intermediate_size = required<int64_t>(j, "intermediate_size", path);
  c.num_hidden_layers = required<int64_t>(j, "num_hidden_layers", path);
  c.num_attention_heads = required<int64_t>(j, "num_attention_heads", path);
  c.num_key_value_heads = optional_or<int64_t>(j, "num_key_value_heads", c.num_attention_heads, path);
  c.head_dim = optional_or<int64_t>(j, "head_dim", c.hidden_size / std::max<int64_t>(1, c.num_attention_heads), path);
  c.rope_theta = optional_or<double>(j, "rope_theta", 10000.0, path);
  c.rms_norm_eps = optional_or<double>(j, "rms_norm_eps", 1e-6, path);
  c.tie_word_embeddings = optional_or<bool>(j, "tie_word_embeddings", false, path);
  c.max_position_embeddings = optional_or<int64_t>(j, "max_position_embeddings", 32768, path);
  c.torch_dtype = optional_or<std::string>(j, "torch_dtype", "float32", path);
  c.num_labels = optional_or<int64_t>(j, "num_labels", 1, path);
  c.bos_token_id = first_id(j, "bos_token_id", path);
  c.eos_token_id = first_id(j, "eos_token_id", path);
  c.pad_token_id = first_id(j, "pad_token_id", path);
  c.attention_bias = c.arch == Architecture::qwen2 ? true : optional_or<bool>(j, "attention_bias", false, path);
  c.qk_norm = c.arch == Architecture::qwen3;
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    throw Error(fmt::format("{}: rope_scaling {} is not supported yet; see docs/known-gaps.md", path,
                            j["rope_scaling"].dump()));
  if (c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(fmt::format("{}: num_attention_heads {} must be a positive multiple of num_key_value_heads {}", path,
                            c.num_attention_heads, c.num_key_value_heads));
  if (c.hidden_size <= 0 || c.num_hidden_layers <= 0 || c.vocab_size <= 0 || c.head_dim <= 0 || c.head_dim % 2)
    throw Error(fmt::format("{}: sizes must be positive and head_dim even", path));
  return c;
}

std::string ModelConfig::to_json() const {
  nlohmann::ordered_json j;
  const char* arch_name = arch == Architecture::qwen2 ? "Qwen2ForCausalLM"
                          : arch == Architecture::qwen3 ? "Qwen3ForCausalLM"
                                                        : "LlamaForCausalLM";
  j["architectures"] = {arch_name};
  j["model_type"] = model_type;
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["intermediate_size"] = intermediate_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["num_key_value_heads"] = num_key_value_heads;
  j["head_dim"] = head_dim;
  j["hidden_act"] = "silu";
  j["rope_theta"] = rope_theta;
  j["rms_norm_eps"] = rms_norm_eps;
  j["tie_word_embeddings"] = tie_word_embeddings;
  j["max_position_embeddings"] = max_position_embeddings;
  if (arch != Architecture::qwen2) j["attention_bias"] = attention_bias;
  j["torch_dtype"] = torch_dtype;
  if (bos_token_id) j["bos_token_id"] = *bos_token_id;
  if (eos_token_id) j["eos_token_id"] = *eos_token_id;
  if (pad_token_id) j["pad_token_id"] = *pad_token_id;
  j["num_labels"] = num_labels;
  j["use_cache"] = true;
  return j.dump(2) + "\n";
}

GenerationConfig GenerationConfig::load(const std::string& path) {
  GenerationConfig g;
  if (!std::filesystem::exists(path)) return g;
  const auto j = read_json(path);
  if (j.contains("eos_token_id") && !j["eos_token_id"].is_null()) {
    if (j["eos_token_id"].is_array())
      for (const auto& id : j["eos_token_id"]) g.eos_token_ids.push_back(typed<int64_t>(id, "eos_token_id", path));
    else
      g.eos_token_ids = {typed<int64_t>(j["eos_token_id"], "eos_token_id", path)};
  }
  g.pad_token_id = first_id(j, "pad_token_id", path);
  g.bos_token_id = first_id(j, "bos_token_id", path);
  if (j.contains("temperature") && j["temperature"].is_number()) g.temperature = j["temperature"].get<double>();
  if (j.contains("top_p") && j["top_p"].is_number()) g.top_p = j["top_p"].get<double>();
  if (j.contains("top_k") && j["top_k"].is_number()) g.top_k = typed<int64_t>(j["top_k"], "top_k", path);
  if (j.contains("repetition_penalty") && j["repetition_penalty"].is_number())
    g.repetition_penalty = j["repetition_penalty"].get<double>();
  g.do_sample = optional_or<bool>(j, "do_sample", true, path);
  return g;
}

std::string GenerationConfig::to_json() const {
  nlohmann::ordered_json j;
  if (bos_token_id) j["bos_token_id"] = *bos_token_id;
  j["eos_token_id"] = eos_token_ids;
  if (pad_token_id) j["pad_token_id"] = *pad_token_id;
  j["do_sample"] = do_sample;
  if (temperature) j["temperature"] = *temperature;
  if (top_p) j["top_p"] = *top_p;
  if (top_k) j["top_k"] = *top_k;
  if (repetition_penalty) j["repetition_penalty"] = *repetition_penalty;
  return j.dump(2) + "\n";
}

}  // namespace roll::model
