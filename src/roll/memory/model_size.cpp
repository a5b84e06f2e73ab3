#include "roll/memory/model_size.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/config/model_path.h"
#include "roll/core/error.h"

namespace roll::memory {

int64_t ModelSize::attention_parameters() const {
  const int64_t q = heads * head_dim, kv = kv_heads * head_dim;
  int64_t n = hidden * q + 2 * hidden * kv + q * hidden;
  if (attention_bias) n += q + 2 * kv;
  if (qk_norm) n += 2 * head_dim;
  return n;
}

int64_t ModelSize::moe_mlp_parameters(bool active_only) const {
  const int64_t routed = (active_only ? experts_per_token : experts) * 3 * hidden * moe_intermediate;
  const int64_t router = hidden * experts;
  // Qwen2-MoE's shared expert carries its own 1-wide sigmoid gate.
  const int64_t shared = shared_expert_intermediate > 0 ? 3 * hidden * shared_expert_intermediate + hidden : 0;
  return routed + router + shared;
}

namespace {

int64_t count(const ModelSize& m, bool value_head, bool active_only) {
  const int64_t norms = 2 * m.hidden;
  const int64_t dense_layers = m.layers - m.moe_layers;
  int64_t n = m.vocab * m.hidden;  // embeddings
  n += m.layers * (m.attention_parameters() + norms);
  n += dense_layers * m.dense_mlp_parameters() + m.moe_layers * m.moe_mlp_parameters(active_only);
  n += m.hidden;  // final norm
  if (value_head) n += m.hidden + 1;
  else if (!m.tied_embeddings) n += m.vocab * m.hidden;
  return n;
}

}  // namespace

int64_t ModelSize::parameters(bool value_head) const { return count(*this, value_head, false); }
int64_t ModelSize::active_parameters(bool value_head) const { return count(*this, value_head, true); }

int64_t ModelSize::largest_layer_parameters() const {
  const int64_t mlp = moe_layers > 0 ? std::max(moe_mlp_parameters(false), moe_layers < layers ? dense_mlp_parameters() : 0)
                                     : dense_mlp_parameters();
  return attention_parameters() + 2 * hidden + mlp;
}

ModelSize model_size_from_config_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path, fmt::format("{}: cannot read the model's config.json", path));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object()) throw ConfigError(path, fmt::format("{}: not a JSON object", path));
  auto integer = [&](const char* key) -> int64_t {
    if (!j.contains(key) || !j[key].is_number_integer())
      throw ConfigError(path, fmt::format("{}: '{}' is missing or not an integer", path, key));
    return j[key].get<int64_t>();
  };
  auto integer_or = [&](const char* key, int64_t fallback) {
    return j.contains(key) && j[key].is_number_integer() ? j[key].get<int64_t>() : fallback;
  };
  ModelSize m;
  m.source = path;
  m.model_type = j.value("model_type", std::string());
  m.vocab = integer("vocab_size");
  m.hidden = integer("hidden_size");
  m.layers = integer("num_hidden_layers");
  m.heads = integer("num_attention_heads");
  m.kv_heads = integer_or("num_key_value_heads", m.heads);
  m.head_dim = integer_or("head_dim", m.hidden / std::max<int64_t>(1, m.heads));
  m.intermediate = integer_or("intermediate_size", 0);
  m.tied_embeddings = j.value("tie_word_embeddings", false);
  const bool qwen2 = m.model_type == "qwen2" || m.model_type == "qwen2_moe";
  m.attention_bias = qwen2 || j.value("attention_bias", false);
  m.qk_norm = m.model_type == "qwen3" || m.model_type == "qwen3_moe";
  m.max_position = integer_or("max_position_embeddings", 32768);
  m.experts = integer_or("num_experts", 0);
  if (m.experts > 0) {
    m.experts_per_token = integer("num_experts_per_tok");
    m.moe_intermediate = integer("moe_intermediate_size");
    m.shared_expert_intermediate = integer_or("shared_expert_intermediate_size", 0);
    const int64_t step = std::max<int64_t>(1, integer_or("decoder_sparse_step", 1));
    std::set<int64_t> dense_only;
    if (j.contains("mlp_only_layers") && j["mlp_only_layers"].is_array())
      for (const auto& v : j["mlp_only_layers"])
        if (v.is_number_integer()) dense_only.insert(v.get<int64_t>());
    for (int64_t i = 0; i < m.layers; ++i)
      if (!dense_only.count(i) && (i + 1) % step == 0) ++m.moe_layers;
  }
  return m;
}

