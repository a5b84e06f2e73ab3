#pragma once
// What ROLL's env managers share (docs/agentic.md): one env plays the episodes an EpisodeSource hands
// out, one generate request per turn through an LlmClient, and the finished episode goes back as a
// rollout. TrajEnvManager (one sample per trajectory) and StepEnvManager (one sample per turn)
// differ only in how a turn's prompt is built and how the turns become samples.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roll/agentic/env.h"
#include "roll/agentic/llm_client.h"

namespace roll::model {
class Tokenizer;
class ChatTemplate;
}  // namespace roll::model

namespace roll::agentic {

// One custom_envs entry as an env manager uses it (docs/config.md).
struct EnvSpec {
  std::string tag;
  std::string env_type;
  nlohmann::ordered_json env_config;
  int64_t max_steps = 10;            // turn limit
  int64_t max_tokens_per_step = 128;
  std::string agent_system_template;
  std::string agent_template;
  std::string env_manager_cls = "roll.pipeline.agentic.env_manager.traj_env_manager.TrajEnvManager";
  int64_t history_length = 0;        // StepEnvManager: turns shown in the prompt (0: none)
};

struct EnvManagerOptions {
  EnvSpec spec;
  int64_t group_id = 0;
  int64_t env_id = 0;
  uint64_t group_seed = 0;  // run seed + the group's config-time seed
  int64_t sequence_length = 1024;
  SamplingParams generation;  // generating_args; max_new_tokens is capped per turn
  bool skip_mock_system_prompt = false;
  std::string mode = "train";  // train | val: keeps request ids of both fleets apart in one router
  bool render = false;  // rollouts carry the episode as text in meta.render (val with render_save_dir)
  // Asynchronous training (async_generation_ratio > 0): a turn cut off by the abort before a model
  // update continues after resume from its partial output (partial rollout); otherwise the episode
  // is played again.
  bool partial_rollout = false;
};

// Fills ROLL's agent_template placeholders that appear in `tmpl` ({observation}, {turn_idx}, ...).
std::string format_agent_template(const std::string& tmpl, const nlohmann::json& fields);

// The new messages of TrajEnvManager's turn `step` (0-based) seeing `observation`: on the first
// turn the system message and the user message (the env instruction, a newline, the filled
// agent_template); later turns the user message only. The expert SFT data renders the same.
nlohmann::ordered_json traj_turn_messages(const EnvSpec& spec, int64_t step, const std::string& observation,
                                          const nlohmann::json& reset_info);

// One played turn.
struct Turn {
  std::vector<int32_t> prompt_ids, response_ids;
  std::vector<float> response_logprobs;
  double reward = 0.0;
  nlohmann::json info;      // the env's step info (metrics, action_content, ...)
  std::string observation;  // what the turn saw
  std::string response_text;
};

// The messages of StepEnvManager's turn `step` (0-based) seeing `observation` after the `earlier`
// turns of the episode: the system message (when agent_system_template is set) and one user
// message, agent_template filled with the env instruction, the recent turns and the current
// observation. The expert SFT data renders the same.
nlohmann::ordered_json step_turn_messages(const EnvSpec& spec, int64_t step, const std::string& observation,
                                          const std::string& instruction, std::span<const Turn> earlier);

class EnvManager {
 public:
  EnvManager(EnvManagerOptions options, const model::Tokenizer& tokenizer, const model::ChatTemplate& chat_template,
             LlmClient& llm, EpisodeSource& episodes);
  virtual ~EnvManager();

  // Plays episodes until the source has none for this env, or stop(); then signals env_exit.
  void run();
  // From any thread: ends run() after the current turn; a request in flight is aborted.
  void stop();

  // Plays one episode with `episode_id` created at `start_step`, handed out as `slot`, and returns
  // it as a rollout (nullopt when generation was aborted: the episode is to be retried after
  // resume). Turn k samples with the seed of (group seed, mode, episode, slot, k): the same
  // episode and slot give the same rollout whichever env plays it and whenever.
  std::optional<Rollout> play_episode(int64_t episode_id, int64_t start_step, int64_t slot = 0);

  const EnvManagerOptions& options() const { return o_; }
  int64_t rollouts_done() const { return rollouts_done_; }

 protected:
  // The episode itself (after reset of the per-episode seed state).
  virtual std::optional<Rollout> play(int64_t episode_id, int64_t start_step) = 0;

  // Resets the env for an episode: seed = group_seed + episode_id, so every env of a group plays
  // the same episode (identical initial states).
  EnvReset reset_env(int64_t episode_id);
  // The prompt text of `messages` with a generation prompt, as token ids.
  std::vector<int32_t> encode_prompt(const nlohmann::ordered_json& messages) const;
  // Generates the response to `input_ids` into `turn` (max_new_tokens = min(max_tokens_per_step,
  // generating max_new_tokens, room left in sequence_length)). False when aborted.
  bool generate(const std::vector<int32_t>& input_ids, int64_t episode_id, Turn& turn);
  // Gives the turn's response to the env; records reward and info.
  EnvStep act(Turn& turn);

  // One right-padded sample of `turns` laid end to end: input_ids, attention_mask, position_ids,
  // response_mask, prompt_mask (up to the first response token), scores (`score` at the last real
  // token), infer_logprobs [1, S-1] (aligned to predicting token t+1).
  Batch token_sample(std::span<const Turn> turns, double score) const;
  // Per-turn env metrics aggregated by their metrics_agg_mode, plus num_actions, as env/<tag>/...
  nlohmann::json turn_metrics(std::span<const Turn> turns) const;
  // traj_group_id / traj_id (every row) and the rollout around `data`.
  Rollout make_rollout(Batch data, int64_t episode_id, int64_t start_step) const;
  // With options().render: the episode as text into meta["render"] of `data` (what each turn saw,
  // the response, the reward; then `last_observation`), ROLL's val frames in text form.
  void attach_render(Batch& data, int64_t episode_id, std::span<const Turn> turns,
                     const std::string& last_observation) const;

  EnvManagerOptions o_;
  const model::Tokenizer& tok_;
  const model::ChatTemplate& tmpl_;
  std::unique_ptr<Env> env_;

 private:
  LlmClient& llm_;
  EpisodeSource& episodes_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> rollouts_done_{0};
  std::mutex mu_;         // guards in_flight_ against stop()
  std::string in_flight_;  // rid of the request being generated
  int64_t request_counter_ = 0;
  int64_t slot_ = 0;  // of the episode being played
  int64_t turn_ = 0;  // generate calls of the episode so far
};

}  // namespace roll::agentic
