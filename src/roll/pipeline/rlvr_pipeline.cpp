#include "roll/pipeline/rlvr_pipeline.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <future>
#include <optional>

#include "roll/config/model_path.h"
#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/core/progress.h"
#include "roll/engine/sampling_params.h"
#include "roll/model/stop_tokens.h"
#include "roll/model/tokenizer.h"
#include "roll/pipeline/rlvr_data.h"
#include "roll/pipeline/rlvr_metrics.h"
#include "roll/pipeline/rollout_batch.h"
#include "roll/rl/advantage.h"
#include "roll/rl/data_metrics.h"
#include "roll/rl/kl.h"
#include "roll/rl/masks.h"
#include "roll/rl/reward.h"
#include "roll/runtime/rpc_client.h"
#include "roll/workers/generate_protocol.h"
#include "roll/workers/request_router.h"

namespace roll::pipeline {

struct RlvrPipeline::Impl {
  std::shared_ptr<model::Tokenizer> tokenizer;
  std::vector<int32_t> stop_ids;
  std::optional<RlvrPromptData> data;
  std::vector<std::shared_ptr<runtime::RpcClient>> infer_ranks;
  std::unique_ptr<workers::RequestRouter> router;
  std::optional<rl::KlController> kl;
  rl::RunningMomentsMap running;
};

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
    impl_->infer_ranks.push_back(std::make_shared<runtime::RpcClient>(infer.endpoint(r), infer.describe(r)));
  impl_->router = std::make_unique<workers::RequestRouter>(impl_->infer_ranks, workers::RouterKind::prompt_affinity,
                                                           c.max_running_requests);
  impl_->kl = rl::KlController::from_config(c.init_kl_coef, c.target_kl, c.kl_horizon);
  for (const auto& d : impl_->data->domains())
    log::info("domain {}: {} prompts, {} per step", d.domain, d.rows.size(), d.batch_size);
}

bool RlvrPipeline::has_validation() const { return impl_->data && impl_->data->has_validation(); }

nlohmann::json RlvrPipeline::state_kv() const { return impl_->data ? impl_->data->state() : nlohmann::json::object(); }

void RlvrPipeline::restore_kv(const nlohmann::json& kv) {
  if (impl_->data) impl_->data->restore(kv);
}

namespace {

// Sends every prompt of `prompts` (n samples each) through the router and waits for all.
std::vector<GeneratedPrompt> generate(workers::RequestRouter& router, const Batch& prompts,
                                      engine::SamplingParams params, int64_t sequence_length,
                                      const std::string& rid_prefix, uint64_t seed_base,
                                      std::chrono::milliseconds timeout) {
  // Accessors, not per-element item(): a step reads B x prompt_length cells here.
  const at::Tensor ids_t = prompts.tensor("input_ids").to(at::kLong).contiguous();
  const at::Tensor mask_t = prompts.tensor("attention_mask").to(at::kLong).contiguous();
  const auto ids = ids_t.accessor<int64_t, 2>();
  const auto mask = mask_t.accessor<int64_t, 2>();
  const int64_t B = prompts.size();
  std::vector<GeneratedPrompt> out(static_cast<size_t>(B));
  std::vector<std::future<nlohmann::json>> answers;
  for (int64_t i = 0; i < B; ++i) {
    auto& g = out[static_cast<size_t>(i)];
    for (int64_t t = 0; t < ids.size(1); ++t)
      if (mask[i][t] != 0) g.prompt.push_back(static_cast<int32_t>(ids[i][t]));
    engine::SamplingParams p = params;
    p.max_new_tokens = std::max<int64_t>(1, std::min<int64_t>(p.max_new_tokens, sequence_length - static_cast<int64_t>(g.prompt.size())));
    p.seed = seed_base + static_cast<uint64_t>(i);
    const std::string rid = fmt::format("{}-{}", rid_prefix, i);
    nlohmann::json req = {{"rid", rid}, {"input_ids", g.prompt}, {"sampling_params", workers::sampling_params_to_json(p)}};
    auto promise = std::make_shared<std::promise<nlohmann::json>>();
    answers.push_back(promise->get_future());
    router.generate(std::move(req), rid, [promise, rid](const nlohmann::json* o, const std::string& err) {
      if (o) promise->set_value(*o);
      else promise->set_exception(std::make_exception_ptr(Error("generation of " + rid + " failed: " + err)));
    });
  }
  auto progress = make_progress();
  progress->start("rollout " + rid_prefix, B, "prompt");
  for (int64_t i = 0; i < B; ++i) {
    if (answers[i].wait_for(timeout) != std::future_status::ready)
      throw Error(fmt::format("generation of {}-{} timed out", rid_prefix, i));
    engine::RequestOutput o = workers::output_from_json(answers[i].get());
    for (auto& s : o.samples) out[static_cast<size_t>(i)].samples.push_back(std::move(s));
    progress->advance();
  }
  progress->finish();
  return out;
}

engine::SamplingParams sampling_of(const config::GeneratingArguments& ga, const std::vector<int32_t>& stop_ids,
                                   int64_t n) {
  engine::SamplingParams p = engine::sampling_params_from(ga, stop_ids);
  p.n = n;
  return p;
}

}  // namespace

