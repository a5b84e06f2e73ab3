#pragma once
// Decoder-only transformer (Qwen2/Qwen2.5, Qwen3, Llama) on ATen, with HF weight names.
// One implementation serves training (autograd, optional per-layer gradient checkpointing),
// forward-only log-probs (reference, old log-probs), the critic (value head) and the inference
// engine (forward over externally managed K/V storage through AttentionBackend).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "roll/model/hf_config.h"
#include "roll/model/lora.h"
#include "roll/model/safetensors.h"

namespace roll::model {

// Attention over K/V kept outside the model (the engine's paged cache). Called once per layer
// for the N tokens of a step: q [N, Hq, D], k and v [N, Hkv, D], RoPE already applied. Returns
// the attention output [N, Hq * D] in the model dtype.
class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  virtual at::Tensor attend(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) = 0;
};

// Sees each decoder layer run in hidden_states/token_log_probs/values (not in forward_tokens).
// A ZeRO-3 training strategy gathers a layer's sharded weights in before_layer and releases them
// in after_layer, where it may also register a backward hook on the layer's output.
class LayerHooks {
 public:
  virtual ~LayerHooks() = default;
  virtual void before_layer(int64_t layer) = 0;
  virtual void after_layer(int64_t layer, const at::Tensor& output) = 0;
};

struct TokenLogProbs {
  at::Tensor log_probs;  // [B, T-1] fp32: log p(input_ids[:, t+1] | ...)
  at::Tensor entropy;    // [B, T-1] fp32 (undefined unless requested)
};

class Transformer {
 public:
  // Loads `dir` (config.json + safetensors) in `dtype` (kFloat or kBFloat16). `value_head`: the
  // critic layout (HF *ForTokenClassification: `score.weight`/`score.bias`, no lm_head needed);
  // a missing score head is initialised from `seed` (ROLL's critic starts from a policy model).
  // A PEFT adapter directory (adapter_config.json) loads its base model with the adapters on.
  static std::shared_ptr<Transformer> load(const std::string& dir, at::ScalarType dtype, bool value_head = false,
                                           uint64_t seed = 0);
  // Random weights (normal(0, init_std), norms at 1, biases at 0), deterministic in `seed`.
  static std::shared_ptr<Transformer> random(const ModelConfig& config, at::ScalarType dtype, uint64_t seed,
                                             double init_std = 0.02, bool value_head = false);

  const ModelConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  bool has_value_head() const { return value_head_; }

  // Parameters with HF names, in a fixed order (embeddings, layers, norm, head); LoRA adapters
  // are not among them.
  const NamedTensors& named_parameters() const { return params_; }
  at::Tensor parameter(const std::string& name) const;
  // What training updates: the LoRA adapters and the saved modules' copies when the model has
  // adapters (the base stays frozen), else every parameter.
  const NamedTensors& trainable_parameters() const { return lora_ ? trainable_ : params_; }
  void set_requires_grad(bool requires_grad);

  // LoRA (lora.h): adds fresh adapters (A from `seed`, B = 0; fp32) on the modules `config`
  // targets, and a copy of each of config.modules_to_save (PEFT's ModulesToSaveWrapper: the copy
  // trains and serves while the adapters are on, the base's own tensor while they are off); an
  // error if it targets none or the model has adapters already.
  void add_lora(const LoraConfig& config, uint64_t seed);
  const LoraConfig* lora() const { return lora_ ? &*lora_ : nullptr; }
  const NamedTensors& adapters() const { return adapters_; }  // lora_A / lora_B only
  // The saved modules' copies under their parameters' HF names ("lm_head.weight").
  const NamedTensors& saved_modules() const { return saved_; }
  // Copies adapter tensors (internal names) and saved modules' parameters (HF names) in.
  void load_adapters(const NamedTensors& tensors);
  // Off: forwards compute the base model (ROLL's reference log-probs under LoRA).
  void set_adapters_enabled(bool enabled) { adapters_enabled_ = enabled; }
  bool adapters_enabled() const { return adapters_enabled_; }
  // Folds the adapters into the base weights (W += scale * B A), copies the saved modules over
  // the base's, and drops both.
  void merge_adapters();
  // Gives the LM head a parameter of its own ("lm_head.weight", a copy of the embedding) in a
  // model that ties the two: what a saved embedding or LM head needs once merged or served.
  void untie_word_embeddings();
  // The directory the base weights came from (absolute; empty for random()): what a LoRA
  // checkpoint names as its base model.
  const std::string& base_model_dir() const { return base_model_dir_; }
  // Copies tensors into the parameters of the same names (shape checked; dtype converted).
  void load_weights(const NamedTensors& tensors);
  int64_t num_parameters() const;

