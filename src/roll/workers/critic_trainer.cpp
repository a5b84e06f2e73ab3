#include "roll/workers/critic_trainer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <optional>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"
#include "roll/rl/agg_loss.h"
#include "roll/rl/critic_loss.h"
#include "roll/train/batch_plan.h"
#include "roll/train/checkpoint.h"
#include "roll/train/options_from_config.h"
#include "roll/train/strategy.h"
#include "roll/workers/dp_sum.h"
#include "roll/workers/dynamic_micro_batches.h"
#include "roll/workers/forward_batches.h"
#include "roll/workers/trim_padding.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/role_model.h"

namespace roll::workers {

struct CriticTrainer::Impl {
  std::string name;
  std::optional<double> value_clip;
  int64_t infer_batch_size = 16;
  std::optional<TokenBudget> train_budget, infer_budget;  // dynamic batching, when the role enables it
  int world = 1;
  std::shared_ptr<comm::ProcessGroup> norm_group;
  std::unique_ptr<train::TrainStrategy> strategy;
};

CriticTrainer::CriticTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& critic,
                             const std::string& model_dir, int rank, int world_size,
                             std::shared_ptr<comm::ProcessGroup> group)
    : CriticTrainer(pipeline, critic, model_dir, rank, world_size, group,
                    train::train_options_from_config(pipeline, pipeline.max_grad_norm, critic, world_size, 1)) {}

CriticTrainer::CriticTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& critic,
                             const std::string& model_dir, int rank, int world_size,
                             std::shared_ptr<comm::ProcessGroup> group, train::TrainOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.name = role_name(critic, "critic");
  check_role_rank(s.name, rank, world_size, group);
  if (pipeline.value_clip && *pipeline.value_clip < 0)
    throw ConfigError("value_clip", fmt::format("value_clip must be >= 0, got {}", *pipeline.value_clip));
  s.value_clip = pipeline.value_clip;
  s.infer_batch_size = critic.infer_batch_size;
  s.train_budget = train_token_budget(critic, s.name);
  s.infer_budget = infer_token_budget(critic, s.name);
  s.world = world_size;
  options.ppo_epochs = 1;  // the critic trains one epoch per step (ROLL's CriticWorker.train_step)
  s.strategy = std::make_unique<train::TrainStrategy>(
      load_role_model(model_dir, critic, s.name, /*value_head=*/true, static_cast<uint64_t>(pipeline.seed)),
      std::move(options), group);
  if (group && group->size() > 1) s.norm_group = group->sibling(s.name + ".loss_normalisers");
}

CriticTrainer::~CriticTrainer() = default;

Batch CriticTrainer::compute_values(const Batch& batch) {
  Impl& s = *impl_;
  Batch out(batch.size());
  out.meta["metrics"] = nlohmann::json::object();
  if (batch.empty()) return out;
  const ForwardInputs in = forward_inputs(batch, s.name);
  const MicroBatchRows micro = forward_micro_batches(in.attention_mask, s.infer_batch_size, s.infer_budget,
                                                     s.norm_group.get(), s.name + "/compute_values");
  out.meta["metrics"] = metrics_to_json(micro.metrics);
  at::NoGradGuard no_grad;
  at::Tensor values;
  for (const std::vector<int64_t>& rows : micro.micro_batches) {
    const ForwardInputs part = in.select(rows);
    at::Tensor v = values_on_used_columns(
        [&](const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos) { return s.strategy->values(ids, mask, pos); },
        part.input_ids, part.attention_mask, part.position_ids);
    v = v.slice(1, 0, v.size(1) - 1);
    if (!values.defined()) values = at::zeros({batch.size(), v.size(1)}, v.options());
    values.index_copy_(0, at::tensor(rows, at::TensorOptions().dtype(at::kLong)), v);
  }
  out.set_tensor("values", values);
  return out;
}

Batch CriticTrainer::train_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  check_equal_rows(batch.size(), s.norm_group.get(), role);  // first: a rank-local error would hang the others
  if (batch.empty()) throw Error(fmt::format("{}: train_step got an empty batch", role));
  batch_tensor(batch, "response_mask", role);  // train_step masks with it; no attention_mask fallback
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor m = token_mask(batch, role);
  const at::Tensor old_values = token_tensor(batch, "values", role);
  const at::Tensor returns = token_tensor(batch, "returns", role);

  const train::TrainOptions& o = s.strategy->options();
  std::optional<MicroBatchRows> dynamic;
  if (s.train_budget)
    dynamic = dynamic_micro_batches(in.attention_mask, *s.train_budget, s.norm_group.get(), role + "/train_step");
  const std::vector<train::MiniBatchPlan> plan =
      dynamic ? dynamic_mini_batches(*dynamic, o.gradient_accumulation_steps, 1)
              : train::plan_mini_batches(batch.size(), o.per_device_train_batch_size, o.gradient_accumulation_steps,
                                         1, o.seed);
  rl::MetricMap metrics;
  for (const train::MiniBatchPlan& mini : plan) {
    // ROLL's vf_loss is 0.5·mean_b(masked_mean_t) of each micro-batch. Each micro-batch's mean is
    // weighted by its share of the mini-batch's rows over all ranks, so that with the loss scale
    // the accumulated gradient is that of the mini-batch mean whatever GA and the DP size are.
    int64_t rows = 0;
    for (const auto& micro : mini.micro_batches) rows += static_cast<int64_t>(micro.size());
    const double global_rows = dp_sum({static_cast<double>(rows)}, s.norm_group.get())[0];
    const int64_t n = static_cast<int64_t>(mini.micro_batches.size());
    double scale = rl::loss_scale_factor(n, s.world) / global_rows;
    if (dynamic) scale *= dynamic_accumulation_factor(n, o.gradient_accumulation_steps);
    train::StepStats st = s.strategy->train_step(n, [&](int64_t i) {
      const std::vector<int64_t>& micro = mini.micro_batches[static_cast<size_t>(i)];
      const at::Tensor idx = at::tensor(micro, at::TensorOptions().dtype(at::kLong));
      at::Tensor v = values_on_used_columns(
          [&](const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos) { return s.strategy->values(ids, mask, pos); },
          in.input_ids.index_select(0, idx), in.attention_mask.index_select(0, idx), in.position_ids.index_select(0, idx));
      v = v.slice(1, 0, v.size(1) - 1);
      rl::ValueLossResult r = rl::value_loss(v, old_values.index_select(0, idx), returns.index_select(0, idx),
                                             m.index_select(0, idx), s.value_clip);
      metrics.merge(r.metrics);
      return r.loss * (static_cast<double>(micro.size()) * scale);
    });
    metrics.add(role + "/grad_norm", st.grad_norm);
  }
  metrics.add("critic/lr", s.strategy->current_lr());
  if (dynamic) metrics.merge(dynamic->metrics);
  Batch out;
  out.meta["metrics"] = metrics_to_json(metrics);
  return out;
}

std::string CriticTrainer::save_checkpoint(const std::string& root, int64_t step) {
  return train::save_checkpoint(*impl_->strategy, root, step);
}

void CriticTrainer::load_checkpoint(const std::string& dir) { train::load_checkpoint(*impl_->strategy, dir); }

const std::string& CriticTrainer::name() const { return impl_->name; }
std::optional<double> CriticTrainer::value_clip() const { return impl_->value_clip; }
train::TrainStrategy& CriticTrainer::strategy() { return *impl_->strategy; }

}  // namespace roll::workers
