#pragma once
// What every model-holding role does first: name itself, check its rank against its process
// group, pick the model dtype from model_args.dtype and load the HF directory.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "roll/config/schema.h"
#include "roll/model/transformer.h"

namespace roll::comm {
class ProcessGroup;
}

namespace roll::workers {

// worker.name, else `fallback` (ROLL names the clusters actor_train, critic, reference, ...).
std::string role_name(const config::WorkerConfig& worker, const std::string& fallback);

// `group` (the role's data-parallel group) must be rank `rank` of `world`; null only when world is 1.
void check_role_rank(const std::string& role, int rank, int world, const std::shared_ptr<comm::ProcessGroup>& group);

// fp32 -> kFloat, bf16 -> kBFloat16; fp16 is a ConfigError naming <role>.model_args.dtype.
at::ScalarType role_dtype(const config::WorkerConfig& worker, const std::string& role);

// Transformer::load with the role's dtype; `value_head` for the critic (a missing score head is
// initialised from `seed`, the same on every rank). Errors name the role and the directory.
// With model_args.lora_target the model gets fresh adapters (A drawn from `seed`), or keeps the
// ones of a PEFT directory when they are the same; without it, a PEFT directory's adapters are
// merged into the base.
std::shared_ptr<model::Transformer> load_role_model(const std::string& model_dir, const config::WorkerConfig& worker,
                                                    const std::string& role, bool value_head = false,
                                                    uint64_t seed = 0);

// The role's LoRA settings (model_args.lora_* and additional_target; a value-head model also
// trains its "score" head whole), or none without lora_target.
std::optional<model::LoraConfig> role_lora(const config::WorkerConfig& worker, const std::string& role,
                                           bool value_head = false);

}  // namespace roll::workers
