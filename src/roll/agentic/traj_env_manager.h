#pragma once
// ROLL's TrajEnvManager (docs/agentic.md): each whole multi-turn trajectory is one training sample.
// History stays as token ids (never re-tokenised); later turns are prefixed with the
// conversation-end token because generated responses stop before it.
#include "roll/agentic/env_manager.h"

namespace roll::agentic {

class TrajEnvManager : public EnvManager {
 public:
  TrajEnvManager(EnvManagerOptions options, const model::Tokenizer& tokenizer,
                 const model::ChatTemplate& chat_template, LlmClient& llm, EpisodeSource& episodes);


 protected:
  std::optional<Rollout> play(int64_t episode_id, int64_t start_step) override;

 private:
  std::vector<int32_t> end_of_turn_;  // the conversation-end token(s)
};

}  // namespace roll::agentic
