#pragma once
// What an env manager needs from the rest of the system (docs/design.md section 2): a way to generate
// (the infer service behind a router, implemented in workers/) and a source of episodes (the
// GroupQueueManager, in process or as a driver service).
#include <cstdint>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "roll/agentic/group_queue.h"
#include "roll/core/generation.h"

namespace roll::agentic {

struct GenerateRequest {
  std::string rid;
  std::vector<int32_t> input_ids;
  SamplingParams params;
  int64_t src_rank = 0;  // env id: the env-affinity router keeps an env on one infer rank
};

struct GenerateResult {
  std::vector<int32_t> output_token_ids;
  std::vector<float> output_logprobs;  // raw model log-prob of each output token
  std::string finish_reason;           // stop | length | abort
};

class LlmClient {
 public:
  virtual ~LlmClient() = default;
  virtual std::future<GenerateResult> generate(GenerateRequest request) = 0;
  virtual void abort(const std::string& rid) = 0;
};

class EpisodeSource {
 public:
  virtual ~EpisodeSource() = default;
  virtual std::optional<GroupQueueManager::Episode> get_episode(int64_t group_id, int64_t env_id) = 0;
  virtual void put(Rollout rollout) = 0;
  virtual void env_exit(int64_t group_id, int64_t env_id) = 0;
};

// The in-process EpisodeSource over a GroupQueueManager.
class LocalEpisodeSource : public EpisodeSource {
 public:
  explicit LocalEpisodeSource(GroupQueueManager& q) : q_(q) {}
  std::optional<GroupQueueManager::Episode> get_episode(int64_t group_id, int64_t env_id) override {
    return q_.get_episode(group_id, env_id);
  }
  void put(Rollout rollout) override { q_.put(std::move(rollout)); }
  void env_exit(int64_t group_id, int64_t env_id) override { q_.env_exit(group_id, env_id); }

 private:
  GroupQueueManager& q_;
};

}  // namespace roll::agentic