namespace {

struct KnownModel {
  const char* pattern;  // ECMAScript regex over the lowercased last path component
  const char* name;
  ModelSize size;
};

ModelSize dense(const char* type, int64_t vocab, int64_t hidden, int64_t layers, int64_t heads, int64_t kv,
                int64_t head_dim, int64_t inter, bool tied, int64_t max_position) {
  ModelSize m;
  m.model_type = type;
  m.vocab = vocab, m.hidden = hidden, m.layers = layers, m.heads = heads, m.kv_heads = kv, m.head_dim = head_dim;
  m.intermediate = inter, m.tied_embeddings = tied, m.max_position = max_position;
  m.attention_bias = m.model_type == "qwen2" || m.model_type == "qwen2_moe";
  m.qk_norm = m.model_type == "qwen3" || m.model_type == "qwen3_moe";
  return m;
}

ModelSize moe(ModelSize m, int64_t experts, int64_t per_token, int64_t moe_inter, int64_t shared_inter) {
  m.experts = experts, m.experts_per_token = per_token, m.moe_intermediate = moe_inter;
  m.shared_expert_intermediate = shared_inter, m.moe_layers = m.layers;
  return m;
}

// The published config.json values of each release (instruct, base, math and coder variants of one
// size share the shape).
const std::vector<KnownModel>& known_models() {
  static const std::vector<KnownModel> table = {
      {R"(qwen3-30b-a3b)", "Qwen3-30B-A3B", moe(dense("qwen3_moe", 151936, 2048, 48, 32, 4, 128, 6144, false, 40960), 128, 8, 768, 0)},
      {R"(qwen3-235b-a22b)", "Qwen3-235B-A22B", moe(dense("qwen3_moe", 151936, 4096, 94, 64, 4, 128, 12288, false, 40960), 128, 8, 1536, 0)},
      {R"(qwen1\.5-moe-a2\.7b)", "Qwen1.5-MoE-A2.7B", moe(dense("qwen2_moe", 151936, 2048, 24, 16, 16, 128, 5632, false, 8192), 60, 4, 1408, 5632)},
      {R"(qwen2-57b-a14b)", "Qwen2-57B-A14B", moe(dense("qwen2_moe", 151936, 3584, 28, 28, 4, 128, 18944, false, 32768), 64, 8, 2560, 20480)},
      {R"(qwen3-0\.6b)", "Qwen3-0.6B", dense("qwen3", 151936, 1024, 28, 16, 8, 128, 3072, true, 40960)},
      {R"(qwen3-1\.7b)", "Qwen3-1.7B", dense("qwen3", 151936, 2048, 28, 16, 8, 128, 6144, true, 40960)},
      {R"(qwen3-4b)", "Qwen3-4B", dense("qwen3", 151936, 2560, 36, 32, 8, 128, 9728, true, 40960)},
      {R"(qwen3-8b)", "Qwen3-8B", dense("qwen3", 151936, 4096, 36, 32, 8, 128, 12288, false, 40960)},
      {R"(qwen3-14b)", "Qwen3-14B", dense("qwen3", 151936, 5120, 40, 40, 8, 128, 17408, false, 40960)},
      {R"(qwen3-32b)", "Qwen3-32B", dense("qwen3", 151936, 5120, 64, 64, 8, 128, 25600, false, 40960)},
      {R"(qwen2(\.5)?-(math-|coder-)?0\.5b)", "Qwen2.5-0.5B", dense("qwen2", 151936, 896, 24, 14, 2, 64, 4864, true, 32768)},
      {R"(qwen2(\.5)?-(math-|coder-)?1\.5b|distill-qwen-1\.5b)", "Qwen2.5-1.5B", dense("qwen2", 151936, 1536, 28, 12, 2, 128, 8960, true, 32768)},
      {R"(qwen2(\.5)?-(math-|coder-)?3b)", "Qwen2.5-3B", dense("qwen2", 151936, 2048, 36, 16, 2, 128, 11008, true, 32768)},
      {R"(qwen2(\.5)?-(math-|coder-)?7b|distill-qwen-7b)", "Qwen2.5-7B", dense("qwen2", 152064, 3584, 28, 28, 4, 128, 18944, false, 32768)},
      {R"(qwen2(\.5)?-(coder-)?14b|distill-qwen-14b)", "Qwen2.5-14B", dense("qwen2", 152064, 5120, 48, 40, 8, 128, 13824, false, 32768)},
      {R"(qwen2(\.5)?-(coder-)?32b|distill-qwen-32b|qwq-32b)", "Qwen2.5-32B", dense("qwen2", 152064, 5120, 64, 40, 8, 128, 27648, false, 32768)},
      {R"(qwen2(\.5)?-(math-)?72b)", "Qwen2.5-72B", dense("qwen2", 152064, 8192, 80, 64, 8, 128, 29568, false, 32768)},
      {R"(llama-3\.2-1b)", "Llama-3.2-1B", dense("llama", 128256, 2048, 16, 32, 8, 64, 8192, true, 131072)},
      {R"(llama-3\.2-3b)", "Llama-3.2-3B", dense("llama", 128256, 3072, 28, 24, 8, 128, 8192, true, 131072)},
      {R"(llama-3(\.1)?-8b)", "Llama-3.1-8B", dense("llama", 128256, 4096, 32, 32, 8, 128, 14336, false, 131072)},
      {R"(llama-3(\.1|\.3)?-70b)", "Llama-3.1-70B", dense("llama", 128256, 8192, 80, 64, 8, 128, 28672, false, 131072)},
  };
  return table;
}

}  // namespace

