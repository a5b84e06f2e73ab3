#include "roll/workers/actor_trainer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"
#include "roll/rl/agg_loss.h"
#include "roll/train/batch_plan.h"
#include "roll/train/checkpoint.h"
#include "roll/train/options_from_config.h"
#include "roll/train/strategy.h"
#include "roll/workers/dp_sum.h"
#include "roll/workers/dynamic_micro_batches.h"
#include "roll/workers/forward_batches.h"
#include "roll/workers/trim_padding.h"
#include "roll/workers/loss_params_from_config.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/role_model.h"

namespace roll::workers {
namespace {

// The batch's per-sample scores [B] (topr splits samples by score > 0); token-level scores [B, T]
// (agentic: the episode return at the last token) are summed per sample.
at::Tensor sample_scores(const Batch& batch) {
  if (!batch.has_tensor("scores")) return {};
  at::Tensor s = batch.tensor("scores").to(at::kFloat);
  return s.dim() == 2 ? s.sum(-1) : s;
}

at::Tensor difficulty_column(const Batch& batch) {
  if (!batch.has_column("difficulty")) return {};
  std::vector<double> d(static_cast<size_t>(batch.size()));
  for (int64_t r = 0; r < batch.size(); ++r) d[static_cast<size_t>(r)] = batch.get_double("difficulty", r);
  return at::tensor(d, at::TensorOptions().dtype(at::kDouble)).to(at::kFloat);
}

}  // namespace

struct ActorTrainer::Impl {
  std::string name;
  bool agentic = false;
  rl::PolicyLossParams loss;
  rl::TrainInferParams train_infer;
  bool recompute = false;
  bool difficulty_loss_weight = false, length_loss_weight = false;
  bool apply_loss_scale = true;
  int64_t infer_batch_size = 16;
  std::optional<TokenBudget> train_budget, infer_budget;  // dynamic batching, when the role enables it
  int world = 1;
  std::shared_ptr<comm::ProcessGroup> norm_group;  // a sibling of the gradient group: its own stream
  std::unique_ptr<train::TrainStrategy> strategy;

  // The whole rank batch, read once per train_step ([B, ...]; undefined when absent).
  struct Inputs {
    ForwardInputs fwd;
    at::Tensor m, fm, advantages, old, ref, infer, is_weight, scores, difficulty;
  };
  // ℓ_old of rows already seen in this train_step (no recompute, ppo_epochs > 1): ROLL's
  // per-sample_uuid cache, keyed here by the row of the rank's batch.
  struct OldCache {
    bool enabled = false;
    at::Tensor values;
    std::vector<char> filled;
  };

  at::Tensor micro_loss(const Inputs& in, const std::vector<int64_t>& rows, const rl::AggNorm& norm_response,
                        const rl::AggNorm& norm_final, OldCache& cache, rl::MetricMap& metrics);
};

at::Tensor ActorTrainer::Impl::micro_loss(const Inputs& in, const std::vector<int64_t>& rows,
                                          const rl::AggNorm& norm_response, const rl::AggNorm& norm_final,
                                          OldCache& cache, rl::MetricMap& metrics) {
  const at::Tensor idx = at::tensor(rows, at::TensorOptions().dtype(at::kLong));
  auto sel = [&](const at::Tensor& t) { return t.defined() ? t.index_select(0, idx) : at::Tensor(); };
  const bool with_entropy = loss.entropy_loss_coef > 0;
  model::TokenLogProbs fwd = log_probs_on_used_columns(
      [&](const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos, const at::Tensor& needed) {
        return strategy->log_probs(ids, mask, pos, with_entropy, lm_head_chunk_tokens(strategy->model().config()),
                                   needed);
      },
      sel(in.fwd.input_ids), sel(in.fwd.attention_mask), sel(in.fwd.position_ids), sel(in.m));
  at::Tensor m = sel(in.m), fm = sel(in.fm);
  // ROLL's op_compute_log_probs masks ℓ with the response mask: masked positions hold ratio 1.
  at::Tensor lp = fwd.log_probs * m;

  at::Tensor old;
  if (recompute) {
    old = sel(in.old);
  } else if (cache.enabled && cache.filled[static_cast<size_t>(rows.front())]) {
    for (int64_t r : rows)
      if (!cache.filled[static_cast<size_t>(r)])
        throw Error(fmt::format("{}: old log-prob cache holds row {} but not row {} of one micro-batch", name,
                                rows.front(), r));
    old = cache.values.index_select(0, idx);
  } else {
    old = lp.detach();  // on-policy: the first pass's ℓ is ℓ_old, so the ratio is 1 there
    if (cache.enabled) {
      cache.values.index_copy_(0, idx, old);
      for (int64_t r : rows) cache.filled[static_cast<size_t>(r)] = 1;
    }
  }

  rl::PolicyLossInputs pin;
  if (recompute) {
    // The pipeline applied the train-infer correction to the whole batch (docs/rl.md).
    pin.is_weight = sel(in.is_weight);
  } else {
    rl::TrainInferResult ti = rl::train_infer_correction(m, old, sel(in.infer), train_infer, norm_response);
    metrics.merge(ti.metrics);
    m = m * ti.filter_mask;
    fm = fm * ti.filter_mask;
    if (train_infer.is_weight.enabled) pin.is_weight = ti.is_weight;
  }
  pin.log_probs = lp;
  pin.old_log_probs = old;
  pin.ref_log_probs = sel(in.ref);
  pin.advantages = sel(in.advantages);
  pin.response_mask = m;
  pin.final_response_mask = fm;
  if (with_entropy) pin.entropy = fwd.entropy * sel(in.m);
  if (!agentic)
    pin.sample_weights = rl::compute_sample_weights(m, sel(in.difficulty), difficulty_loss_weight, length_loss_weight);
  pin.scores = sel(in.scores);
  pin.norm_final = norm_final;
  pin.norm_response = norm_response;
  rl::PolicyLossResult r = rl::policy_loss(pin, loss);
  metrics.merge(r.metrics);
  return r.total_loss;
}

ActorTrainer::ActorTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& actor,
                           const std::string& model_dir, int rank, int world_size,
                           std::shared_ptr<comm::ProcessGroup> group)
    : ActorTrainer(pipeline, actor, model_dir, rank, world_size, group,
                   train::train_options_from_config(pipeline, pipeline.max_grad_norm, actor, world_size, pipeline.ppo_epochs)) {}

