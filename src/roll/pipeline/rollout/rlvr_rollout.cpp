#include "roll/pipeline/rollout/rlvr_rollout.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <future>

#include "roll/config/schema.h"
#include "roll/core/error.h"
#include "roll/core/progress.h"
#include "roll/model/tokenizer.h"
#include "roll/pipeline/data/prompt_filter.h"
#include "roll/pipeline/data/rlvr_data.h"
#include "roll/pipeline/rollout/async_rollout.h"
#include "roll/pipeline/rollout/rollout_batch.h"
#include "roll/pipeline/rollout/streaming_rollout.h"
#include "roll/runtime/cluster.h"
#include "roll/runtime/rpc_client.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/request_router.h"
#include "roll/workers/rpc_methods.h"

namespace roll::pipeline {
namespace {

// The unpadded prompt ids of every row. Accessors, not per-element item(): a step reads
// B x prompt_length cells here.
std::vector<std::vector<int32_t>> prompt_ids(const Batch& prompts) {
  const at::Tensor ids_t = prompts.tensor("input_ids").to(at::kLong).contiguous();
  const at::Tensor mask_t = prompts.tensor("attention_mask").to(at::kLong).contiguous();
  const auto ids = ids_t.accessor<int64_t, 2>();
  const auto mask = mask_t.accessor<int64_t, 2>();
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(prompts.size()));
  for (int64_t i = 0; i < ids.size(0); ++i)
    for (int64_t t = 0; t < ids.size(1); ++t)
      if (mask[i][t] != 0) out[static_cast<size_t>(i)].push_back(static_cast<int32_t>(ids[i][t]));
  return out;
}

std::string rid_of(const RolloutContext& ctx, int64_t id) { return fmt::format("{}-{}", ctx.rid_prefix, id); }

// The generate request of prompt `id`: n samples, max_new_tokens capped by sequence_length.
GenerationRequest prompt_request(const RolloutContext& ctx, std::vector<int32_t> prompt, int64_t id) {
  GenerationRequest r;
  r.request_id = rid_of(ctx, id);
  r.params = ctx.params;
  r.params.max_new_tokens = std::max<int64_t>(
      1, std::min<int64_t>(r.params.max_new_tokens, ctx.sequence_length - static_cast<int64_t>(prompt.size())));
  r.params.seed = ctx.seed_base + static_cast<uint64_t>(id);
  r.prompt_token_ids = std::move(prompt);
  return r;
}

// Sends every prompt (n samples each) through the router and waits for all.
std::vector<GeneratedPrompt> generate(const RolloutContext& ctx, const Batch& prompts, int64_t first_id) {
  auto ids = prompt_ids(prompts);
  std::vector<GeneratedPrompt> out(ids.size());
  std::vector<std::future<RequestOutput>> answers;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = first_id + static_cast<int64_t>(i);
    const std::string rid = rid_of(ctx, id);
    out[i].prompt = ids[i];
    auto promise = std::make_shared<std::promise<RequestOutput>>();
    answers.push_back(promise->get_future());
    ctx.router.generate(prompt_request(ctx, std::move(ids[i]), id), rid,
                        [promise, rid](const RequestOutput* o, const std::string& err) {
                          if (o) promise->set_value(*o);
                          else promise->set_exception(std::make_exception_ptr(Error("generation of " + rid + " failed: " + err)));
                        });
  }
  auto progress = make_progress();
  progress->start("rollout " + ctx.rid_prefix, static_cast<int64_t>(answers.size()), "prompt");
  for (size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].wait_for(ctx.timeout) != std::future_status::ready)
      throw Error(fmt::format("generation of {} timed out", rid_of(ctx, first_id + static_cast<int64_t>(i))));
    out[i].samples = answers[i].get().samples;
    progress->advance();
  }
  progress->finish();
  return out;
}

