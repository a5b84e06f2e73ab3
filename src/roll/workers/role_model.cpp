#include "roll/workers/role_model.h"

#include <fmt/format.h>

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
  try {
    return model::Transformer::load(model_dir, dtype, value_head, seed);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: cannot load the model from '{}': {}", role, model_dir, e.what()));
  }
}

}  // namespace roll::workers
