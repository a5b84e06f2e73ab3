#include "roll/agentic/traj_env_manager.h"

#include <fmt/format.h>

#include "roll/core/batch.h"
#include "roll/core/error.h"
#include "roll/model/chat_template.h"
#include "roll/model/tokenizer.h"

namespace roll::agentic {

TrajEnvManager::TrajEnvManager(EnvManagerOptions options, const model::Tokenizer& tokenizer,
                               const model::ChatTemplate& chat_template, LlmClient& llm, EpisodeSource& episodes)
    : EnvManager(std::move(options), tokenizer, chat_template, llm, episodes) {
  // The conversation-end token: the last special token the template renders for an empty user turn.
  const std::string text = model::apply_with_mock_system(
      tmpl_, nlohmann::ordered_json::array({{{"role", "user"}, {"content", ""}}}), false, o_.skip_mock_system_prompt,
      nlohmann::ordered_json::object());
  const auto ids = tok_.encode(text, false);
  for (auto it = ids.rbegin(); it != ids.rend(); ++it)
    if (tok_.is_special(*it)) {
      end_of_turn_ = {*it};
      break;
    }
}

std::optional<Rollout> TrajEnvManager::play(int64_t episode_id, int64_t start_step) {
  const auto& s = o_.spec;
  const EnvReset reset = reset_env(episode_id);
  std::string observation = reset.observation;
  std::vector<Turn> turns;
  std::vector<int32_t> input;  // every past turn's prompt + response
  bool terminated = false;
  for (int64_t step = 0; step < s.max_steps && !terminated; ++step) {
    const nlohmann::ordered_json messages = traj_turn_messages(s, step, observation, reset.info);
    Turn turn;
    turn.observation = observation;
    if (step > 0) turn.prompt_ids = end_of_turn_;
    auto ids = encode_prompt(messages);
    turn.prompt_ids.insert(turn.prompt_ids.end(), ids.begin(), ids.end());
    if (static_cast<int64_t>(input.size() + turn.prompt_ids.size()) >= o_.sequence_length) {  // MAX_LENGTH
      if (turns.empty())
        throw Error(fmt::format("env {} ({}): the first prompt has {} tokens, which does not fit sequence_length {}",
                                o_.env_id, s.tag, turn.prompt_ids.size(), o_.sequence_length));
      break;
    }
    input.insert(input.end(), turn.prompt_ids.begin(), turn.prompt_ids.end());
    if (!generate(input, episode_id, turn)) return std::nullopt;  // aborted: retried after resume
    // A response that ends with the conversation-end token must not get a second one.
    if (!end_of_turn_.empty() && !turn.response_ids.empty() && turn.response_ids.back() == end_of_turn_.back()) {
      turn.response_ids.pop_back();
      if (!turn.response_logprobs.empty()) turn.response_logprobs.pop_back();
    }
    input.insert(input.end(), turn.response_ids.begin(), turn.response_ids.end());
    EnvStep st = act(turn);
    observation = st.observation;
    terminated = st.terminated;
    turns.push_back(std::move(turn));
  }
  if (turns.empty()) return std::nullopt;

  // One sample: prompt_1 + response_1 + prompt_2 + ... right-padded to sequence_length.
  double episode_score = 0;
  nlohmann::json step_scores = nlohmann::json::array();
  int64_t response_tokens = 0;
  for (const auto& t : turns) {
    episode_score += t.reward;
    step_scores.push_back(t.reward);
    response_tokens += static_cast<int64_t>(t.response_ids.size());
  }
  Batch b = token_sample(turns, episode_score);
  b.set_column("step_scores", {step_scores});
  b.set_column("episode_scores", {episode_score});
  nlohmann::json metrics = turn_metrics(turns);
  metrics["env/response_length"] = nlohmann::json::array({static_cast<double>(response_tokens)});
  b.meta["metrics"] = metrics;
  attach_render(b, episode_id, turns, observation);
  return make_rollout(std::move(b), episode_id, start_step);
}

}  // namespace roll::agentic
