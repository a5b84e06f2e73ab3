#include "roll/agentic/env_layout.h"

#include <fmt/format.h>

#include "roll/core/rng.h"
#include "roll/config/node_json.h"
#include "roll/core/error.h"

namespace roll::agentic {

std::vector<EnvSlot> env_slots(const config::EnvManagerConfig& m, int64_t config_seed, bool val) {
  const int64_t final_group_size = m.group_size + m.group_size_redundancy;
  const int64_t per_worker = m.max_env_num_per_worker > 0 ? m.max_env_num_per_worker
                                                          : m.num_env_groups * final_group_size;
  if (m.tags.size() != m.num_groups_partition.size())
    throw ConfigError("num_groups_partition", fmt::format("{} group counts for {} tags", m.num_groups_partition.size(),
                                                          m.tags.size()));
  std::vector<std::string> group_tags;
  for (size_t t = 0; t < m.tags.size(); ++t)
    for (int64_t k = 0; k < m.num_groups_partition[t]; ++k) group_tags.push_back(m.tags[t]);
  if (static_cast<int64_t>(group_tags.size()) != m.num_env_groups)
    throw ConfigError("num_groups_partition", fmt::format("sums to {} but num_env_groups is {}", group_tags.size(),
                                                          m.num_env_groups));
  // One stream per fleet, drawn in group order (ROLL: random.randint(0, 2**31 - 1) per group).
  SeededRng rng(static_cast<uint64_t>(config_seed) * 2 + (val ? 1 : 0));
  std::vector<uint64_t> group_seeds;
  for (int64_t g = 0; g < m.num_env_groups; ++g) group_seeds.push_back(rng.below(uint64_t{1} << 31));
  std::vector<EnvSlot> out;
  for (int64_t e = 0; e < m.num_env_groups * final_group_size; ++e) {
    EnvSlot s;
    s.env_id = e;
    s.group_id = e / final_group_size;
    s.tag = group_tags[s.group_id];
    s.group_seed = group_seeds[s.group_id];
    s.rank = static_cast<int>(e / per_worker);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<EnvSlot> env_slots_of_rank(const config::EnvManagerConfig& fleet, int64_t config_seed, bool val, int rank) {
  std::vector<EnvSlot> out;
  for (auto& s : env_slots(fleet, config_seed, val))
    if (s.rank == rank) out.push_back(std::move(s));
  return out;
}

EnvSpec env_spec_of(const config::PipelineConfig& c, const std::string& tag) {
  config::NodePtr node;
  for (const auto& [t, n] : c.custom_envs)
    if (t == tag) node = n;
  const std::string key = "custom_envs." + tag;
  if (!node) throw ConfigError(key, fmt::format("env tag '{}' has no {} entry", tag, key));
  const nlohmann::ordered_json j = config::to_json(node);
  if (!j.is_object()) throw ConfigError(key, fmt::format("{} must be a mapping", key));
  EnvSpec s;
  s.tag = tag;
  auto read_int = [&](const char* name, int64_t& out) {
    if (!j.contains(name) || j[name].is_null()) return;
    if (!j[name].is_number_integer())
      throw ConfigError(key + "." + name, fmt::format("{}.{} must be an integer, got {}", key, name, j[name].dump()));
    out = j[name].get<int64_t>();
  };
  auto read_str = [&](const char* name, std::string& out) {
    if (!j.contains(name) || j[name].is_null()) return;
    out = j[name].is_string() ? j[name].get<std::string>() : j[name].dump();
  };
  read_str("env_type", s.env_type);
  if (s.env_type.empty()) throw ConfigError(key + ".env_type", fmt::format("{}.env_type is not set", key));
  s.env_config = j.value("env_config", nlohmann::ordered_json::object());
  if (s.env_config.is_null()) s.env_config = nlohmann::ordered_json::object();
  read_int("max_steps", s.max_steps);
  read_int("max_tokens_per_step", s.max_tokens_per_step);
  read_int("history_length", s.history_length);
  read_str("agent_system_template", s.agent_system_template);
  read_str("agent_template", s.agent_template);
  read_str("env_manager_cls", s.env_manager_cls);
  // Agent runners and tool wrappers drive other env managers (agent_native, tool-call envs).
  for (const char* k : {"agent_runner_cls", "tool_wrapper"})
    if (j.contains(k) && !j[k].is_null())
      throw NotSupportedError(fmt::format("{}.{} ({})", key, k, j[k].dump()));
  if (s.agent_template.empty())
    throw ConfigError(key + ".agent_template", fmt::format("{}.agent_template is not set", key));
  if (s.max_steps <= 0 || s.max_tokens_per_step <= 0)
    throw ConfigError(key, fmt::format("{}: max_steps ({}) and max_tokens_per_step ({}) must be positive", key,
                                       s.max_steps, s.max_tokens_per_step));
  return s;
}

bool is_step_env_manager(const EnvSpec& spec) {
  if (spec.env_manager_cls.ends_with("StepEnvManager")) return true;
  if (spec.env_manager_cls.ends_with("TrajEnvManager")) return false;
  throw NotSupportedError(fmt::format("custom_envs.{}.env_manager_cls '{}' (supported: TrajEnvManager, StepEnvManager)",
                                      spec.tag, spec.env_manager_cls));
}

}  // namespace roll::agentic
