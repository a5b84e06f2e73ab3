#pragma once
// One RLVR domain's scored samples for a step (docs/pipelines.md), from actor_infer through the
// prompt-affinity router and from the domain's reward cluster:
//   generate_and_score  every prompt of a batch at once (n samples each), scored by
//                       DP_MP_COMPUTE; validation uses it as it is.
//   rollout_level0      generate_opt_level 0: rounds of batch_size prompts through
//                       generate_and_score, the query filter after the rewards, until batch_size
//                       prompts have passed.
//   rollout_level1      generate_opt_level 1: the streaming scheduler (streaming_rollout.h), each
//                       prompt scored on the next reward rank of the domain (round robin).
// Prompt k drawn in the step (k counts from 0 over every round) is request `<rid_prefix>-k` with
// seed seed_base + k, so a run repeats. Both levels stop with a roll::Error once one pass over the
// domain's rows has not filled the batch (ROLL keeps drawing forever).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "roll/core/batch.h"
#include "roll/core/generation.h"
#include "roll/rl/metrics.h"
#include "roll/rl/query_filter.h"

namespace roll::config {
struct PipelineConfig;
}
namespace roll::model {
class Tokenizer;
}
namespace roll::runtime {
class Cluster;
class RpcClient;
}  // namespace roll::runtime
namespace roll::workers {
class RequestRouter;
}

namespace roll::pipeline {

class RlvrPromptData;
class AsyncRollout;

struct RolloutContext {
  workers::RequestRouter& router;
  const model::Tokenizer& tokenizer;
  const config::PipelineConfig& config;
  SamplingParams params;  // n = samples per prompt
  int64_t sequence_length = 0;
  std::string rid_prefix;
  uint64_t seed_base = 0;
  std::chrono::milliseconds timeout{0};
};

// `prompts` as collated; first_id numbers them (requests and seeds) from there.
Batch generate_and_score(const RolloutContext& ctx, runtime::Cluster& reward, const Batch& prompts, int64_t first_id = 0);

struct DomainRolloutSpec {
  std::string domain;
  rl::QueryFilterParams filter;
  std::string filter_key;  // rewards.<domain>.query_filter_config
};

struct DomainRollout {
  Batch samples;                             // batch_size prompts x n rows, prompt order
  rl::MetricMap reward_metrics;              // the reward workers' metrics
  std::map<std::string, double> scheduler;  // <domain>/scheduler/... and the filtered count
  int64_t filtered = 0;
};

DomainRollout rollout_level0(const RolloutContext& ctx, runtime::Cluster& reward, RlvrPromptData& data,
                             const DomainRolloutSpec& spec);

struct StreamingWorkers {
  std::vector<std::shared_ptr<runtime::RpcClient>> reward_ranks;  // the domain's reward cluster
  size_t* next_reward_rank = nullptr;                             // round robin, kept across steps
  std::function<std::optional<std::string>()> failure;            // a dead infer or reward worker
};

DomainRollout rollout_level1(const RolloutContext& ctx, const StreamingWorkers& workers, RlvrPromptData& data,
                             const DomainRolloutSpec& spec);

// async_generation_ratio > 0: the domain's asynchronous rollout (async_rollout.h) over the same
// router and reward ranks, running until it is destroyed. Prompt k of the run is request
// `async-<domain>-k` with seed ctx.seed_base + k. Its thread draws from `data` under `data_mu`,
// which whoever else reads `data` (validation, checkpoints) must hold too. `ctx` is copied: what it
// refers to must outlive the rollout.
std::unique_ptr<AsyncRollout> start_async_rollout(const RolloutContext& ctx, const StreamingWorkers& workers,
                                                  RlvrPromptData& data, std::mutex& data_mu,
                                                  const DomainRolloutSpec& spec);
// Step `step`'s batch of the domain (generation resumes for it) and its scheduler metrics,
// <domain>/scheduler/off_policy_ratio among them: the mean over samples of step - the step their
// prompt started in.
DomainRollout collect_async_rollout(AsyncRollout& rollout, int64_t step, int64_t samples_per_prompt,
                                    const DomainRolloutSpec& spec);

}  // namespace roll::pipeline
