#pragma once
// Hugging Face config.json / generation_config.json for the architectures rollcpp runs:
// qwen2 (q/k/v bias), qwen3 (q/k RMSNorm), llama (no bias).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace roll::model {

enum class Architecture { qwen2, qwen3, llama };

struct ModelConfig {
  Architecture arch = Architecture::qwen2;
  std::string model_type = "qwen2";
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // defaults to hidden_size / num_attention_heads
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  int64_t max_position_embeddings = 32768;
  bool attention_bias = false;  // q/k/v projections carry a bias (qwen2: always)
  bool qk_norm = false;         // per-head RMSNorm of q and k before RoPE (qwen3)
  std::string torch_dtype = "float32";
  std::optional<int64_t> bos_token_id, eos_token_id, pad_token_id;
  int64_t num_labels = 1;  // critic/value head width (token-classification layout)

  // Parses `path` (config.json); errors name the file and key.
  static ModelConfig load(const std::string& path);
  std::string to_json() const;  // HF layout, for `roll model init` and checkpoints
};

struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id, bos_token_id;
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k;
  bool do_sample = true;

  static GenerationConfig load(const std::string& path);  // missing file -> defaults
  std::string to_json() const;
};

}  // namespace roll::model
