// Which envs a fleet has and where they run (docs/config.md): env ids, groups, tags, worker ranks, group
// seeds; and custom_envs entries read as EnvSpecs.
#include <gtest/gtest.h>

#include <set>

#include "roll/agentic/env_layout.h"
#include "roll/config/node.h"
#include "roll/core/error.h"

using namespace roll;
using namespace roll::agentic;

namespace {

config::EnvManagerConfig fleet() {
  config::EnvManagerConfig m;
  m.num_env_groups = 5;
  m.group_size = 2;
  m.group_size_redundancy = 1;  // 3 envs per group, 15 in all
  m.tags = {"FrozenLake", "SimpleSokoban"};
  m.num_groups_partition = {2, 3};
  m.max_env_num_per_worker = 4;  // 4 workers: 4 + 4 + 4 + 3 envs
  return m;
}

}  // namespace

TEST(AgenticEnvLayout, EnvIdsGroupsTagsAndRanksInRollsOrder) {
  const auto slots = env_slots(fleet(), 42, false);
  ASSERT_EQ(slots.size(), 15u);
  for (int64_t e = 0; e < 15; ++e) {
    EXPECT_EQ(slots[e].env_id, e);
    EXPECT_EQ(slots[e].group_id, e / 3);
    EXPECT_EQ(slots[e].rank, e / 4);
    EXPECT_EQ(slots[e].tag, e / 3 < 2 ? "FrozenLake" : "SimpleSokoban");
    EXPECT_EQ(slots[e].group_seed, slots[e / 3 * 3].group_seed);  // one seed per group
    EXPECT_LT(slots[e].group_seed, uint64_t{1} << 31);
  }
  std::set<uint64_t> seeds;
  for (const auto& s : slots) seeds.insert(s.group_seed);
  EXPECT_EQ(seeds.size(), 5u);
  // Every process computes the same seeds from the config; the val fleet and other seeds differ.
  EXPECT_EQ(env_slots(fleet(), 42, false)[7].group_seed, slots[7].group_seed);
  EXPECT_NE(env_slots(fleet(), 42, true)[7].group_seed, slots[7].group_seed);
  EXPECT_NE(env_slots(fleet(), 43, false)[7].group_seed, slots[7].group_seed);
  const auto last = env_slots_of_rank(fleet(), 42, false, 3);
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last.front().env_id, 12);
  EXPECT_TRUE(env_slots_of_rank(fleet(), 42, false, 4).empty());

  auto bad = fleet();
  bad.num_groups_partition = {2, 2};
  EXPECT_THROW(env_slots(bad, 42, false), ConfigError);
}

TEST(AgenticEnvLayout, CustomEnvEntriesBecomeEnvSpecs) {
  config::PipelineConfig c;
  auto envs = config::parse_yaml_text(R"(
FrozenLake:
  env_type: frozen_lake
  max_steps: 7
  max_tokens_per_step: 32
  env_manager_cls: roll.pipeline.agentic.env_manager.step_env_manager.StepEnvManager
  history_length: 5
  agent_runner_cls: null
  agent_system_template: sys
  agent_template: "Turn {turn_idx}: {observation}"
  env_config: {is_slippery: false, format_penalty: -0.01, size: 4, action_pattern: '<answer>(.*?)</answer>'}
NoTemplate:
  env_type: frozen_lake
Web:
  env_type: webshop
  agent_template: x
  env_manager_cls: roll.pipeline.agentic.env_manager.agent_native_env_manager.AgentNativeEnvManager
BadSteps:
  env_type: frozen_lake
  agent_template: x
  max_steps: ten
Runner:
  env_type: frozen_lake
  agent_template: x
  agent_runner_cls: roll.pipeline.agentic.agent_runner.SomeRunner
)",
                                      {});
  for (const auto& [k, v] : envs->entries()) c.custom_envs.emplace_back(k, v);
  EnvSpec s = env_spec_of(c, "FrozenLake");
  EXPECT_EQ(s.tag, "FrozenLake");
  EXPECT_EQ(s.env_type, "frozen_lake");
  EXPECT_EQ(s.max_steps, 7);
  EXPECT_EQ(s.max_tokens_per_step, 32);
  EXPECT_EQ(s.history_length, 5);
  EXPECT_EQ(s.agent_system_template, "sys");
  EXPECT_EQ(s.agent_template, "Turn {turn_idx}: {observation}");
  EXPECT_TRUE(is_step_env_manager(s));
  // env_config keeps its YAML types: what the env's own parser expects.
  EXPECT_EQ(s.env_config["is_slippery"], false);
  EXPECT_DOUBLE_EQ(s.env_config["format_penalty"].get<double>(), -0.01);
  EXPECT_EQ(s.env_config["size"], 4);
  EXPECT_EQ(s.env_config["action_pattern"], "<answer>(.*?)</answer>");
  auto key_of = [&](const std::string& tag) {
    try {
      env_spec_of(c, tag);
    } catch (const ConfigError& e) {
      return e.key();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(key_of("NoTemplate"), "custom_envs.NoTemplate.agent_template");
  EXPECT_EQ(key_of("BadSteps"), "custom_envs.BadSteps.max_steps");
  EXPECT_EQ(key_of("Missing"), "custom_envs.Missing");
  EXPECT_THROW(is_step_env_manager(env_spec_of(c, "Web")), NotSupportedError);
  EXPECT_THROW(env_spec_of(c, "Runner"), NotSupportedError);
  EnvSpec traj = env_spec_of(c, "FrozenLake");
  traj.env_manager_cls = "roll.pipeline.agentic.env_manager.traj_env_manager.TrajEnvManager";
  EXPECT_FALSE(is_step_env_manager(traj));
}