namespace {
// Generates, postprocesses and scores one domain's prompts.
Batch rollout(workers::RequestRouter& router, const model::Tokenizer& tokenizer, runtime::Cluster& reward,
              const Batch& prompts, const engine::SamplingParams& params, const config::PipelineConfig& c,
              int64_t sequence_length, const std::string& rid_prefix, uint64_t seed_base,
              std::chrono::milliseconds timeout) {
  auto generated = generate(router, prompts, params, sequence_length, rid_prefix, seed_base, timeout);
  Batch samples = build_rollout_batch(prompts, generated, sequence_length, c.prompt_length,
                                      tokenizer.pad_id().value_or(0), tokenizer);
  runtime::Payload scored = reward.call("compute_rewards", runtime::Dispatch::dp_mp_compute,
                                        runtime::Payload(samples.select({}, samples.column_keys())))
                                .get();
  samples.set_tensor("scores", scored.batch->tensor("scores"));
  samples.meta["reward_metrics"] = scored.batch->meta.value("metrics", nlohmann::json::object());
  return samples;
}
}  // namespace

Metrics RlvrPipeline::validate(int64_t step) {
  const auto& c = config();
  const config::GeneratingArguments ga =
      c.validation && c.validation->generating_args ? *c.validation->generating_args
                                                    : c.actor_infer.generating_args.value_or(config::GeneratingArguments{});
  Batch prompts = impl_->data->validation_batch();
  const int64_t seq = c.val_sequence_length.value_or(c.sequence_length.value_or(c.prompt_length + 512));
  const engine::SamplingParams params = sampling_of(ga, impl_->stop_ids, std::max<int64_t>(1, ga.num_return_sequences));
  // Every validation prompt goes to the reward cluster of its domain.
  std::map<std::string, std::vector<int64_t>> rows_of;
  for (int64_t i = 0; i < prompts.size(); ++i) rows_of[prompts.get_string("domain", i)].push_back(i);
  std::vector<Batch> parts;
  for (const auto& [domain, rows] : rows_of) {
    auto* reward = find_cluster("reward-" + domain);
    if (!reward) throw Error("validation: no reward cluster for domain '" + domain + "'");
    parts.push_back(rollout(*impl_->router, *impl_->tokenizer, *reward, prompts.take(rows), params, c, seq, fmt::format("val{}-{}", step, domain),
                            static_cast<uint64_t>(c.seed) * 7919u, rpc_timeout()));
  }
  Batch all = concat_domains(std::move(parts));
  return validation_metrics(all);
}

Metrics RlvrPipeline::run_step(int64_t step) {
  const auto& c = config();
  Impl& im = *impl_;
  Metrics m;
  const int64_t n = std::max<int64_t>(1, c.num_return_sequences_in_group);
  const int64_t seq = c.sequence_length.value_or(c.prompt_length + c.response_length.value_or(512));
  const config::GeneratingArguments ga = c.actor_infer.generating_args.value_or(config::GeneratingArguments{});
  const engine::SamplingParams params = sampling_of(ga, im.stop_ids, n);

  // 1. Generate and score, domain by domain (rows of a domain stay contiguous).
  auto t0 = std::chrono::steady_clock::now();
  std::vector<Batch> parts;
  rl::MetricMap reward_metrics;
  for (const auto& d : im.data->domains()) {
    Batch prompts = im.data->next_batch(d.domain);
    auto& reward = cluster("reward-" + d.domain);
    parts.push_back(rollout(*im.router, *im.tokenizer, reward, prompts, params, c, seq, fmt::format("s{}-{}", step, d.domain),
                            static_cast<uint64_t>(c.seed) * 1000003u + static_cast<uint64_t>(step) * 10007u, rpc_timeout()));
    merge_json_metrics(reward_metrics, parts.back().meta["reward_metrics"]);
  }
  Batch batch = concat_domains(parts);
  m["time/step_generate"] = seconds_since(t0);

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
