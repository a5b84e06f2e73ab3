#include "roll/workers/sft_trainer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"
#include "roll/train/checkpoint.h"
#include "roll/train/options_from_config.h"
#include "roll/train/strategy.h"
#include "roll/workers/dp_sum.h"
#include "roll/workers/forward_batches.h"
#include "roll/workers/mini_batch_steps.h"
#include "roll/workers/metrics_json.h"
#include "roll/workers/role_model.h"
#include "roll/workers/trim_padding.h"

namespace roll::workers {
namespace {

// [B, S-1] float mask of the trained positions: labels[:, t] != -100 for t < S-1. The labels must be
// the shifted tokens (labels[:, t] == input_ids[:, t+1]) inside the attention mask and -100 in the
// last column, since the loss reads the log-prob of input_ids[:, t+1]; anything else is an error
// naming the first offending row and column.
at::Tensor label_mask(const Batch& batch, const ForwardInputs& in, const std::string& role) {
  const at::Tensor labels = batch_tensor(batch, "labels", role).to(at::kLong);
  if (!labels.sizes().equals(in.input_ids.sizes()))
    throw Error(fmt::format("{}: labels has shape {}, input_ids {}", role, c10::str(labels.sizes()),
                            c10::str(in.input_ids.sizes())));
  const int64_t S = labels.size(1);
  const at::Tensor head = labels.slice(1, 0, S - 1);
  const at::Tensor m = head != kIgnoreIndex;
  at::Tensor bad = m & ((head != in.input_ids.slice(1, 1, S).to(at::kLong)) | (in.attention_mask.slice(1, 1, S) == 0));
  bad = at::cat({bad, labels.slice(1, S - 1, S) != kIgnoreIndex}, 1);
  if (bad.any().item<bool>()) {
    const at::Tensor where = at::nonzero(bad)[0];
    const int64_t r = where[0].item<int64_t>(), t = where[1].item<int64_t>();
    throw Error(fmt::format(
        "{}: labels[{}][{}] = {} is not the next attended token ({}): labels must be input_ids "
        "shifted left by one (ROLL's DataCollatorForSFT) with {} elsewhere",
        role, r, t, labels[r][t].item<int64_t>(),
        t + 1 < S ? std::to_string(in.input_ids[r][t + 1].item<int64_t>()) : "none past the end", kIgnoreIndex));
  }
  return m.to(at::kFloat);
}

ForwardInputs select_rows(const ForwardInputs& in, const at::Tensor& idx) {
  return {in.input_ids.index_select(0, idx), in.attention_mask.index_select(0, idx),
          in.position_ids.index_select(0, idx)};
}


}  // namespace

struct SftTrainer::Impl {
  std::string name;
  bool apply_loss_scale = true;
  int64_t infer_batch_size = 16;
  int world = 1;
  std::shared_ptr<comm::ProcessGroup> norm_group;  // a sibling of the gradient group: its own stream
  std::unique_ptr<train::TrainStrategy> strategy;

  // Σ -log p(input_ids[t+1]) over the positions of `m` [b, S-1]; the LM head runs on those rows only.
  at::Tensor summed_nll(const ForwardInputs& in, const at::Tensor& m) {
    model::TokenLogProbs fwd = log_probs_on_used_columns(
        [&](const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos, const at::Tensor& needed) {
          return strategy->log_probs(ids, mask, pos, /*with_entropy=*/false,
                                     lm_head_chunk_tokens(strategy->model().config()), needed);
        },
        in.input_ids, in.attention_mask, in.position_ids, m);
    return -(fwd.log_probs * m).sum();
  }
};

SftTrainer::SftTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker,
                       const std::string& model_dir, int rank, int world_size,
                       std::shared_ptr<comm::ProcessGroup> group)
    : SftTrainer(pipeline, worker, model_dir, rank, world_size, group,
                 train::train_options_from_config(pipeline, pipeline.max_grad_norm, worker, world_size, 1)) {}

SftTrainer::SftTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker,
                       const std::string& model_dir, int rank, int world_size,
                       std::shared_ptr<comm::ProcessGroup> group, train::TrainOptions options)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.name = role_name(worker, "sft_train");
  check_role_rank(s.name, rank, world_size, group);
  // ROLL's SFT pipeline plans no dynamic micro-batches for its strategy to follow.
  if (worker.use_dynamic_batching_in_train)
    throw NotSupportedError(s.name + ".use_dynamic_batching_in_train: true (dynamic batching in SFT)");
  s.apply_loss_scale = worker.apply_loss_scale;
  s.infer_batch_size = worker.infer_batch_size;
  s.world = world_size;
  options.ppo_epochs = 1;  // one pass over the rows per train_step (SFTWorker hands the batch to the strategy)
  s.strategy =
      std::make_unique<train::TrainStrategy>(load_role_model(model_dir, worker, s.name), std::move(options), group);
  if (group && group->size() > 1) s.norm_group = group->sibling(s.name + ".loss_normalisers");
}

SftTrainer::~SftTrainer() = default;

Batch SftTrainer::train_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  check_equal_rows(batch.size(), s.norm_group.get(), role);  // first: a rank-local error would hang the others
  if (batch.empty()) throw Error(fmt::format("{}: train_step got an empty batch", role));
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor m = label_mask(batch, in, role);

  rl::MetricMap metrics;
  // Each mini-batch's loss is over its label tokens on all ranks.
  const int64_t steps = run_mini_batch_steps(
      {*s.strategy, s.norm_group.get(), s.world, s.apply_loss_scale, role}, batch.size(),
      [&](const std::vector<int64_t>& rows) { return m.index_select(0, row_index(rows)).sum().item<double>(); },
      [&](const std::vector<int64_t>& rows, double tokens) {
        const at::Tensor idx = row_index(rows);
        at::Tensor loss = s.summed_nll(select_rows(in, idx), m.index_select(0, idx)) / tokens;
        metrics.add(role + "/loss@sum", loss.item<double>());
        return loss;
      },
      metrics);
  rl::MetricMap reported = average_sum_metrics(metrics, steps);
  reported.add(role + "/lr", s.strategy->current_lr());
  Batch out;
  out.meta["metrics"] = metrics_to_json(reported);
  return out;
}

Batch SftTrainer::val_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  if (batch.empty()) throw Error(fmt::format("{}: val_step got an empty batch", role));
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor m = label_mask(batch, in, role);
  const double tokens = std::max(1.0, dp_sum({m.sum().item<double>()}, s.norm_group.get())[0]);
  at::NoGradGuard no_grad;
  rl::MetricMap metrics;
  for (const auto& [b, e] : infer_micro_batches(batch.size(), s.infer_batch_size))
    metrics.add(role + "/loss@sum", s.summed_nll(in.rows(b, e), m.slice(0, b, e)).item<double>() / tokens);
  Batch out;
  out.meta["metrics"] = metrics_to_json(metrics);
  return out;
}

std::string SftTrainer::save_checkpoint(const std::string& root, int64_t step) {
  return train::save_checkpoint(*impl_->strategy, root, step);
}

void SftTrainer::load_checkpoint(const std::string& dir) { train::load_checkpoint(*impl_->strategy, dir); }

const std::string& SftTrainer::name() const { return impl_->name; }
train::TrainStrategy& SftTrainer::strategy() { return *impl_->strategy; }

}  // namespace roll::workers
