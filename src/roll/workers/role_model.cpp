#include "roll/workers/role_model.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"

namespace roll::workers {

std::string role_name(const config::WorkerConfig& worker, const std::string& fallback) {
  return worker.name.value_or(fallback);
}

void check_role_rank(const std::string& role, int rank, int world, const std::shared_ptr<comm::ProcessGroup>& group) {
  if (world < 1 || rank < 0 || rank >= world)
    throw Error(fmt::format("{}: rank {} of world size {} is not a valid rank", role, rank, world));
  if (group ? (group->rank() != rank || group->size() != world) : world != 1)
    throw Error(fmt::format("{}: rank {} of {} does not match the process group ({})", role, rank, world,
                            group ? fmt::format("rank {} of {}", group->rank(), group->size()) : "none"));
}

at::ScalarType role_dtype(const config::WorkerConfig& worker, const std::string& role) {
  const std::string& d = worker.model_args.dtype;
  if (d == "fp32") return at::kFloat;
  if (d == "bf16") return at::kBFloat16;
  throw ConfigError(role + ".model_args.dtype",
                    fmt::format("{}.model_args.dtype '{}': rollcpp runs models in fp32 or bf16 (fp16 training needs "
                                "dynamic loss scaling, which is not implemented)",
                                role, d));
}

std::shared_ptr<model::Transformer> load_role_model(const std::string& model_dir, const config::WorkerConfig& worker,
                                                    const std::string& role, bool value_head, uint64_t seed) {
  const at::ScalarType dtype = role_dtype(worker, role);
  std::shared_ptr<model::Transformer> m;
  try {
    m = model::Transformer::load(model_dir, dtype, value_head, seed);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: cannot load the model from '{}': {}", role, model_dir, e.what()));
  }
  if (worker.model_args.adapter_name_or_path) {
    const std::string& dir = *worker.model_args.adapter_name_or_path;
    if (m->lora())
      throw ConfigError(role + ".model_args.adapter_name_or_path",
                        fmt::format("{}: '{}' is an adapter directory already; name its base model as "
                                    "model_name_or_path",
                                    role, model_dir));
    try {
      model::PeftAdapter adapter = model::load_peft_adapter(dir);
      adapter.config.fp32_adapters = worker.model_args.autocast_adapter_dtype;
      m->add_lora(adapter.config, seed);
      m->load_adapters(adapter.adapters);
    } catch (const Error& e) {
      throw Error(fmt::format("{}: cannot load the adapter from '{}' (model_args.adapter_name_or_path): {}", role, dir,
                              e.what()));
    }
  }
  if (const auto lora = role_lora(worker, role, value_head)) {
    if (!m->lora()) {
      m->add_lora(*lora, seed);
    } else if (model::lora_modules(*m->lora(), m->config().num_hidden_layers) !=
                   model::lora_modules(*lora, m->config().num_hidden_layers) ||
               m->lora()->rank != lora->rank || m->lora()->alpha != lora->alpha ||
               m->lora()->modules_to_save != lora->modules_to_save) {
      throw ConfigError(role + ".model_args.lora_target",
                        fmt::format("{}: '{}' holds LoRA adapters (rank {}, alpha {}, modules_to_save [{}]) other "
                                    "than the ones {}.model_args asks for (rank {}, alpha {}, additional_target [{}], "
                                    "or other modules)",
                                    role, model_dir, m->lora()->rank, m->lora()->alpha,
                                    fmt::join(m->lora()->modules_to_save, ","), role, lora->rank, lora->alpha,
                                    fmt::join(lora->modules_to_save, ",")));
    }
  } else if (m->lora() && !value_head) {
    // Adapters without lora_target: a model to run, not to train adapters on.
    m->merge_adapters();
  }
  return m;
}

std::optional<model::LoraConfig> role_lora(const config::WorkerConfig& worker, const std::string& role,
                                           bool value_head) {
  const config::ModelArguments& a = worker.model_args;
  if (!a.lora_target) return std::nullopt;
  model::LoraConfig c = model::lora_config_from_args(*a.lora_target, a.lora_rank, a.lora_alpha, a.lora_dropout,
                                                     role + ".model_args", a.additional_target, value_head);
  c.fp32_adapters = a.autocast_adapter_dtype;
  return c;
}

}  // namespace roll::workers
