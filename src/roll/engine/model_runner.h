#pragma once
// The engine's forward pass over the Transformer's own weight tensors (shared, so in-place
// weight updates are seen at once). It computes what Transformer::forward_tokens does, with
// fp32 activations and the engine's matrix products (linear.h): decode is weight-bandwidth
// bound, and bf16 weights are widened on the fly instead of going through ATen's slow CPU bf16
// GEMM. The LM head runs only over the rows that are sampled.
#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "roll/engine/step_phases.h"
#include "roll/model/transformer.h"

namespace roll::engine {

class ModelRunner {
 public:
  explicit ModelRunner(std::shared_ptr<const model::Transformer> model);

  // tokens, positions [N] int64; attention through `attn`; logits [rows, vocab] fp32 of the
  // hidden states at `sample_rows` (indices into the N tokens). With `phases`, the wall time of
  // each phase of the forward is added to it.
  at::Tensor forward(const at::Tensor& tokens, const at::Tensor& positions, model::AttentionBackend& attn,
                     const at::Tensor& sample_rows, StepPhaseSeconds* phases = nullptr) const;

  const model::ModelConfig& config() const { return model_->config(); }
  const model::Transformer& model() const { return *model_; }

 private:
  struct LayerWeights {
    at::Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, q_norm, k_norm, in_norm, post_norm, gate_w, up_w, down_w;
  };
  std::shared_ptr<const model::Transformer> model_;
  std::vector<LayerWeights> layers_;
  at::Tensor embed_, norm_, head_, inv_freq_;
};

}  // namespace roll::engine