Batch build(const RolloutContext& ctx, const Batch& prompts, const std::vector<GeneratedPrompt>& generated) {
  return build_rollout_batch(prompts, generated, ctx.sequence_length, ctx.config.prompt_length,
                             ctx.tokenizer.pad_id().value_or(0), ctx.tokenizer);
}

// What the reward workers read: the non-tensor columns (texts, ground truth, test cases), and the
// width of the padded `responses` tensor (ROLL's CrossThinkQA length reward measures that).
runtime::Payload reward_request(const Batch& samples) {
  Batch request = samples.select({}, samples.column_keys());
  request.meta["responses_width"] = samples.tensor("responses").size(1);
  return runtime::Payload(std::move(request));
}

// `response_level_rewards`: the worker's shaped reward where it sends one (the rule rewards), else
// the score; the advantage step normalises it, as ROLL's reward_postprocess does.
void add_scores(Batch& samples, const Batch& scored) {
  samples.set_tensor("scores", scored.tensor("scores"));
  samples.set_tensor("response_level_rewards", scored.has_tensor("response_level_rewards")
                                                   ? scored.tensor("response_level_rewards")
                                                   : scored.tensor("scores").clone());
  samples.meta["reward_metrics"] = scored.meta.value("metrics", nlohmann::json::object());
}

// One prompt's generated samples as rollout rows, scored on the domain's next reward rank (round
// robin); `done` gets the rows with their scores, or an error.
void score_on_next_rank(const RolloutContext& ctx, const StreamingWorkers& w, const Batch& prompt, RequestOutput answer,
                        std::function<void(std::optional<Batch>, const std::string&)> done) {
  GeneratedPrompt g;
  g.prompt = prompt_ids(prompt).front();
  g.samples = std::move(answer.samples);
  auto samples = std::make_shared<Batch>(build(ctx, prompt, {g}));
  const size_t rank = (*w.next_reward_rank)++ % w.reward_ranks.size();
  w.reward_ranks[rank]->call_async(workers::rpc::kComputeRewards, reward_request(*samples),
                                   [samples, done](runtime::Payload* r, const std::string& err) {
                                     if (!r || !r->batch)
                                       return done(std::nullopt, fmt::format("{} failed: {}", workers::rpc::kComputeRewards, err));
                                     add_scores(*samples, *r->batch);
                                     done(std::move(*samples), "");
                                   });
}

// The step's batch from the prompts that passed, numbered as one batch; meta left empty.
Batch join_prompts(std::vector<Batch> parts, int64_t n) {
  for (auto& p : parts) p.meta = nlohmann::json::object();
  Batch all = Batch::concat(parts);
  number_prompts(all, n);
  return all;
}

void count(DomainRollout& out, const std::string& domain, int64_t drawn, int64_t collected, int64_t filtered) {
  out.filtered = filtered;
  out.scheduler[domain + "/scheduler/query_use_count"] = static_cast<double>(drawn);
  out.scheduler[domain + "/scheduler/collect_query_count"] = static_cast<double>(collected);
  out.scheduler[domain + "/scheduler/query_filter_count"] = static_cast<double>(filtered);
}

}  // namespace

Batch generate_and_score(const RolloutContext& ctx, runtime::Cluster& reward, const Batch& prompts, int64_t first_id) {
  Batch samples = build(ctx, prompts, generate(ctx, prompts, first_id));
  runtime::Payload scored =
      reward.call(workers::rpc::kComputeRewards, runtime::Dispatch::dp_mp_compute, reward_request(samples)).get();
  add_scores(samples, *scored.batch);
  return samples;
}

