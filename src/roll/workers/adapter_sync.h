#pragma once
// The infer side of LoRA weight sync (docs/lora.md): the trainer sends the adapters only, and
// the modules it trains whole (modules_to_save); the engine's weights of each adapted module
// become base + (alpha / r) B A, from a copy of the base this object keeps, and the saved modules
// are copied in. The engine's products stay those of a plain model.
#include <memory>
#include <string>
#include <vector>

#include "roll/model/lora.h"
#include "roll/model/transformer.h"

namespace roll::workers {

class AdapterSync {
 public:
  // Copies the base weight of every module `config` adapts in `model` (before the engine folds in
  // any adapters the model directory brought). A saved embedding or LM head of a model that ties
  // them gets its own LM head first (Transformer::untie_word_embeddings), as PEFT's copy does.
  AdapterSync(model::LoraConfig config, model::Transformer& model);

  // Writes base + scale * B A of every adapted module into the engine's own tensor of that name
  // (`engine`: the engine's weights, as update_weights_in_place hands them). `adapters` must hold
  // lora_A and lora_B of every adapted module and the saved modules' parameters. One pass over each base and engine tensor, all
  // modules in one parallel region (model/lora_merge_kernel.h), no fresh pages.
  void write_into(const model::NamedTensors& adapters, const model::NamedTensors& engine);

  const model::LoraConfig& config() const { return config_; }

 private:
  model::LoraConfig config_;
  model::NamedTensors base_;  // "<module>.weight" -> a copy of the base, in the model's dtype
  std::vector<std::string> saved_;  // the saved modules' parameter names
};

}  // namespace roll::workers