ActorTrainer::ActorTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& actor,
                           const std::string& model_dir, int rank, int world_size,
                           std::shared_ptr<comm::ProcessGroup> group, train::TrainOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.name = role_name(actor, "actor_train");
  check_role_rank(s.name, rank, world_size, group);
  s.agentic = agentic_loss(pipeline);
  s.loss = policy_loss_params(pipeline, actor);
  s.train_infer = train_infer_params(pipeline);
  s.recompute = pipeline.enable_old_logprobs_recompute;
  s.difficulty_loss_weight = pipeline.difficulty_loss_weight;
  s.length_loss_weight = pipeline.length_loss_weight;
  s.apply_loss_scale = actor.apply_loss_scale;
  s.infer_batch_size = actor.infer_batch_size;
  s.train_budget = train_token_budget(actor, s.name);
  s.infer_budget = infer_token_budget(actor, s.name);
  s.world = world_size;
  s.strategy = std::make_unique<train::TrainStrategy>(load_role_model(model_dir, actor, s.name), std::move(options),
                                                      group);
  if (group && group->size() > 1) s.norm_group = group->sibling(s.name + ".loss_normalisers");
}

ActorTrainer::~ActorTrainer() = default;

Batch ActorTrainer::train_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  check_equal_rows(batch.size(), s.norm_group.get(), role);  // first: a rank-local error would hang the others
  if (batch.empty()) throw Error(fmt::format("{}: train_step got an empty batch", role));
  batch_tensor(batch, "response_mask", role);  // train_step masks with it; no attention_mask fallback
  Impl::Inputs in;
  in.fwd = forward_inputs(batch, role);
  in.m = token_mask(batch, role);
  in.fm = !s.agentic && batch.has_tensor("final_response_mask") ? token_tensor(batch, "final_response_mask", role)
                                                                 : in.m;
  in.advantages = token_tensor(batch, "advantages", role);
  if (s.recompute) {
    in.old = token_tensor(batch, "old_log_probs", role);
    if (s.train_infer.is_weight.enabled) in.is_weight = token_tensor(batch, "train_infer_is_weight", role);
  }
  if (batch.has_tensor("ref_log_probs")) in.ref = token_tensor(batch, "ref_log_probs", role);
  if (batch.has_tensor("infer_logprobs") && batch.tensor("infer_logprobs").numel() > 0)
    in.infer = token_tensor(batch, "infer_logprobs", role);
  in.scores = sample_scores(batch);
  if (!s.agentic && s.difficulty_loss_weight) in.difficulty = difficulty_column(batch);

  const train::TrainOptions& o = s.strategy->options();
  const int64_t B = batch.size();
  Impl::OldCache cache;
  cache.enabled = !s.recompute && o.ppo_epochs > 1;
  if (cache.enabled) {
    cache.values = at::zeros_like(in.m);
    cache.filled.assign(static_cast<size_t>(B), 0);
  }

  std::optional<MicroBatchRows> dynamic;
  if (s.train_budget)
    dynamic = dynamic_micro_batches(in.fwd.attention_mask, *s.train_budget, s.norm_group.get(), role + "/train_step");
  const std::vector<train::MiniBatchPlan> plan =
      dynamic ? dynamic_mini_batches(*dynamic, o.gradient_accumulation_steps, o.ppo_epochs)
              : train::plan_mini_batches(B, o.per_device_train_batch_size, o.gradient_accumulation_steps,
                                         o.ppo_epochs, o.seed);
  rl::MetricMap metrics;
  for (const train::MiniBatchPlan& mini : plan) {
    // Global normalisers of this backward mini-batch (docs/rl.md): tokens and valid samples of m and
    // fm, summed over the data-parallel ranks (at least 1, as ROLL).
    std::vector<int64_t> rows;
    for (const auto& micro : mini.micro_batches) rows.insert(rows.end(), micro.begin(), micro.end());
    const at::Tensor idx = at::tensor(rows, at::TensorOptions().dtype(at::kLong));
    std::vector<double> local;
    for (const at::Tensor& mask : {in.m, in.fm}) {
      const at::Tensor part = mask.index_select(0, idx);
      local.push_back(part.sum().item<double>());
      local.push_back((part > 0).any(-1).sum().item<double>());
    }
    const std::vector<double> global = dp_sum(local, s.norm_group.get());
    const rl::AggNorm norm_response{std::max(global[0], 1.0), std::max(global[1], 1.0)};
    const rl::AggNorm norm_final{std::max(global[2], 1.0), std::max(global[3], 1.0)};

    const int64_t n = static_cast<int64_t>(mini.micro_batches.size());
    double scale = s.apply_loss_scale ? rl::loss_scale_factor(n, s.world) : 1.0;
    if (dynamic) scale *= dynamic_accumulation_factor(n, o.gradient_accumulation_steps);
    train::StepStats st = s.strategy->train_step(n, [&](int64_t i) {
      return s.micro_loss(in, mini.micro_batches[static_cast<size_t>(i)], norm_response, norm_final, cache, metrics) *
             scale;
    });
    metrics.add(role + "/grad_norm", st.grad_norm);
  }

  const int64_t backward_steps =
      dynamic ? static_cast<int64_t>(plan.size())
              : B * o.ppo_epochs / (o.per_device_train_batch_size * o.gradient_accumulation_steps);
  rl::MetricMap reported = average_sum_metrics(metrics, backward_steps);
  if (dynamic) reported.merge(dynamic->metrics);
  reported.add("actor/lr", s.strategy->current_lr());
  reported.add("actor/backward_steps", static_cast<double>(backward_steps));
  Batch out;
  out.meta["metrics"] = metrics_to_json(reported);
  return out;
}

