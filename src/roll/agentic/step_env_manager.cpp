#include "roll/agentic/step_env_manager.h"

#include <fmt/format.h>

#include "roll/core/batch.h"
#include "roll/core/error.h"

namespace roll::agentic {
namespace {

// "(step: k, observation: ..., action: ..., reward: ...)" for the turns before `current`: ROLL
// shows the window history[-history_length:-1], i.e. up to history_length - 1 earlier turns. ROLL
// lists only invalid actions there (an indentation slip, docs/compat.md); every turn is listed here,
// invalid ones with ROLL's reminder to follow the format.
std::vector<std::string> recent_turns(std::span<const Turn> turns, int64_t history_length) {
  const int64_t window = std::min<int64_t>(static_cast<int64_t>(turns.size()), std::max<int64_t>(history_length - 1, 0));
  std::vector<std::string> out;
  for (int64_t i = static_cast<int64_t>(turns.size()) - window; i < static_cast<int64_t>(turns.size()); ++i) {
    const Turn& t = turns[i];
    std::string action = t.info.value("action_content", std::string());
    if (action.empty()) action = t.response_text;
    const bool valid = !t.info.contains("metrics") || t.info["metrics"].value("action_is_valid", true);
    if (!valid)
      action += "(IMPORTANT TIPS: this action is not valid, your new response *must* strictly adhere to the format "
                "according to env instructions.)";
    out.push_back(fmt::format("(step: {}, observation: {}, action: {}, reward: {})", i + 1, t.observation, action,
                              nlohmann::json(t.reward).dump()));
  }
  return out;
}

}  // namespace

std::string state_hash(const std::string& state_key) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bit
  for (unsigned char c : state_key) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

nlohmann::ordered_json step_turn_messages(const EnvSpec& spec, int64_t step, const std::string& observation,
                                          const std::string& instruction, std::span<const Turn> earlier) {
  const std::vector<std::string> history = recent_turns(earlier, spec.history_length);
  std::string joined;
  for (const auto& h : history) joined += (joined.empty() ? "" : ", ") + h;
  const nlohmann::json fields = {{"env_instruction", instruction},
                                 {"history", joined},
                                 {"step_count", step},
                                 {"history_length", history.size()},
                                 {"current_step", step + 1},
                                 {"current_observation", observation},
                                 {"max_response_length", spec.max_tokens_per_step}};
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!spec.agent_system_template.empty())
    messages.push_back({{"role", "system"}, {"content", spec.agent_system_template}});
  messages.push_back({{"role", "user"}, {"content", format_agent_template(spec.agent_template, fields)}});
  return messages;
}

std::optional<Rollout> StepEnvManager::play(int64_t episode_id, int64_t start_step) {
  const auto& s = o_.spec;
  const EnvReset reset = reset_env(episode_id);
  const std::string instruction = reset.info.value("env_instruction", "");
  std::string observation = reset.observation;
  std::vector<Turn> turns;
  std::vector<std::string> hashes;
  bool terminated = false;
  for (int64_t step = 0; step < s.max_steps && !terminated; ++step) {
    const nlohmann::ordered_json messages = step_turn_messages(s, step, observation, instruction, turns);
    Turn turn;
    turn.observation = observation;
    turn.prompt_ids = encode_prompt(messages);
    if (static_cast<int64_t>(turn.prompt_ids.size()) >= o_.sequence_length) {  // MAX_LENGTH
      if (turns.empty())
        throw Error(fmt::format("env {} ({}): the first prompt has {} tokens, which does not fit sequence_length {}",
                                o_.env_id, s.tag, turn.prompt_ids.size(), o_.sequence_length));
      break;
    }
    if (!generate(turn.prompt_ids, episode_id, turn)) return std::nullopt;  // aborted: retried after resume
    const std::string state = env_->state_key();  // the state this turn acts on
    EnvStep st = act(turn);
    observation = st.observation;
    terminated = st.terminated;
    hashes.push_back(state_hash(state));
    turns.push_back(std::move(turn));
  }
  if (turns.empty()) return std::nullopt;

  double episode_score = 0;
  for (const auto& t : turns) episode_score += t.reward;
  std::vector<Batch> rows;
  double response_tokens = 0;
  for (size_t i = 0; i < turns.size(); ++i) {
    Batch b = token_sample(std::span<const Turn>(&turns[i], 1), turns[i].reward);
    b.set_column("episode_scores", {episode_score});
    b.set_column("step_scores", {turns[i].reward});
    b.set_column("state_hash", {hashes[i]});
    b.set_column("step", {static_cast<int64_t>(i)});
    response_tokens += static_cast<double>(turns[i].response_ids.size());
    rows.push_back(std::move(b));
  }
  Batch all = Batch::concat(rows);
  nlohmann::json metrics = turn_metrics(turns);
  metrics["env/response_length"] = nlohmann::json::array({response_tokens / static_cast<double>(turns.size())});
  all.meta["metrics"] = metrics;
  attach_render(all, episode_id, turns, observation);
  return make_rollout(std::move(all), episode_id, start_step);
}

}  // namespace roll::agentic
