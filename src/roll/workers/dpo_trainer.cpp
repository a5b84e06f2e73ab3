#include "roll/workers/dpo_trainer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>

#include "roll/comm/process_group.h"
#include "roll/core/error.h"
#include "roll/rl/dpo_loss.h"
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


// Rows come in pairs (chosen, rejected): a slice of rows must start on a pair and hold whole ones.
void check_whole_pairs(const std::vector<int64_t>& rows, const std::string& role, const char* what) {
  if (rows.empty() || rows.size() % 2 != 0 || rows.front() % 2 != 0)
    throw Error(fmt::format("{}: a {} of {} row(s) from row {} splits a preference pair (rows 2i and 2i+1): "
                            "per_device_train_batch_size and infer_batch_size count pairs and are doubled into rows",
                            role, what, rows.size(), rows.empty() ? 0 : rows.front()));
}

}  // namespace

struct DpoTrainer::Impl {
  std::string name;
  rl::DpoLossOptions loss;
  int64_t infer_batch_size = 2;
  int world = 1;
  std::shared_ptr<comm::ProcessGroup> norm_group;  // a sibling of the gradient group: its own stream
  std::unique_ptr<train::TrainStrategy> strategy;

  // Σ log p over each row's response tokens (m: [b, S-1]), [b].
  at::Tensor sequence_log_probs(const ForwardInputs& in, const at::Tensor& m) {
    model::TokenLogProbs fwd = log_probs_on_used_columns(
        [&](const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos, const at::Tensor& needed) {
          return strategy->log_probs(ids, mask, pos, /*with_entropy=*/false,
                                     lm_head_chunk_tokens(strategy->model().config()), needed);
        },
        in.input_ids, in.attention_mask, in.position_ids, m);
    return (fwd.log_probs * m).sum(1);
  }

  // The DPO loss of the pairs in `rows` (whole pairs, batch order).
  rl::DpoLoss pair_loss(const ForwardInputs& in, const at::Tensor& m, const at::Tensor& ref,
                        const std::vector<int64_t>& rows) {
    const at::Tensor idx = row_index(rows);
    const at::Tensor policy = sequence_log_probs(in.select(rows), m.index_select(0, idx));
    const at::Tensor reference = ref.index_select(0, idx).to(policy.scalar_type());
    return rl::dpo_loss(policy.slice(0, 0, policy.size(0), 2), policy.slice(0, 1, policy.size(0), 2),
                        reference.slice(0, 0, reference.size(0), 2), reference.slice(0, 1, reference.size(0), 2), loss);
  }
};

namespace {

void add_pair_metrics(rl::MetricMap& metrics, const std::string& prefix, const rl::DpoLoss& l) {
  metrics.add(prefix + "loss", l.losses.detach().mean().item<double>());
  metrics.add(prefix + "acc", (l.chosen_rewards > l.rejected_rewards).to(at::kDouble).mean().item<double>());
  metrics.add(prefix + "chosen_reward", l.chosen_rewards.mean().item<double>());
  metrics.add(prefix + "reject_reward", l.rejected_rewards.mean().item<double>());
}

// [2P] reference sequence log-probs: ref_log_probs summed over the response tokens.
at::Tensor reference_sequence_log_probs(const Batch& batch, const at::Tensor& m, const std::string& role) {
  return (token_tensor(batch, "ref_log_probs", role) * m).sum(1).to(at::kDouble);
}

}  // namespace

DpoTrainer::DpoTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker,
                       const std::string& model_dir, int rank, int world_size,
                       std::shared_ptr<comm::ProcessGroup> group)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.name = role_name(worker, "actor_train");
  check_role_rank(s.name, rank, world_size, group);
  if (worker.use_dynamic_batching_in_train)
    throw NotSupportedError(s.name + ".use_dynamic_batching_in_train: true (dynamic batching splits DPO's pairs)");
  s.loss = rl::DpoLossOptions{pipeline.beta, pipeline.label_smoothing, pipeline.ipo};
  s.infer_batch_size = worker.infer_batch_size;
  s.world = world_size;
  train::TrainOptions options = train::train_options_from_config(pipeline, pipeline.max_grad_norm, worker, world_size, 1);
  options.ppo_epochs = 1;  // one pass over the pairs per train_step
  s.strategy =
      std::make_unique<train::TrainStrategy>(load_role_model(model_dir, worker, s.name), std::move(options), group);
  if (group && group->size() > 1) s.norm_group = group->sibling(s.name + ".pair_counts");
}

DpoTrainer::~DpoTrainer() = default;

Batch DpoTrainer::train_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  check_equal_rows(batch.size(), s.norm_group.get(), role);  // first: a rank-local error would hang the others
  if (batch.empty() || batch.size() % 2 != 0)
    throw Error(fmt::format("{}: train_step needs whole preference pairs, got {} row(s)", role, batch.size()));
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor m = token_mask(batch, role);
  const at::Tensor ref = reference_sequence_log_probs(batch, m, role);

  rl::MetricMap metrics;
  // Each mini-batch's loss is the mean over its pairs on all ranks.
  run_mini_batch_steps(
      {*s.strategy, s.norm_group.get(), s.world, true, role}, batch.size(),
      [&](const std::vector<int64_t>& rows) { return static_cast<double>(rows.size() / 2); },
      [&](const std::vector<int64_t>& rows, double pairs) {
        check_whole_pairs(rows, role, "micro-batch");
        const rl::DpoLoss l = s.pair_loss(in, m, ref, rows);
        add_pair_metrics(metrics, "actor/", l);
        return l.losses.sum() / pairs;
      },
      metrics);
  metrics.add("actor/lr", s.strategy->current_lr());
  Batch out;
  out.meta["metrics"] = metrics_to_json(metrics);
  return out;
}

Batch DpoTrainer::val_step(const Batch& batch) {
  Impl& s = *impl_;
  const std::string& role = s.name;
  if (batch.empty() || batch.size() % 2 != 0)
    throw Error(fmt::format("{}: val_step needs whole preference pairs, got {} row(s)", role, batch.size()));
  const ForwardInputs in = forward_inputs(batch, role);
  const at::Tensor m = token_mask(batch, role);
  const at::Tensor ref = reference_sequence_log_probs(batch, m, role);
  at::NoGradGuard no_grad;
  rl::MetricMap metrics;
  for (const auto& micro : fixed_micro_batches(batch.size(), s.infer_batch_size).micro_batches) {
    check_whole_pairs(micro, role, "validation micro-batch");
    add_pair_metrics(metrics, "actor/", s.pair_loss(in, m, ref, micro));
  }
  Batch out;
  out.meta["metrics"] = metrics_to_json(metrics);
  return out;
}

std::string DpoTrainer::save_checkpoint(const std::string& root, int64_t step) {
  return train::save_checkpoint(*impl_->strategy, root, step);
}

void DpoTrainer::load_checkpoint(const std::string& dir) { train::load_checkpoint(*impl_->strategy, dir); }

const std::string& DpoTrainer::name() const { return impl_->name; }
train::TrainStrategy& DpoTrainer::strategy() { return *impl_->strategy; }

}  // namespace roll::workers
