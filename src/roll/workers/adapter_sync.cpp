#include "roll/workers/adapter_sync.h"

#include <ATen/ATen.h>

namespace roll::workers {

AdapterSync::AdapterSync(model::LoraConfig config, const model::Transformer& m) : config_(std::move(config)) {
  at::NoGradGuard no_grad;
  for (const std::string& module : model::lora_modules(config_, m.config().num_hidden_layers))
    base_.emplace_back(module + ".weight", m.parameter(module + ".weight").clone());
}

model::NamedTensors AdapterSync::merged(const model::NamedTensors& adapters) const {
  return model::merge_lora(base_, config_, adapters);
}

}  // namespace roll::workers
