#include "roll/workers/adapter_sync.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <map>

#include "roll/core/error.h"

namespace roll::workers {


AdapterSync::AdapterSync(model::LoraConfig config, const model::Transformer& m) : config_(std::move(config)) {
  at::NoGradGuard no_grad;
  for (const std::string& module : model::lora_modules(config_, m.config().num_hidden_layers))
    base_.emplace_back(module + ".weight", m.parameter(module + ".weight").clone());
}

void AdapterSync::write_into(const model::NamedTensors& adapters, const model::NamedTensors& engine) {
  at::NoGradGuard no_grad;
  const std::map<std::string, at::Tensor> in(adapters.begin(), adapters.end());
  const std::map<std::string, at::Tensor> own(engine.begin(), engine.end());
  auto need = [](const std::map<std::string, at::Tensor>& m, const std::string& name, const char* what) {
    auto it = m.find(name);
    if (it == m.end()) throw Error(fmt::format("LoRA weight sync: {} has no tensor '{}'", what, name));
    return it->second;
  };
  for (const auto& [weight, base] : base_) {
    const std::string module = weight.substr(0, weight.size() - std::string(".weight").size());
    const at::Tensor a = need(in, model::lora_a_name(module), "the update");
    const at::Tensor b = need(in, model::lora_b_name(module), "the update");
    if (a.dim() != 2 || b.dim() != 2 || a.size(1) != base.size(1) || b.size(0) != base.size(0) ||
        a.size(0) != b.size(1))
      throw Error(fmt::format("LoRA weight sync: adapter of '{}' (A {}, B {}) does not fit its weight {}", module,
                              c10::str(a.sizes()), c10::str(b.sizes()), c10::str(base.sizes())));
    // Straight into the engine's tensor, one GEMM that adds into the base: in fp32 for an fp32
    // engine; for a bf16 one with A and B rounded to bf16 too (products accumulated in fp32, the
    // sum rounded once), an error far below the rounding of the weight itself.
    at::Tensor dst = need(own, weight, "the engine");
    if (dst.scalar_type() != base.scalar_type() || !dst.sizes().equals(base.sizes()))
      throw Error(fmt::format("LoRA weight sync: the engine's '{}' is {} {}, its base {} {}", weight,
                              c10::toString(dst.scalar_type()), c10::str(dst.sizes()),
                              c10::toString(base.scalar_type()), c10::str(base.sizes())));
    at::addmm_out(dst, base, b.to(dst.scalar_type()), a.to(dst.scalar_type()), 1.0, config_.scale());
  }
  if (in.size() != 2 * base_.size())
    throw Error(fmt::format("LoRA weight sync: {} adapter tensors for {} adapted modules (targets differ?)", in.size(),
                            base_.size()));
}

}  // namespace roll::workers