  // Hidden states after the final norm: [B, T, hidden]. attention_mask [B, T] (1 = token,
  // 0 = padding, left or right), position_ids [B, T]. Padding positions produce finite garbage.
  at::Tensor hidden_states(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                           const at::Tensor& position_ids, bool gradient_checkpointing = false) const;
  // Full logits [B, T, vocab] in fp32 (tests and small batches; training uses token_log_probs).
  at::Tensor logits(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& position_ids) const;
  // Log-prob (and entropy) of each next token, never materialising [B, T, vocab] whole: the LM
  // head runs over chunks of `chunk_tokens` rows, in forward and again in backward.
  TokenLogProbs token_log_probs(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                const at::Tensor& position_ids, bool with_entropy = false,
                                bool gradient_checkpointing = false, int64_t chunk_tokens = 1024,
                                const at::Tensor& needed = {}) const;
  // `needed` [B, T-1] (optional): positions whose log-prob is used (the response mask). The LM
  // head runs on those rows only; the others are 0. RL losses need the response only.
  // Critic values [B, T] (fp32) from the value head.
  at::Tensor values(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& position_ids,
                    bool gradient_checkpointing = false) const;

  // Engine path: N tokens of any sequences at `positions` [N]; attention through `backend`.
  // Returns hidden states [N, hidden] after the final norm.
  at::Tensor forward_tokens(const at::Tensor& tokens, const at::Tensor& positions, AttentionBackend& backend) const;
  // LM head over hidden rows: [N, hidden] -> [N, vocab] fp32.
  at::Tensor lm_head(const at::Tensor& hidden) const;

  // Installs (or, with nullptr, removes) the layer hooks; the caller keeps them alive.
  void set_layer_hooks(LayerHooks* hooks) { hooks_ = hooks; }

  // Writes config.json and the weights (sharded above `max_shard_bytes`) into `dir`.
  void save(const std::string& dir, uint64_t max_shard_bytes = 2ull << 30) const;

  struct Layer;  // weights of one decoder layer (transformer.cpp)

 private:
  // A model of config's shapes whose weight matrices come from make(name, shape) (norms at 1,
  // biases at 0): random() draws them, load() leaves them to be filled from the files.
  using WeightMaker = std::function<at::Tensor(const std::string& name, std::vector<int64_t> shape)>;
  static std::shared_ptr<Transformer> with_weights(const ModelConfig& config, at::ScalarType dtype, bool value_head,
                                                   const WeightMaker& make);

  Transformer() = default;
  void bind_layers();
  at::Tensor run_layers(at::Tensor x, const at::Tensor& mask, const at::Tensor& cos, const at::Tensor& sin,
                        bool gradient_checkpointing) const;
  // The tensor a forward uses for a module outside the layers: the saved copy while the adapters
  // are on, else the base's.
  const at::Tensor& live(const at::Tensor& base, const at::Tensor& saved) const {
    return saved.defined() && adapters_enabled_ ? saved : base;
  }
  at::Tensor embed_rows(const at::Tensor& ids) const;
  at::Tensor final_norm(const at::Tensor& x) const;

  ModelConfig config_;
  at::ScalarType dtype_;
  bool value_head_ = false;
  NamedTensors params_;
  std::optional<LoraConfig> lora_;
  NamedTensors adapters_;  // model order, lora_A then lora_B of each adapted module
  NamedTensors saved_;     // copies of the modules_to_save parameters, in the adapters' dtype
  NamedTensors trainable_;  // adapters_ then saved_
  bool adapters_enabled_ = true;
  std::string base_model_dir_;
  std::shared_ptr<std::vector<Layer>> layers_;
  at::Tensor embed_, norm_, head_, score_w_, score_b_;
  at::Tensor saved_embed_, saved_norm_, saved_head_, saved_score_w_, saved_score_b_;
  LayerHooks* hooks_ = nullptr;
};

}  // namespace roll::model