Batch ActorTrainer::compute_log_probs(const Batch& batch) {
  Impl& s = *impl_;
  // ROLL under LoRA: the reference log-probs are this model's with the adapters off.
  const bool base_only = batch.meta.is_object() && batch.meta.value("disable_adapter", false);
  model::Transformer& m = s.strategy->model();
  if (base_only && !m.lora())
    throw Error(fmt::format("{}: compute_log_probs with disable_adapter, and the model has no LoRA adapters", s.name));
  struct AdaptersBack {
    model::Transformer& m;
    ~AdaptersBack() { m.set_adapters_enabled(true); }
  } back{m};
  m.set_adapters_enabled(!base_only);
  const MicroBatchRows micro =
      batch.empty() ? MicroBatchRows{}
                    : forward_micro_batches(batch_tensor(batch, "attention_mask", s.name), s.infer_batch_size,
                                            s.infer_budget, s.norm_group.get(), s.name + "/compute_log_probs");
  return forward_log_probs(
      batch, micro,
      [&](const ForwardInputs& in) {
        return log_probs_on_used_columns(
            [&](const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos, const at::Tensor&) {
              // The reference pass needs no entropy.
              return s.strategy->log_probs(ids, mask, pos, /*with_entropy=*/!base_only,
                                           lm_head_chunk_tokens(s.strategy->model().config()));
            },
            in.input_ids, in.attention_mask, in.position_ids);
      },
      s.name);
}

std::string ActorTrainer::save_checkpoint(const std::string& root, int64_t step) {
  return train::save_checkpoint(*impl_->strategy, root, step);
}

void ActorTrainer::load_checkpoint(const std::string& dir) { train::load_checkpoint(*impl_->strategy, dir); }

const std::string& ActorTrainer::name() const { return impl_->name; }
bool ActorTrainer::agentic() const { return impl_->agentic; }
const rl::PolicyLossParams& ActorTrainer::loss_params() const { return impl_->loss; }
train::TrainStrategy& ActorTrainer::strategy() { return *impl_->strategy; }

}  // namespace roll::workers
