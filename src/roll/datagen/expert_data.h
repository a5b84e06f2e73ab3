#pragma once
// Expert conversations for the SFT warm start (docs/demo.md): episodes of a custom_envs
// entry played by the breadth-first-search expert (expert_policy.h) with a fixed fraction of
// uniformly random actions, rendered with the same messages the env's manager sends the policy,
// each assistant turn the action written into the env's action_pattern (expert_answer below:
// "<answer>ACTION</answer>" by default). TrajEnvManager (traj_turn_messages): one JSON row
// per episode,
//   {"messages": [...], "tag", "episode_seed", "success", "turns", "random_actions"};
// StepEnvManager (step_turn_messages, every turn its own sample): one row per turn, its prompt and
// answer, with the turn's "step" and "random_action" beside the episode's fields. `roll sft` reads
// either with data_args.messages: messages.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/agentic/env_manager.h"

namespace roll::agentic {

struct ExpertDataOptions {
  uint64_t seed = 0;
  int64_t n = 1000;     // episodes
  double noise = 0.0;   // probability that a turn takes a uniformly random action instead
};

// The answer that `action_pattern` parses as `action`: the pattern's last (.*?) / (.*) group
// replaced by the action, earlier groups (a think block) emptied, ^ $ and \s* dropped. ROLL's
// patterns give "<answer>Up</answer>", "Up" for all_response_pattern "^(.*)$", and
// "<think></think><answer>Up</answer>" for think_action_pattern. Throws roll::Error for a pattern
// without such a group; expert_conversations checks every answer against the env's own parser.
std::string expert_answer(const std::string& action_pattern, const std::string& action);

// Episode seeds are 2^40 + seed * 2^24 + i: apart from every env fleet's seeds (below 2^32 plus
// the episode count), so the pipelines' validation maps are not the expert's episodes. Throws
// roll::Error for an env type without an expert or a noise outside [0, 1].
std::vector<nlohmann::ordered_json> expert_conversations(const EnvSpec& spec, const ExpertDataOptions& options);

}  // namespace roll::agentic
