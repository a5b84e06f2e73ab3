#pragma once
// Which envs a fleet (train_env / val_env) has and which worker hosts each (docs/config.md): env ids
// 0 .. num_env_groups x (group_size + group_size_redundancy) - 1 in order; group = id / that
// final group size; worker rank = id / max_env_num_per_worker; the tags cover the groups in
// num_groups_partition order; each group has a config-time seed. ROLL draws those seeds from an
// unseeded random.randint at config time; here they are drawn from the config's `seed`, so every
// process (driver and env workers) and every run of one config agrees on them.
#include <cstdint>
#include <string>
#include <vector>

#include "roll/agentic/env_manager.h"
#include "roll/config/schema.h"

namespace roll::agentic {

struct EnvSlot {
  int64_t env_id = 0;
  int64_t group_id = 0;
  std::string tag;
  uint64_t group_seed = 0;  // the group's config-time seed (the run seed is added at start)
  int rank = 0;             // the env worker that hosts it
};

// Every env of the fleet; `val` picks the val fleet's seed stream.
std::vector<EnvSlot> env_slots(const config::EnvManagerConfig& fleet, int64_t config_seed, bool val);
// The envs of one worker rank.
std::vector<EnvSlot> env_slots_of_rank(const config::EnvManagerConfig& fleet, int64_t config_seed, bool val, int rank);

// custom_envs.<tag> as an env manager reads it; errors name the key.
EnvSpec env_spec_of(const config::PipelineConfig& config, const std::string& tag);

// True for ROLL's StepEnvManager (env_manager_cls ending in StepEnvManager), false for
// TrajEnvManager; other classes are a NotSupportedError naming the tag.
bool is_step_env_manager(const EnvSpec& spec);

}  // namespace roll::agentic
