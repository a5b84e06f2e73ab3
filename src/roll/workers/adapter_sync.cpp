#include "roll/workers/adapter_sync.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <map>

#include "roll/core/error.h"

namespace roll::workers {


AdapterSync::AdapterSync(model::LoraConfig config, model::Transformer& m) : config_(std::move(config)) {
  at::NoGradGuard no_grad;
  for (const std::string& module : config_.modules_to_save) {
    if (module == "model.embed_tokens" || module == "lm_head") m.untie_word_embeddings();
    for (const std::string& name : roll::config::saved_module_parameters(module)) saved_.push_back(name);
  }
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
  std::vector<model::LoraMergeItem> items;
  for (const auto& [weight, base] : base_) {
    const std::string module = weight.substr(0, weight.size() - std::string(".weight").size());
    items.push_back({need(own, weight, "the engine"), base, need(in, model::lora_a_name(module), "the update"),
                     need(in, model::lora_b_name(module), "the update"), module});
  }
  if (in.size() != 2 * base_.size() + saved_.size())
    throw Error(fmt::format("LoRA weight sync: {} tensors for {} adapted modules and {} saved parameters (targets or "
                            "additional_target differ?)",
                            in.size(), base_.size(), saved_.size()));
  model::lora_merge_all_into(items, config_.scale());
  for (const std::string& name : saved_) {
    at::Tensor dst = need(own, name, "the engine");
    dst.copy_(need(in, name, "the update"));
  }
}

}  // namespace roll::workers
