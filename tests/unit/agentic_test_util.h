#pragma once
// Test doubles for env managers: an LLM that answers each turn with the next scripted text, and an
// episode source that has no episodes (tests call play_episode directly).
#include <future>
#include <string>
#include <vector>

#include "roll/agentic/llm_client.h"
#include "roll/model/tokenizer.h"

namespace roll::testing {

class ScriptedLlm : public agentic::LlmClient {
 public:
  ScriptedLlm(const model::Tokenizer& tok, std::vector<std::string> replies) : tok_(tok), replies_(std::move(replies)) {}
  // Log-prob of output token i: -0.5 - 0.01 i.
  std::future<agentic::GenerateResult> generate(agentic::GenerateRequest request) override {
    requests.push_back(request);
    agentic::GenerateResult r;
    r.output_token_ids = tok_.encode(replies_.at(next_++ % replies_.size()), false);
    for (size_t i = 0; i < r.output_token_ids.size(); ++i) r.output_logprobs.push_back(-0.5f - 0.01f * i);
    r.finish_reason = finish_reasons.empty() ? finish_reason : finish_reasons[(next_ - 1) % finish_reasons.size()];
    std::promise<agentic::GenerateResult> p;
    p.set_value(r);
    return p.get_future();
  }
  void abort(const std::string&) override {}
  std::vector<agentic::GenerateRequest> requests;
  std::string finish_reason = "stop";
  std::vector<std::string> finish_reasons;  // per request, cycling like the replies (overrides finish_reason)

 private:
  const model::Tokenizer& tok_;
  std::vector<std::string> replies_;
  size_t next_ = 0;
};

class NoEpisodes : public agentic::EpisodeSource {
 public:
  std::optional<agentic::GroupQueueManager::Episode> get_episode(int64_t, int64_t) override { return std::nullopt; }
  void put(agentic::Rollout) override {}
  void env_exit(int64_t, int64_t) override {}
};

// "<answer>Left</answer>" ... for FrozenLake action ids.
inline std::string frozen_lake_answer(int action) {
  static const char* names[] = {"Left", "Down", "Right", "Up"};
  return std::string("<answer>") + names[action] + "</answer>";
}

}  // namespace roll::testing
