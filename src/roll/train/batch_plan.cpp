#include "roll/train/batch_plan.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <numeric>

#include "roll/core/error.h"

namespace roll::train {

std::vector<MiniBatchPlan> plan_mini_batches(int64_t rows, int64_t micro, int64_t ga, int64_t epochs, uint64_t seed,
                                             bool shuffle) {
  if (micro < 1 || ga < 1 || epochs < 1)
    throw Error("plan_mini_batches: per_device_train_batch_size, gradient_accumulation_steps and ppo_epochs must "
                "be >= 1");
  std::vector<MiniBatchPlan> plan;
  if (rows <= 0) return plan;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const int64_t mini = micro * ga;
  for (int64_t e = 0; e < epochs; ++e) {
    std::vector<int64_t> order(static_cast<size_t>(rows));
    if (shuffle) {
      at::empty({}, at::kLong).random_(gen);  // DataLoader iterator's _base_seed
      at::Tensor perm = at::randperm(rows, gen, at::kLong);
      at::randperm(rows, gen, at::kLong);  // RandomSampler's trailing randperm(n)[:0] at exhaustion
      std::copy(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + rows, order.begin());
    } else {
      std::iota(order.begin(), order.end(), 0);
    }
    for (int64_t s = 0; s < rows; s += mini) {
      MiniBatchPlan mb;
      const int64_t end = std::min(rows, s + mini);
      for (int64_t m = s; m < end; m += micro)
        mb.micro_batches.emplace_back(order.begin() + m, order.begin() + std::min(end, m + micro));
      plan.push_back(std::move(mb));
    }
  }
  return plan;
}

}  // namespace roll::train