DomainRollout rollout_level0(const RolloutContext& ctx, runtime::Cluster& reward, RlvrPromptData& data,
                             const DomainRolloutSpec& spec) {
  const DomainPrompts& d = data.domain(spec.domain);
  const int64_t B = d.batch_size, rows = static_cast<int64_t>(d.rows.size());
  const int64_t n = std::max<int64_t>(1, ctx.params.n);
  DomainRollout out;
  std::vector<Batch> parts;
  int64_t drawn = 0, passed = 0, filtered = 0;
  do {  // ROLL's round: batch_size new prompts, generated and scored together, then filtered
    Batch prompts = data.next_batch(spec.domain);
    Batch samples = generate_and_score(ctx, reward, prompts, drawn);
    drawn += prompts.size();
    out.reward_metrics.merge(workers::metrics_from_json(
        samples.meta.at("reward_metrics"), fmt::format("{}.{}", reward.name(), workers::rpc::kComputeRewards)));
    const std::vector<bool> keep = keep_prompts(samples.tensor("scores"), n, spec.filter);
    std::vector<int64_t> take;
    for (int64_t i = 0; i < prompts.size(); ++i) {
      if (!keep[static_cast<size_t>(i)]) ++filtered;
      else if (passed < B) {
        ++passed;
        for (int64_t j = 0; j < n; ++j) take.push_back(i * n + j);
      }
    }
    parts.push_back(static_cast<int64_t>(take.size()) == samples.size() ? std::move(samples) : samples.take(take));
  } while (passed < B && drawn < rows);
  if (passed < B) throw_batch_not_filled(spec.domain, passed, B, drawn, rows, spec.filter, spec.filter_key);
  out.samples = join_prompts(std::move(parts), n);
  count(out, spec.domain, drawn, passed, filtered);
  return out;
}

DomainRollout rollout_level1(const RolloutContext& ctx, const StreamingWorkers& w, RlvrPromptData& data,
                             const DomainRolloutSpec& spec) {
  if (w.reward_ranks.empty() || !w.next_reward_rank) throw Error("domain '" + spec.domain + "': no reward ranks");
  const DomainPrompts& d = data.domain(spec.domain);
  const config::PipelineConfig& c = ctx.config;
  StreamingOptions o;
  o.domain = spec.domain;
  o.batch_size = d.batch_size;
  o.use_additional_prompts = c.is_use_additional_prompts;
  o.max_additional_running_prompts = c.max_additional_running_prompts;
  o.filter = spec.filter;
  o.filter_key = spec.filter_key;
  o.max_prompts = static_cast<int64_t>(d.rows.size());
  o.timeout = ctx.timeout;

  // Touched on the scheduler's thread only (draw and score run there).
  std::map<int64_t, Batch> prompt_of;
  StreamingOps ops;
  ops.draw = [&](int64_t id) { return prompt_of[id] = data.next_batch(spec.domain, 1); };
  ops.generate = [&](int64_t id, const Batch& prompt, StreamingOps::Generated done) {
    const std::string rid = rid_of(ctx, id);
    ctx.router.generate(prompt_request(ctx, prompt_ids(prompt).front(), id), rid,
                        [done, rid](const RequestOutput* output, const std::string& err) {
                          if (!output) return done(std::nullopt, "generation of " + rid + " failed: " + err);
                          done(*output, "");
                        });
  };
  ops.abort = [&](int64_t id) { ctx.router.abort(rid_of(ctx, id)); };
  ops.score = [&](int64_t id, RequestOutput answer, StreamingOps::Done done) {
    score_on_next_rank(ctx, w, prompt_of.at(id), std::move(answer), std::move(done));
    prompt_of.erase(id);
  };
  ops.failure = w.failure;

  StreamingResult r = run_streaming_rollout(o, ops);
  DomainRollout out;
  const std::string scorer = fmt::format("reward-{}.{}", spec.domain, workers::rpc::kComputeRewards);
  for (const auto& m : r.reward_metrics) out.reward_metrics.merge(workers::metrics_from_json(m, scorer));
  const int64_t n = std::max<int64_t>(1, ctx.params.n);
  out.samples = join_prompts(std::move(r.samples), n);
  count(out, spec.domain, r.drawn, static_cast<int64_t>(r.ids.size()), r.filtered);
  out.scheduler[spec.domain + "/scheduler/aborted_query_count"] = static_cast<double>(r.aborted);
  return out;
}

