#pragma once
// `roll model init`: a randomly initialised HF model directory (config.json, safetensors,
// generation_config.json, the real Qwen tokenizer files), deterministic in the seed.
#include <cstdint>
#include <string>

#include "roll/model/hf_config.h"

namespace roll {
class ProgressReporter;
}

namespace roll::model {

struct ModelInitOptions {
  std::string preset = "tiny";  // tiny | small | qwen2.5-0.5b-shape
  std::string arch = "qwen2";   // qwen2 | qwen3 | llama
  std::string out_dir;
  uint64_t seed = 0;
  double init_std = 0.02;  // larger -> peaked logits (exact-token engine tests)
  std::string dtype = "fp32";  // fp32 | bf16 (stored dtype)
  bool tie_word_embeddings = true;
  std::string tokenizer_dir;  // default: the assets installed by scripts/setup
  int64_t vocab = 0;          // > 0: keep the tokenizer's first `vocab` BPE ids (tokenizer_trim.h)
  // > 0: override the preset's sizes (head_dim follows hidden_size / heads).
  int64_t hidden_size = 0, num_layers = 0, intermediate_size = 0, num_heads = 0, num_kv_heads = 0;
  double rope_theta = 0;  // > 0: override the preset's RoPE base
  ProgressReporter* progress = nullptr;  // when set: one step per phase (random weights, write)
};

// The architecture sizes of a preset (vocab = the full Qwen vocabulary, 151936).
ModelConfig preset_config(const std::string& preset, const std::string& arch);

// Where tokenizer.json/tokenizer_config.json come from when not given: $ROLL_ASSETS_DIR/qwen3,
// else the source tree's third_party/assets/qwen3.
std::string default_tokenizer_dir();

// Writes the directory; returns the number of parameters.
int64_t init_model_dir(const ModelInitOptions& options);

}  // namespace roll::model
