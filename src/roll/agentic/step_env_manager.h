#pragma once
// ROLL's StepEnvManager (docs/agentic.md; GiGPO-style): every turn is its own training sample. The
// prompt of a turn is rendered fresh from agent_template with the env instruction, the recent
// turns as text ("(step: k, observation: ..., action: ..., reward: ...)") and the current
// observation; each sample carries the turn's reward as its score, the turn index (`step`) and a
// hash of the state the turn acted on (`state_hash`, GiGPO's step groups).
#include "roll/agentic/env_manager.h"

namespace roll::agentic {

class StepEnvManager : public EnvManager {
 public:
  using EnvManager::EnvManager;

 protected:
  std::optional<Rollout> play(int64_t episode_id, int64_t start_step) override;
};

// A stable hex digest of a state description (the same on every process and build).
std::string state_hash(const std::string& state_key);

}  // namespace roll::agentic
