#include "roll/datagen/expert_data.h"

#include <fmt/format.h>

#include <algorithm>

#include "roll/agentic/env.h"
#include "roll/agentic/env_layout.h"
#include "roll/core/rng.h"
#include "roll/datagen/expert_policy.h"
#include "roll/core/error.h"

namespace roll::agentic {

std::string expert_answer(const std::string& action_pattern, const std::string& action) {
  std::string text = action_pattern;
  if (text.starts_with("^")) text.erase(0, 1);
  if (text.ends_with("$")) text.pop_back();
  for (size_t at; (at = text.find("\\s*")) != std::string::npos;) text.erase(at, 3);
  // The last capture group is the action; earlier ones (a think block) are written empty.
  const size_t lazy = text.rfind("(.*?)"), greedy = text.rfind("(.*)");
  const size_t last = lazy == std::string::npos ? greedy : greedy == std::string::npos ? lazy : std::max(lazy, greedy);
  if (last == std::string::npos)
    throw Error(fmt::format("expert data: action_pattern '{}' has no (.*?) or (.*) group to write the action into",
                            action_pattern));
  std::string out;
  for (size_t i = 0; i < last;) {
    if (text.compare(i, 5, "(.*?)") == 0) i += 5;
    else if (text.compare(i, 4, "(.*)") == 0) i += 4;
    else out += text[i++];
  }
  return out + action + text.substr(last + (last == lazy ? 5 : 4));
}

std::vector<nlohmann::ordered_json> expert_conversations(const EnvSpec& spec, const ExpertDataOptions& o) {
  if (!(o.noise >= 0.0 && o.noise <= 1.0)) throw Error(fmt::format("expert data: noise {} is not in [0, 1]", o.noise));
  auto env = make_env(spec.env_type, spec.env_config);
  const auto names = action_names(*env);
  if (names.empty()) throw Error(fmt::format("expert data: env_type '{}' ({}) has no expert policy", spec.env_type, spec.tag));
  SeededRng rng(o.seed * 0x9E3779B97F4A7C15ull + 17);
  std::vector<nlohmann::ordered_json> rows;
  rows.reserve(static_cast<size_t>(std::max<int64_t>(0, o.n)));
  const bool per_turn = is_step_env_manager(spec);
  const std::string action_pattern = env->action_pattern();
  for (int64_t i = 0; i < o.n; ++i) {
    const uint64_t episode_seed = (uint64_t{1} << 40) + (o.seed << 24) + static_cast<uint64_t>(i);
    const EnvReset reset = env->reset(episode_seed);
    const std::string instruction = reset.info.value("env_instruction", "");
    // Each turn's new messages (its answer last); StepEnvManager rows are these one by one, a
    // TrajEnvManager row is all of them in order.
    std::vector<nlohmann::ordered_json> turn_rows;
    std::vector<Turn> played;  // what StepEnvManager's history shows
    std::string observation = reset.observation;
    bool success = false;
    int64_t random_actions = 0;
    for (int64_t step = 0; step < spec.max_steps; ++step) {
      nlohmann::ordered_json prompt = per_turn ? step_turn_messages(spec, step, observation, instruction, played)
                                               : traj_turn_messages(spec, step, observation, reset.info);
      std::optional<std::string> action;
      if (rng.uniform() >= o.noise) action = expert_action(*env);
      const bool random_action = !action;
      if (!action) {  // noise, or a state the expert cannot solve
        action = names[rng.below(names.size())];
        ++random_actions;
      }
      const std::string response = expert_answer(action_pattern, *action);
      prompt.push_back({{"role", "assistant"}, {"content", response}});
      turn_rows.push_back({{"messages", std::move(prompt)}, {"step", step}, {"random_action", random_action}});
      EnvStep st = env->step(response);
      if (st.info.contains("metrics") && !st.info["metrics"].value("action_is_valid", true))
        throw Error(fmt::format("expert data ({}): the answer '{}' written for action_pattern '{}' does not parse as "
                                "the action '{}'",
                                spec.tag, response, action_pattern, *action));
      success = st.info.contains("metrics") && st.info["metrics"].value("success", false);
      if (per_turn) {
        Turn t;
        t.observation = std::move(observation);
        t.response_text = response;
        t.reward = st.reward;
        t.info = std::move(st.info);
        played.push_back(std::move(t));
      }
      observation = std::move(st.observation);
      if (st.terminated) break;
    }
    const nlohmann::ordered_json episode = {{"tag", spec.tag},
                                            {"episode_seed", episode_seed},
                                            {"success", success},
                                            {"turns", static_cast<int64_t>(turn_rows.size())},
                                            {"random_actions", random_actions}};
    if (per_turn) {
      for (auto& r : turn_rows) {
        r.update(episode);
        rows.push_back(std::move(r));
      }
      continue;
    }
    nlohmann::ordered_json row = {{"messages", nlohmann::ordered_json::array()}};
    for (auto& r : turn_rows)
      for (auto& m : r["messages"]) row["messages"].push_back(std::move(m));
    row.update(episode);
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace roll::agentic
