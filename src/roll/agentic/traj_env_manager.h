#pragma once
// ROLL's TrajEnvManager (spec 6.2): one env plays episodes; each whole multi-turn trajectory is one
// training sample. History stays as token ids (never re-tokenised); later turns are prefixed with
// the conversation-end token because generated responses stop before it.
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "roll/agentic/env.h"
#include "roll/agentic/llm_client.h"

namespace roll::model {
class Tokenizer;
class ChatTemplate;
}  // namespace roll::model

namespace roll::agentic {

// One custom_envs entry as an env manager uses it.
struct EnvSpec {
  std::string tag;
  std::string env_type;
  nlohmann::ordered_json env_config;
  int64_t max_steps = 10;            // turn limit
  int64_t max_tokens_per_step = 128;
  std::string agent_system_template;
  std::string agent_template;
};

struct TrajEnvManagerOptions {
  EnvSpec spec;
  int64_t group_id = 0;
  int64_t env_id = 0;
  uint64_t group_seed = 0;  // run seed + the group's config-time seed
  int64_t sequence_length = 1024;
  SamplingParams generation;  // generating_args; max_new_tokens is capped per turn
  bool skip_mock_system_prompt = false;
};

// Fills ROLL's agent_template placeholders that appear in `tmpl` ({observation}, {turn_idx}, ...).
std::string format_agent_template(const std::string& tmpl, const nlohmann::json& fields);

class TrajEnvManager {
 public:
  TrajEnvManager(TrajEnvManagerOptions options, const model::Tokenizer& tokenizer,
                 const model::ChatTemplate& chat_template, LlmClient& llm, EpisodeSource& episodes);
  ~TrajEnvManager();

  // Plays episodes until the source has none for this env, or stop(); then signals env_exit.
  void run();
  void stop() { stop_ = true; }

  // Plays one episode with `episode_id` created at `start_step` and returns it as a rollout
  // (nullopt when generation was aborted: the episode is to be retried after resume).
  std::optional<Rollout> play_episode(int64_t episode_id, int64_t start_step);

 private:
  TrajEnvManagerOptions o_;
  const model::Tokenizer& tok_;
  const model::ChatTemplate& tmpl_;
  LlmClient& llm_;
  EpisodeSource& episodes_;
  std::unique_ptr<Env> env_;
  std::vector<int32_t> end_of_turn_;  // the conversation-end token(s)
  std::atomic<bool> stop_{false};
  int64_t request_counter_ = 0;
};

}  // namespace roll::agentic
