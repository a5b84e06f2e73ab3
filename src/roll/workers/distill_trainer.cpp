#include "roll/workers/distill_trainer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"
#include "roll/rl/distill_loss.h"
#include "roll/train/checkpoint.h"
#include "roll/train/options_from_config.h"
#include "roll/train/strategy.h"
#include "roll/workers/dp_sum.h"
#include "roll/workers/forward_batches.h"
#include "roll/workers/mini_batch_steps.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/role_model.h"
#include "roll/workers/sft_trainer.h"

namespace roll::workers {

struct DistillTrainer::Impl {
  std::string name;
  double weight = 0.5;  // distill_loss_weight
  double kd_temperature = 1.0, adaptive_kl_alpha = 0.5, skew_lambda = 0.1;
  rl::DistillObjective objective = rl::DistillObjective::forward_kl;
  int64_t infer_batch_size = 1;
  int world = 1;
  std::shared_ptr<comm::ProcessGroup> norm_group;
  std::unique_ptr<train::TrainStrategy> strategy;

  struct Sums {
    at::Tensor ce, kd;  // summed over the trained positions of the rows
  };
  // The batch's `rows`: their cross-entropy and divergence sums.
  Sums sums(const Batch& batch, const ForwardInputs& in, const at::Tensor& labels, const std::vector<int64_t>& rows) {
    const at::Tensor idx = row_index(rows);
    const at::Tensor l = labels.index_select(0, idx);
    const at::Tensor where = l != kIgnoreIndex;
    const ForwardInputs part = in.select(rows);
    const at::Tensor logits = strategy->logits_at(part.input_ids, part.attention_mask, part.position_ids, where);
    const at::Tensor targets = l.index({where});
    Sums s;
    s.ce = -at::log_softmax(logits, -1).gather(1, targets.unsqueeze(1)).squeeze(1).sum();
    rl::TeacherTopK teacher;
    teacher.log_probs = batch.tensor("teacher_log_probs").index_select(0, idx).index({where});
    teacher.inf_mask = batch.tensor("teacher_inf_mask").index_select(0, idx).index({where}).to(at::kBool);
    if (batch.has_tensor("teacher_indices"))
      teacher.indices = batch.tensor("teacher_indices").index_select(0, idx).index({where});
    s.kd = rl::distill_divergence(logits, teacher, kd_temperature, objective, adaptive_kl_alpha, skew_lambda).sum();
    return s;
  }
};

DistillTrainer::DistillTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker,
                               const std::string& model_dir, int rank, int world_size,
                               std::shared_ptr<comm::ProcessGroup> group)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.name = role_name(worker, "student");
  check_role_rank(s.name, rank, world_size, group);
  if (worker.use_dynamic_batching_in_train)
    throw NotSupportedError(s.name + ".use_dynamic_batching_in_train: true (dynamic batching in distillation)");
  s.weight = pipeline.distill_loss_weight;
  s.kd_temperature = pipeline.kd_temperature;
  s.adaptive_kl_alpha = pipeline.adaptive_kl_alpha;
  s.skew_lambda = pipeline.skew_lambda;
  s.objective = rl::parse_distill_objective(pipeline.kd_objective);
  s.infer_batch_size = std::max<int64_t>(1, worker.infer_batch_size);
  s.world = world_size;
  train::TrainOptions options = train::train_options_from_config(pipeline, pipeline.max_grad_norm, worker, world_size, 1);
  options.ppo_epochs = 1;
  s.strategy =
      std::make_unique<train::TrainStrategy>(load_role_model(model_dir, worker, s.name), std::move(options), group);
  if (group && group->size() > 1) s.norm_group = group->sibling(s.name + ".loss_normalisers");
}

DistillTrainer::~DistillTrainer() = default;

Batch DistillTrainer::train_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  check_equal_rows(batch.size(), s.norm_group.get(), role);
  if (batch.empty()) throw Error(fmt::format("{}: train_step got an empty batch", role));
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor labels = batch_tensor(batch, "labels", role).to(at::kLong);
  batch_tensor(batch, "teacher_log_probs", role);  // names the missing tensor before any collective

  rl::MetricMap metrics;
  // Each mini-batch's loss is over its trained tokens on all ranks.
  const int64_t steps = run_mini_batch_steps(
      {*s.strategy, s.norm_group.get(), s.world, true, role}, batch.size(),
      [&](const std::vector<int64_t>& rows) {
        return (labels.index_select(0, row_index(rows)) != kIgnoreIndex).sum().item<double>();
      },
      [&](const std::vector<int64_t>& rows, double tokens) {
        const Impl::Sums sum = s.sums(batch, in, labels, rows);
        const at::Tensor loss = ((1.0 - s.weight) * sum.ce + s.weight * sum.kd) / tokens;
        metrics.add("train/loss@sum", loss.item<double>());
        metrics.add("train/train_student_loss@sum", sum.ce.item<double>() / tokens);
        metrics.add("train/train_distill_loss@sum", sum.kd.item<double>() / tokens);
        return loss;
      },
      metrics);
  rl::MetricMap reported = average_sum_metrics(metrics, steps);
  reported.add(role + "/lr", s.strategy->current_lr());
  Batch out;
  out.meta["metrics"] = metrics_to_json(reported);
  return out;
}

Batch DistillTrainer::val_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  if (batch.empty()) throw Error(fmt::format("{}: val_step got an empty batch", role));
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor labels = batch_tensor(batch, "labels", role).to(at::kLong);
  const double tokens =
      std::max(1.0, dp_sum({(labels != kIgnoreIndex).sum().item<double>()}, s.norm_group.get())[0]);
  at::NoGradGuard no_grad;
  rl::MetricMap metrics;
  for (const auto& micro : fixed_micro_batches(batch.size(), s.infer_batch_size).micro_batches) {
    const Impl::Sums sum = s.sums(batch, in, labels, micro);
    metrics.add(role + "/val_loss@sum", sum.ce.item<double>() / tokens);
    metrics.add(role + "/val_distill_loss@sum", sum.kd.item<double>() / tokens);
  }
  Batch out;
  out.meta["metrics"] = metrics_to_json(metrics);
  return out;
}

std::string DistillTrainer::save_checkpoint(const std::string& root, int64_t step) {
  return train::save_checkpoint(*impl_->strategy, root, step);
}

void DistillTrainer::load_checkpoint(const std::string& dir) { train::load_checkpoint(*impl_->strategy, dir); }

const std::string& DistillTrainer::name() const { return impl_->name; }
train::TrainStrategy& DistillTrainer::strategy() { return *impl_->strategy; }

}  // namespace roll::workers
