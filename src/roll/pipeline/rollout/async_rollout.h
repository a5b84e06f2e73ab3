#pragma once
// One RLVR domain's asynchronous generation (async_generation_ratio > 0, docs/pipelines.md
// "Asynchronous generation"): a scheduler thread keeps prompts generating and scoring while the
// driver trains, under a ReplayBuffer budget that lets it run ceil(B * ratio) prompts ahead.
//   get_batch(s)  step s begins (advance_step), generation resumes, and the call returns once B
//                 prompts (n samples each) from steps >= s - ceil(ratio) have passed the query
//                 filter; what is generated beyond them stays buffered for the next steps.
//   pause()       before a model update (and so before validation): new requests are held, groups
//                 too old for the next step are dropped (their prompts aborted), and every request
//                 still generating is aborted; its partial tokens are kept and the sample goes on
//                 after the next get_batch resumes generation, under the new weights (partial
//                 rollout, partial_rollout.h). Returns once nothing generates; scoring goes on.
// The workers are behind AsyncRolloutOps (the pipeline binds them to the router and the reward
// ranks), so the control flow is testable without workers. A failed generation or scoring, a
// worker gone (ops.failure) or no answer within the timeout fails the pending and every later call
// with an Error naming the domain, the prompt and the cause.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "roll/core/batch.h"
#include "roll/core/generation.h"
#include "roll/rl/query_filter.h"

namespace roll::pipeline {

struct AsyncRolloutOps {
  using Generated = std::function<void(std::optional<RequestOutput> output, const std::string& error)>;
  using Done = std::function<void(std::optional<Batch> result, const std::string& error)>;
  // The domain's next prompt (one collated row) for prompt id `id`; its generate request (n samples).
  std::function<Batch(int64_t id)> draw;
  std::function<GenerationRequest(int64_t id, const Batch& prompt)> request;
  // Sends a request; every request of one prompt shares `affinity` (the same infer rank). The
  // answer may come on any thread, also before generate returns.
  std::function<void(GenerationRequest request, const std::string& affinity, Generated done)> generate;
  std::function<void(const std::string& request_id)> abort;
  std::function<void()> suspend;  // hold new requests (the router's suspend)
  std::function<void()> resume;
  // Scores prompt `id`'s finished answer: its rollout rows with tensor `scores` [n] (rlvr_rollout.h).
  std::function<void(int64_t id, const Batch& prompt, RequestOutput output, Done done)> score;
  std::function<std::optional<std::string>()> failure;  // a worker the rollout needs is gone
};

struct AsyncRolloutOptions {
  std::string domain;
  int64_t batch_size = 0;  // prompts per step
  int64_t samples_per_prompt = 1;
  double async_generation_ratio = 1;
  bool use_additional_prompts = false;
  int64_t max_additional_running_prompts = 0;
  rl::QueryFilterParams filter;
  std::string filter_key;
  int64_t sequence_length = 0;      // caps a continuation's prompt + new tokens
  int64_t max_filtered_in_a_row = 0;  // the domain's rows: more dropped in a row and the batch cannot fill
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
};

struct AsyncBatch {
  std::vector<int64_t> ids;          // prompt ids, oldest step first
  std::vector<int64_t> start_steps;  // each prompt's sampling start step
  std::vector<Batch> samples;        // each prompt's scored rows
  std::vector<nlohmann::json> reward_metrics;
  // Since the previous get_batch: prompts started, dropped by the query filter, dropped as too old,
  // and continuation requests sent for samples cut off by a pause.
  int64_t drawn = 0, filtered = 0, dropped_stale = 0, continuations = 0;
  int64_t buffered = 0;  // finished prompts left for later steps
};

class AsyncRollout {
 public:
  AsyncRollout(AsyncRolloutOptions options, AsyncRolloutOps ops);
  ~AsyncRollout();  // stop()
  AsyncRollout(const AsyncRollout&) = delete;
  AsyncRollout& operator=(const AsyncRollout&) = delete;

  AsyncBatch get_batch(int64_t step);
  void pause();
  // Aborts what runs and ends the thread (bounded by the timeout); later calls throw.
  void stop();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace roll::pipeline
