// Data parallel and ZeRO over two real Gloo processes against one process with the whole batch.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "multiprocess.h"
#include "roll/train/strategy.h"
#include "train_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

constexpr int64_t kRows = 8, kT = 12, kVocab = 96;

struct RunSpec {
  int stage = 0;
  std::string optimizer = "sgd";
  bool gc = true;
  int64_t steps = 5;
  int64_t ga = 2;
  double lr = 0.1;
  double eps = 1e-6;  // see ParametersAfterFiveSteps...: AdamW's default 1e-8 amplifies rounding noise
};

std::string name_of(const RunSpec& r) {
  return fmt::format("{} stage {} gc {} ga {}", r.optimizer, r.stage, r.gc, r.ga);
}

train::TrainOptions options_of(const RunSpec& r) {
  train::TrainOptions o;
  o.optimizer = r.optimizer;
  o.learning_rate = r.lr;
  o.lr_scheduler_type = "constant";
  o.weight_decay = r.optimizer == "adamw" ? 0.01 : 0.0;
  o.adam_epsilon = r.eps;
  o.gradient_accumulation_steps = r.ga;
  o.zero_stage = r.stage;
  o.gradient_checkpointing = r.gc;
  o.max_grad_norm = 1.0;  // the tiny model's norm is above 1: the distributed clip is exercised
  o.total_steps = r.steps;
  return o;
}

// `steps` optimizer steps; rank r of `world` trains on its contiguous share of each batch.
model::NamedTensors train_run(const RunSpec& r, std::shared_ptr<comm::ProcessGroup> pg) {
  const int world = pg ? pg->size() : 1, rank = pg ? pg->rank() : 0;
  train::TrainStrategy s(tiny_model(), options_of(r), pg);
  for (int64_t step = 0; step < r.steps; ++step) {
    TokenBatch full = make_batch(kRows, kT, kVocab, 100 + step);
    const double tokens = full.loss_mask.sum().item<double>();
    const int64_t share = kRows / world, micro = share / r.ga;
    TokenBatch mine = full.rows(rank * share, (rank + 1) * share);
    s.train_step(r.ga, [&](int64_t i) { return micro_loss(s, mine.rows(i * micro, (i + 1) * micro), tokens, r.ga, world); });
  }
  return s.full_parameters();
}

model::NamedTensors gradients(int stage, bool gc, std::shared_ptr<comm::ProcessGroup> pg) {
  const int world = pg ? pg->size() : 1, rank = pg ? pg->rank() : 0;
  RunSpec r;
  r.stage = stage;
  r.gc = gc;
  r.ga = 1;
  train::TrainStrategy s(tiny_model(), options_of(r), pg);
  TokenBatch full = make_batch(kRows, kT, kVocab, 100);
  const double tokens = full.loss_mask.sum().item<double>();
  const int64_t share = kRows / world;
  s.backward(micro_loss(s, full.rows(rank * share, (rank + 1) * share), tokens, 1, world));
  return s.reduced_gradients();
}

}  // namespace

TEST(TrainDataParallel, AllReducedGradientsEqualSingleProcess) {
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    auto pg = child_group(*ctx);
    const auto ref = gradients(0, true, nullptr);
    for (int stage : {0, 1, 2, 3})
      for (bool gc : {true, false}) {
        const auto got = gradients(stage, gc, pg);
        ASSERT_EQ(got.size(), ref.size());
        for (size_t k = 0; k < ref.size(); ++k) {
          ASSERT_EQ(got[k].first, ref[k].first);
          // fp32: ~sqrt(96 tokens)·eps per reduction through ~8 chained reductions of 2 layers -> 1e-5.
          EXPECT_LE(rel_diff(got[k].second, ref[k].second), 1e-5)
              << "stage " << stage << " gc " << gc << " " << ref[k].first;
        }
      }
    return;
  }
  expect_all_ok(run_ranks(2, 90));
}

TEST(TrainDataParallel, ParametersAfterFiveStepsMatchSingleProcessForEveryStage) {
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    auto pg = child_group(*ctx);
    for (std::string opt : {"sgd", "adamw"}) {
      RunSpec base;
      base.optimizer = opt;
      base.lr = opt == "sgd" ? 0.1 : 1e-2;
      const auto ref = train_run(base, nullptr);
      // SGD: per step |Δw| ≤ lr·‖Δg‖₂ ≤ lr·1e-5·max_grad_norm (the fp32 bound above), +1e-6 rounding |w| < 4.
      // AdamW: a step is lr·g/eps where |g| ≲ eps = 1e-6; fp32 noise √96·eps·|g|rms(3e-3) ≈ 3e-9 -> 3e-3·lr.
      const double tol = opt == "sgd" ? 1e-6 + 1e-5 * base.lr * base.steps : 1e-6 + 3e-3 * base.lr * base.steps;
      const auto start = tiny_model()->named_parameters();
      EXPECT_GT(max_abs_diff(ref[1].second, start[1].second), 100 * tol) << "the reference did not train";
      for (int stage : {0, 1, 2, 3})
        for (bool gc : {true, false}) {
          if (gc == false && (stage == 1 || stage == 2)) continue;  // checkpointing only matters at 0 and 3
          RunSpec r = base;
          r.stage = stage;
          r.gc = gc;
          const auto got = train_run(r, pg);
          double worst = 0;
          std::string where;
          for (size_t k = 0; k < ref.size(); ++k) {
            const double d = max_abs_diff(got[k].second, ref[k].second);
            if (d > worst) worst = d, where = ref[k].first;
          }
          EXPECT_LE(worst, tol) << name_of(r) << ": worst " << where;
        }
    }
    // AdamW at its default eps = 1e-8 divides by sqrt(v) ~ |g|, so elements whose gradient is a
    // near-cancellation (k_proj.bias's is exactly 0 in exact arithmetic: softmax ignores a shift of
    // the keys) move by ~lr in the direction of their rounding noise. Any change of summation order
    // does that: one process with GA 4 instead of 2 differs from GA 2 by ~2.4e-4 here, above the
    // 3e-3·lr·steps of eps 1e-6. So at eps 1e-8 data parallel must stay within that single-process
    // noise floor; the strict tolerance above holds at eps 1e-6.
    RunSpec strict;
    strict.optimizer = "adamw";
    strict.lr = 1e-2;
    strict.eps = 1e-8;
    const auto ref = train_run(strict, nullptr);
    RunSpec reordered = strict;
    reordered.ga = 4;
    const auto other = train_run(reordered, nullptr);
    double noise = 0;
    for (size_t k = 0; k < ref.size(); ++k) noise = std::max(noise, max_abs_diff(other[k].second, ref[k].second));
    for (int stage : {0, 3}) {
      RunSpec r = strict;
      r.stage = stage;
      const auto got = train_run(r, pg);
      double worst = 0;
      for (size_t k = 0; k < ref.size(); ++k) worst = std::max(worst, max_abs_diff(got[k].second, ref[k].second));
      EXPECT_LE(worst, 2 * noise + 1e-6 + 1e-3 * strict.lr * strict.steps)
          << "stage " << stage << " at eps 1e-8; single-process reorder noise " << noise;
    }
    return;
  }
  expect_all_ok(run_ranks(2, 120));
}
