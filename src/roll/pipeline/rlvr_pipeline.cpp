#include "roll/pipeline/rlvr_pipeline.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <mutex>
#include <optional>

#include "roll/config/model_path.h"
#include "roll/config/sampling_params.h"
#include "roll/core/error.h"
#include "roll/core/generation.h"
#include "roll/core/log.h"
#include "roll/model/stop_tokens.h"
#include "roll/model/tokenizer.h"
#include "roll/pipeline/data/prompt_filter.h"
#include "roll/pipeline/data/rlvr_data.h"
#include "roll/pipeline/rollout/async_rollout.h"
#include "roll/pipeline/rollout/rlvr_rollout.h"
#include "roll/pipeline/rlvr_step_metrics.h"
#include "roll/pipeline/rollout/rollout_batch.h"
#include "roll/pipeline/step_advantages.h"
#include "roll/rl/advantage.h"
#include "roll/rl/data_metrics.h"
#include "roll/rl/kl.h"
#include "roll/rl/masks.h"
#include "roll/rl/reward.h"
#include "roll/runtime/rpc_client.h"
#include "roll/workers/request_router.h"

namespace roll::pipeline {

struct RlvrPipeline::Impl {
  std::shared_ptr<model::Tokenizer> tokenizer;
  std::vector<int32_t> stop_ids;
  std::optional<RlvrPromptData> data;
  std::vector<std::shared_ptr<runtime::RpcClient>> infer_ranks;
  std::unique_ptr<workers::RequestRouter> router;
  std::map<std::string, DomainRolloutSpec> domain_specs;
  // generate_opt_level 1: per domain, a client per reward rank and the next rank to use.
  std::map<std::string, std::vector<std::shared_ptr<runtime::RpcClient>>> reward_ranks;
  std::map<std::string, size_t> next_reward_rank;
  std::optional<rl::KlController> kl;
  rl::RunningMomentsMap running;
  // async_generation_ratio > 0: validation gets a router of its own (the training one is suspended
  // while it runs); the domains' rollouts draw prompts on their threads under data_mu.
  std::unique_ptr<workers::RequestRouter> val_router;
  mutable std::mutex data_mu;
  std::map<std::string, std::unique_ptr<AsyncRollout>> async;  // last: stopped before what it uses
};

namespace {

SamplingParams sampling_of(const config::GeneratingArguments& ga, const std::vector<int32_t>& stop_ids,
                                   int64_t n) {
  SamplingParams p = config::sampling_params_from(ga, stop_ids);
  p.n = n;
  return p;
}

}  // namespace

RlvrPipeline::RlvrPipeline(config::LoadedConfig loaded, config::LoadRequest request, PipelineOptions options)
    : PipelineBase(std::move(loaded), std::move(request), std::move(options)), impl_(std::make_unique<Impl>()) {}

RlvrPipeline::~RlvrPipeline() = default;

void RlvrPipeline::on_started() {
  const auto& c = config();
  const std::string model_dir = config::resolve_model_path(c.actor_train.model_args.model_name_or_path.value_or(""),
                                                           "actor_train.model_args.model_name_or_path");
  impl_->tokenizer = std::make_shared<model::Tokenizer>(model::Tokenizer::from_dir(model_dir));
  impl_->stop_ids = model::stop_token_ids(model_dir, *impl_->tokenizer);
  impl_->data.emplace(RlvrPromptData::load(c, model_dir));
  auto& infer = cluster("actor_infer");
  for (int r = 0; r < infer.world_size(); ++r)
    impl_->infer_ranks.push_back(infer.connect(r));
  impl_->router = std::make_unique<workers::RequestRouter>(impl_->infer_ranks, workers::RouterKind::prompt_affinity,
                                                           c.max_running_requests);
  impl_->kl = rl::KlController::from_config(c.init_kl_coef, c.target_kl, c.kl_horizon);
  for (const auto& d : impl_->data->domains()) {
    const std::string key = "rewards." + d.domain + ".query_filter_config";
    auto reward = std::find_if(c.rewards.begin(), c.rewards.end(), [&](const auto& r) { return r.first == d.domain; });
    if (reward == c.rewards.end())
      throw ConfigError("rewards." + d.domain, "no rewards." + d.domain + " for the domain's prompts");
    DomainRolloutSpec spec{d.domain, query_filter_params(reward->second.query_filter_config, key), key};
    log::info("domain {}: {} prompts, {} per step, query filter {}", d.domain, d.rows.size(), d.batch_size,
              describe(spec.filter));
    impl_->domain_specs.emplace(d.domain, std::move(spec));
    if (c.generate_opt_level != 1) continue;
    auto& rc = cluster("reward-" + d.domain);
    for (int r = 0; r < rc.world_size(); ++r)
      impl_->reward_ranks[d.domain].push_back(rc.connect(r));
  }
  if (c.async_generation_ratio > 0) start_async();
  log::info("RLVR generation: generate_opt_level {}{}", c.generate_opt_level,
            c.generate_opt_level == 1 && c.is_use_additional_prompts
                ? fmt::format(", up to {} additional prompts", c.max_additional_running_prompts)
                : "");
}

bool RlvrPipeline::has_validation() const { return impl_->data && impl_->data->has_validation(); }

nlohmann::json RlvrPipeline::state_kv() const {
  std::lock_guard<std::mutex> g(impl_->data_mu);
  return impl_->data ? impl_->data->state() : nlohmann::json::object();
}

void RlvrPipeline::restore_kv(const nlohmann::json& kv) {
  std::lock_guard<std::mutex> g(impl_->data_mu);
  if (impl_->data) impl_->data->restore(kv);
}

void RlvrPipeline::start_async() {
  const auto& c = config();
  Impl& im = *impl_;
  im.val_router = std::make_unique<workers::RequestRouter>(im.infer_ranks, workers::RouterKind::prompt_affinity,
                                                           c.max_running_requests);
  const int64_t n = std::max<int64_t>(1, c.num_return_sequences_in_group);
  const int64_t seq = c.sequence_length.value_or(c.prompt_length + c.response_length.value_or(512));
  const config::GeneratingArguments ga = c.actor_infer.generating_args.value_or(config::GeneratingArguments{});
  for (const auto& d : im.data->domains()) {
    if (d.batch_size == 0) continue;
    const RolloutContext ctx{*im.router, *im.tokenizer, c, sampling_of(ga, im.stop_ids, n), seq, "async",
                             static_cast<uint64_t>(c.seed) * 1000003u, rpc_timeout()};
    StreamingWorkers w{im.reward_ranks.at(d.domain), &im.next_reward_rank[d.domain], [this] { return cluster_failure(); }};
    im.async[d.domain] = start_async_rollout(ctx, w, *im.data, im.data_mu, im.domain_specs.at(d.domain));
  }
  log::info("RLVR generation: asynchronous, async_generation_ratio {} (generation runs up to {} step(s) ahead of "
            "training and pauses only for the model update and validation)",
            c.async_generation_ratio, static_cast<int64_t>(std::ceil(c.async_generation_ratio)));
}

Metrics RlvrPipeline::before_model_update(int64_t) {
  Metrics m;
  if (impl_->async.empty()) return m;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<void>> paused;
  for (auto& [domain, r] : impl_->async) paused.push_back(std::async(std::launch::async, [&r = *r] { r.pause(); }));
  for (auto& p : paused) p.get();
  m["time/step_stop_server"] = seconds_since(t0);
  return m;
}

void RlvrPipeline::on_finished() {
  for (auto& [domain, r] : impl_->async) r->stop();
  impl_->async.clear();
}

Metrics RlvrPipeline::validate(int64_t step) {
  const auto& c = config();
  const config::GeneratingArguments ga =
      c.validation && c.validation->generating_args ? *c.validation->generating_args
                                                    : c.actor_infer.generating_args.value_or(config::GeneratingArguments{});
  Batch prompts;
  {
    std::lock_guard<std::mutex> g(impl_->data_mu);
    prompts = impl_->data->validation_batch();
  }
  workers::RequestRouter& router = impl_->val_router ? *impl_->val_router : *impl_->router;
  const int64_t seq = c.val_sequence_length.value_or(c.sequence_length.value_or(c.prompt_length + 512));
  const SamplingParams params = sampling_of(ga, impl_->stop_ids, std::max<int64_t>(1, ga.num_return_sequences));
  // Every validation prompt goes to the reward cluster of its domain.
  std::map<std::string, std::vector<int64_t>> rows_of;
  for (int64_t i = 0; i < prompts.size(); ++i) rows_of[prompts.get_string("domain", i)].push_back(i);
  std::vector<Batch> parts;
  for (const auto& [domain, rows] : rows_of) {
    auto* reward = find_cluster("reward-" + domain);
    if (!reward) throw Error("validation: no reward cluster for domain '" + domain + "'");
    const RolloutContext ctx{router, *impl_->tokenizer, c, params, seq, fmt::format("val{}-{}", step, domain),
                             static_cast<uint64_t>(c.seed) * 7919u, rpc_timeout()};
    parts.push_back(generate_and_score(ctx, *reward, prompts.take(rows)));
  }
  Batch all = concat_domains(std::move(parts));
  return validation_metrics(all);
}

namespace {

// How many model updates old the weights that sampled each response token were (the pipeline
// stamps version s at step s's update): rollout/token_version_lag/{mean,max}, 0 in synchronous
// runs. The stamps are not sent on to training.
Metrics token_version_lag(Batch& batch, int64_t step) {
  Metrics m;
  if (!batch.has_tensor("infer_weight_versions")) return m;
  const at::Tensor v = batch.tensor("infer_weight_versions");
  const at::Tensor stamped = v >= 0;
  if (stamped.any().item<bool>()) {
    const at::Tensor lag = (step - v.masked_select(stamped)).to(at::kDouble);
    m["rollout/token_version_lag/mean"] = lag.mean().item<double>();
    m["rollout/token_version_lag/max"] = lag.max().item<double>();
  }
  batch.erase_tensor("infer_weight_versions");
  return m;
}

}  // namespace

Metrics RlvrPipeline::run_step(int64_t step) {
  const auto& c = config();
  Impl& im = *impl_;
  Metrics m;
  const int64_t n = std::max<int64_t>(1, c.num_return_sequences_in_group);
  const int64_t seq = c.sequence_length.value_or(c.prompt_length + c.response_length.value_or(512));
  const config::GeneratingArguments ga = c.actor_infer.generating_args.value_or(config::GeneratingArguments{});
  const SamplingParams params = sampling_of(ga, im.stop_ids, n);

  // 1. Generate and score, domain by domain (rows of a domain stay contiguous).
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Batch> parts;
  rl::MetricMap reward_metrics;
  int64_t filtered = 0;
  std::map<std::string, std::future<DomainRollout>> async_parts;
  for (auto& [domain, r] : im.async)
    async_parts[domain] = std::async(std::launch::async, [&r = *r, step, n, &spec = im.domain_specs.at(domain)] {
      return collect_async_rollout(r, step, n, spec);
    });
  for (const auto& d : im.data->domains()) {
    if (d.batch_size == 0) continue;  // the domain has no prompts this step
    if (!im.async.empty()) {
      DomainRollout r = async_parts.at(d.domain).get();
      parts.push_back(std::move(r.samples));
      reward_metrics.merge(r.reward_metrics);
      for (auto& [k, v] : r.scheduler) m[k] = v;
      filtered += r.filtered;
      continue;
    }
    const RolloutContext ctx{*im.router, *im.tokenizer, c, params, seq, fmt::format("s{}-{}", step, d.domain),
                             static_cast<uint64_t>(c.seed) * 1000003u + static_cast<uint64_t>(step) * 10007u,
                             rpc_timeout()};
    const DomainRolloutSpec& spec = im.domain_specs.at(d.domain);
    DomainRollout r;
    if (c.generate_opt_level == 0) {
      r = rollout_level0(ctx, cluster("reward-" + d.domain), *im.data, spec);
    } else {
      StreamingWorkers w{im.reward_ranks.at(d.domain), &im.next_reward_rank[d.domain], [this] { return cluster_failure(); }};
      r = rollout_level1(ctx, w, *im.data, spec);
    }
    parts.push_back(std::move(r.samples));
    reward_metrics.merge(r.reward_metrics);
    for (auto& [k, v] : r.scheduler) m[k] = v;
    filtered += r.filtered;
  }
  m["scheduler/query_filter_count"] = static_cast<double>(filtered);
  Batch batch = concat_domains(parts);
  m["time/step_generate"] = seconds_since(t0);

  for (auto& [k, v] : token_version_lag(batch, step)) m[k] = v;

  // 2. Reference and old log-probs, values.
  t0 = std::chrono::steady_clock::now();
  const int64_t B = batch.size();
  for (auto& [k, v] : compute_log_probs_and_values(batch)) m[k] = v;
  m["time/ref_log_probs_values"] = seconds_since(t0);

  // 3. Per domain: sample mask, reward postprocessing, token rewards, advantages.
  t0 = std::chrono::steady_clock::now();
  rl::MetricMap step_metrics;
  std::vector<Batch> done;
  int64_t begin = 0;
  bool any_kept = false;
  for (const auto& part : parts) {
    const int64_t end = begin + part.size();
    Batch d = batch.slice(begin, end).clone();
    const std::string domain = d.get_string("domain", 0);
    rl::MetricMap dm = compute_domain_advantages(d, c, domain, im.running, *im.kl);
    any_kept = any_kept || d.tensor("final_response_mask").sum().item<double>() > 0;
    step_metrics.merge_prefixed(dm, domain + "/");
    done.push_back(std::move(d));
    begin = end;
  }
  batch = concat_domains(std::move(done));
  m["time/compute_advantage"] = seconds_since(t0);
  for (auto& [k, v] : rollout_data_metrics(batch, n)) m[k] = v;
  for (auto& [k, v] : step_metrics.reduce()) m[k] = v;
  for (auto& [k, v] : reward_metrics.reduce()) m[k] = v;

  // 4. Train.
  t0 = std::chrono::steady_clock::now();
  if (!any_kept) {
    m["mask/final_mask_sum_eq_0"] = 1;
    log::warn("step {}: every sample is masked out; training skipped", step);
  } else {
    for (auto& [k, v] : train(batch, step)) m[k] = v;
  }
  m["time/step_train"] = seconds_since(t0);
  m["system/global_step"] = static_cast<double>(step);
  m["system/batch_size"] = static_cast<double>(B);
  m["system/samples"] = static_cast<double>((step + 1) * B);
  const double tokens = batch.tensor("attention_mask").sum().item<double>();
  m["system/tps"] = tokens / std::max(1e-9, m["time/step_generate"] + m["time/step_train"] + m["time/ref_log_probs_values"]);
  log_samples(batch, step, c.logging_steps);
  return m;
}

}  // namespace roll::pipeline