std::unique_ptr<AsyncRollout> start_async_rollout(const RolloutContext& ctx_in, const StreamingWorkers& w,
                                                  RlvrPromptData& data, std::mutex& data_mu,
                                                  const DomainRolloutSpec& spec) {
  if (w.reward_ranks.empty() || !w.next_reward_rank) throw Error("domain '" + spec.domain + "': no reward ranks");
  const config::PipelineConfig& c = ctx_in.config;
  const DomainPrompts& d = data.domain(spec.domain);
  AsyncRolloutOptions o;
  o.domain = spec.domain;
  o.batch_size = d.batch_size;
  o.samples_per_prompt = std::max<int64_t>(1, ctx_in.params.n);
  o.async_generation_ratio = c.async_generation_ratio;
  o.use_additional_prompts = c.is_use_additional_prompts;
  o.max_additional_running_prompts = c.max_additional_running_prompts;
  o.filter = spec.filter;
  o.filter_key = spec.filter_key;
  o.sequence_length = ctx_in.sequence_length;
  o.max_filtered_in_a_row = static_cast<int64_t>(d.rows.size());
  o.timeout = ctx_in.timeout;

  auto ctx = std::make_shared<RolloutContext>(ctx_in);
  AsyncRolloutOps ops;
  // draw, request and score run on the rollout's thread.
  ops.draw = [&data, &data_mu, domain = spec.domain](int64_t) {
    std::lock_guard<std::mutex> g(data_mu);
    return data.next_batch(domain, 1);
  };
  ops.request = [ctx](int64_t id, const Batch& prompt) { return prompt_request(*ctx, prompt_ids(prompt).front(), id); };
  ops.generate = [ctx](GenerationRequest request, const std::string& affinity, AsyncRolloutOps::Generated done) {
    const std::string rid = request.request_id;
    ctx->router.generate(std::move(request), affinity, [done, rid](const RequestOutput* output, const std::string& err) {
      if (!output) return done(std::nullopt, err);
      done(*output, "");
    });
  };
  ops.abort = [ctx](const std::string& rid) { ctx->router.abort(rid); };
  ops.suspend = [ctx] { ctx->router.suspend(); };
  ops.resume = [ctx] { ctx->router.resume(); };
  ops.score = [ctx, w](int64_t, const Batch& prompt, RequestOutput answer, AsyncRolloutOps::Done done) {
    score_on_next_rank(*ctx, w, prompt, std::move(answer), std::move(done));
  };
  ops.failure = w.failure;
  return std::make_unique<AsyncRollout>(std::move(o), std::move(ops));
}

DomainRollout collect_async_rollout(AsyncRollout& rollout, int64_t step, int64_t samples_per_prompt,
                                    const DomainRolloutSpec& spec) {
  AsyncBatch b = rollout.get_batch(step);
  DomainRollout out;
  const std::string scorer = fmt::format("reward-{}.{}", spec.domain, workers::rpc::kComputeRewards);
  for (const auto& m : b.reward_metrics) out.reward_metrics.merge(workers::metrics_from_json(m, scorer));
  double lag = 0;
  for (int64_t s : b.start_steps) lag += static_cast<double>(step - s);
  const auto prompts = static_cast<int64_t>(b.ids.size());
  out.samples = join_prompts(std::move(b.samples), std::max<int64_t>(1, samples_per_prompt));
  count(out, spec.domain, b.drawn, prompts, b.filtered);
  const std::string p = spec.domain + "/scheduler/";
  // Every prompt has n samples, so the mean over prompts is ROLL's mean over samples.
  out.scheduler[p + "off_policy_ratio"] = prompts > 0 ? lag / static_cast<double>(prompts) : 0.0;
  out.scheduler[p + "aborted_query_count"] = static_cast<double>(b.dropped_stale);
  out.scheduler[p + "partial_rollout_count"] = static_cast<double>(b.continuations);
  out.scheduler[p + "buffered_query_count"] = static_cast<double>(b.buffered);
  return out;
}

}  // namespace roll::pipeline
