#pragma once
// One domain's rollout of one RLVR step at generate_opt_level 1 (docs/pipelines.md): prompts start one by
// one as the PromptBudget allows; each prompt's n samples are generated, scored, passed through
// the query filter and committed, or dropped so that a replacement prompt takes the slot (dynamic
// sampling). Once batch_size prompts are committed, the prompts still generating are aborted and
// everything in flight is drained before returning, so no answer outlives the call.
// The workers are behind StreamingOps (the pipeline binds them to the router and the reward
// ranks); the control flow runs on the calling thread and needs no workers to be tested.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "roll/core/batch.h"
#include "roll/core/generation.h"
#include "roll/rl/query_filter.h"

namespace roll::pipeline {

struct StreamingOps {
  // Answers may come on any thread: the generated output or the scored batch, or nullopt and an error.
  using Generated = std::function<void(std::optional<RequestOutput> output, const std::string& error)>;
  using Done = std::function<void(std::optional<Batch> result, const std::string& error)>;
  // The next prompt of the domain (one collated row); `id` counts the step's prompts from 0.
  std::function<Batch(int64_t id)> draw;
  // Generates prompt `id`'s samples; the answer is handed to `score` as it is.
  std::function<void(int64_t id, const Batch& prompt, Generated done)> generate;
  // Asks for prompt `id`'s generation to stop; its `done` still runs (with whatever it has).
  std::function<void(int64_t id)> abort;
  // Scores what `generate` answered: prompt `id`'s rollout rows (docs/pipelines.md) with tensor `scores` [n]
  // and, optionally, meta "reward_metrics". Called on the scheduler's thread.
  std::function<void(int64_t id, RequestOutput output, Done done)> score;
  // Why a worker the rollout depends on is gone, checked while waiting (may be empty).
  std::function<std::optional<std::string>()> failure;
};

struct StreamingOptions {
  std::string domain;  // for errors and logs
  int64_t batch_size = 0;
  bool use_additional_prompts = false;
  int64_t max_additional_running_prompts = 16;
  rl::QueryFilterParams filter;
  std::string filter_key;  // the config key of the filter, named when the batch cannot fill
  // Prompts the step may draw; when they are used up before batch_size prompts pass the filter,
  // the step fails (ROLL loops forever).
  int64_t max_prompts = 0;
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};  // the longest wait for any answer
};

struct StreamingResult {
  std::vector<int64_t> ids;           // committed prompts, by id (draw order)
  std::vector<Batch> samples;         // their scored rows, same order
  std::vector<nlohmann::json> reward_metrics;  // meta "reward_metrics" of every scored prompt
  int64_t drawn = 0;                  // prompts started
  int64_t filtered = 0;               // dropped by the query filter
  int64_t aborted = 0;                // still running when the batch was full
};

StreamingResult run_streaming_rollout(const StreamingOptions& options, const StreamingOps& ops);

}  // namespace roll::pipeline
