#pragma once
// The infer side of LoRA weight sync (docs/lora.md): the trainer sends the adapters only; the
// engine's weights of each adapted module become base + (alpha / r) B A, from a copy of the base
// this object keeps. The engine's products stay those of a plain model.
#include <memory>

#include "roll/model/lora.h"
#include "roll/model/transformer.h"

namespace roll::workers {

class AdapterSync {
 public:
  // Copies the base weight of every module `config` adapts in `model` (before the engine folds in
  // any adapters the model directory brought).
  AdapterSync(model::LoraConfig config, const model::Transformer& model);

  // The engine's new weights (base names, the base's dtype) for `adapters` (lora_A / lora_B).
  model::NamedTensors merged(const model::NamedTensors& adapters) const;

  const model::LoraConfig& config() const { return config_; }

 private:
  model::LoraConfig config_;
  model::NamedTensors base_;
};

}  // namespace roll::workers
