#include "roll/workers/mini_batch_steps.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "roll/rl/agg_loss.h"
#include "roll/train/batch_plan.h"
#include "roll/train/strategy.h"
#include "roll/workers/dp_sum.h"

namespace roll::workers {

int64_t run_mini_batch_steps(const MiniBatchSteps& steps, int64_t rows,
                             const std::function<double(const std::vector<int64_t>&)>& local_normaliser,
                             const std::function<at::Tensor(const std::vector<int64_t>&, double)>& micro_loss,
                             rl::MetricMap& metrics) {
  const train::TrainOptions& o = steps.strategy.options();
  const std::vector<train::MiniBatchPlan> plan =
      train::plan_mini_batches(rows, o.per_device_train_batch_size, o.gradient_accumulation_steps, 1, o.seed,
                               /*shuffle=*/false);
  for (const train::MiniBatchPlan& mini : plan) {
    std::vector<int64_t> mini_rows;
    for (const auto& micro : mini.micro_batches) mini_rows.insert(mini_rows.end(), micro.begin(), micro.end());
    const double normaliser = std::max(1.0, dp_sum({local_normaliser(mini_rows)}, steps.norm_group)[0]);
    const int64_t n = static_cast<int64_t>(mini.micro_batches.size());
    const double scale = steps.apply_loss_scale ? rl::loss_scale_factor(n, steps.world) : 1.0;
    const train::StepStats st = steps.strategy.train_step(n, [&](int64_t i) {
      return micro_loss(mini.micro_batches[static_cast<size_t>(i)], normaliser) * scale;
    });
    metrics.add(steps.role + "/grad_norm", st.grad_norm);
  }
  return static_cast<int64_t>(plan.size());
}

}  // namespace roll::workers
