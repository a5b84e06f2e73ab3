#pragma once
// The shape of a model as the memory plan needs it (docs/memory.md): parameter counts, the largest
// layer, the K/V width per token. Read from a local config.json when the model is on disk, else
// from a table of known Qwen and Llama releases (dense and mixture-of-experts), else unknown.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace roll::memory {

struct ModelSize {
  std::string source;      // "<dir>/config.json", or "known model Qwen2.5-7B"
  std::string model_type;  // qwen2, qwen3, llama, qwen3_moe, qwen2_moe
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  bool tied_embeddings = false;
  bool attention_bias = false;  // q/k/v biases (qwen2 and qwen2_moe)
  bool qk_norm = false;         // qwen3 and qwen3_moe
  int64_t max_position = 32768;
  // Mixture of experts: 0 experts for a dense model.
  int64_t experts = 0, experts_per_token = 0, moe_intermediate = 0, shared_expert_intermediate = 0;
  int64_t moe_layers = 0;  // layers whose MLP is the experts (decoder_sparse_step, mlp_only_layers)
  int64_t file_bytes = 0;  // the *.safetensors files (a known model: its bf16 release)

  bool moe() const { return experts > 0; }
  // Every parameter; `value_head`: a critic's 1-wide score head in place of the LM head.
  int64_t parameters(bool value_head = false) const;
  // What one token's forward reads: the routed experts only (equal to parameters() when dense).
  int64_t active_parameters(bool value_head = false) const;
  // The largest decoder layer (what ZeRO-3 gathers at once).
  int64_t largest_layer_parameters() const;
  int64_t attention_parameters() const;  // one layer's projections, biases and q/k norms
  int64_t dense_mlp_parameters() const { return 3 * hidden * intermediate; }
  int64_t moe_mlp_parameters(bool active_only) const;
  // One token's keys and values over all layers.
  int64_t kv_bytes_per_token(int64_t dtype_bytes) const { return 2 * layers * kv_heads * head_dim * dtype_bytes; }
};

// A config.json's shape; throws ConfigError naming the file and key when it lacks one.
ModelSize model_size_from_config_json(const std::string& path);

// The table: a hub name or a path whose last component names a known release
// ("Qwen/Qwen3-8B-Base", "/data/models/Qwen2.5-7B", "Qwen2.5-Math-7B-Instruct").
std::optional<ModelSize> model_size_from_table(std::string_view name);

// A local model directory (or hub id in the local caches) first, then the table; nullopt: unknown.
std::optional<ModelSize> model_size(const std::string& name_or_path);

}  // namespace roll::memory