std::optional<ModelSize> model_size_from_table(std::string_view name) {
  std::string n(name);
  while (!n.empty() && n.back() == '/') n.pop_back();
  const auto slash = n.find_last_of('/');
  if (slash != std::string::npos) n = n.substr(slash + 1);
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& k : known_models()) {
    // The size must end there: "qwen2.5-3b" is not the start of "qwen2.5-32b".
    const std::regex re(std::string("(") + k.pattern + ")(?![0-9a-z.])");
    if (std::regex_search(n, re)) {
      ModelSize m = k.size;
      m.source = fmt::format("known model {}", k.name);
      m.file_bytes = m.parameters() * 2;
      return m;
    }
  }
  return std::nullopt;
}

std::optional<ModelSize> model_size(const std::string& name_or_path) {
  const config::ModelPathLookup found = config::find_model_path(name_or_path);
  if (found.path) {
    const auto cfg = std::filesystem::path(*found.path) / "config.json";
    if (std::filesystem::exists(cfg)) {
      ModelSize m = model_size_from_config_json(cfg.string());
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(*found.path, ec))
        if (e.path().extension() == ".safetensors") m.file_bytes += static_cast<int64_t>(e.file_size(ec));
      return m;
    }
    // A PEFT adapter directory: the base model's shape.
    const auto adapter = std::filesystem::path(*found.path) / "adapter_config.json";
    if (std::filesystem::exists(adapter)) {
      std::ifstream in(adapter);
      const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
      if (j.is_object() && j.contains("base_model_name_or_path") && j["base_model_name_or_path"].is_string())
        return model_size(j["base_model_name_or_path"].get<std::string>());
    }
  }
  return model_size_from_table(name_or_path);
}

}  // namespace roll::memory
