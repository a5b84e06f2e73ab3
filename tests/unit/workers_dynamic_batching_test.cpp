// Dynamic batching in the workers (use_dynamic_batching_in_train / _in_infer): the token-budget plan
// over a rank's rows, and the trainers and forward passes run on it against the same roles with the
// fixed per_device_train_batch_size / infer_batch_size split. The losses use global normalisers, so
// on the same samples in one optimizer step the two splits train alike up to fp32 summation order.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <set>

#include "multiprocess.h"
#include "roll/core/error.h"
#include "roll/train/strategy.h"
#include "roll/workers/actor_trainer.h"
#include "roll/workers/critic_trainer.h"
#include "roll/workers/dynamic_micro_batches.h"
#include "roll/workers/reference_model.h"
#include "workers_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

constexpr uint64_t kSeed = 42, kDataSeed = 5;
constexpr int64_t kEpochs = 2;
// Small enough that the policy ratios of the second epoch stay far from the PPO clip edges, where
// rounding could flip a token between the clipped and unclipped branches.
constexpr double kLr = 0.01;
// Log-probs from two fp32 forwards in other GEMM shapes (micro-batches, used columns), each within
// 1.2e-5 of the exact value (WorkersActorLogProbs: √16·√64·2^-24 relative on logits |z| ≲ 3): 3e-5
// apart at most.
constexpr double kForwardTol = 3e-5;

std::string write_model(const std::string& dir) {
  tiny_model(at::kFloat, 11)->save(dir);
  return dir;
}

config::PipelineConfig actor_config() {
  config::PipelineConfig p;
  p.kind = config::PipelineKind::rlvr;
  p.seed = static_cast<int64_t>(kSeed);
  p.ppo_epochs = kEpochs;
  p.loss_agg_mode = "seq-mean-token-mean";
  p.use_kl_loss = true;
  p.kl_loss_coef = 0.1;
  p.entropy_loss_coef = 0.01;
  p.actor_train.name = "actor_train";
  p.actor_train.model_args.dtype = "fp32";
  p.actor_train.infer_batch_size = 3;
  return p;
}

void enable_train(config::WorkerConfig& w, int64_t max_tokens, int64_t round) {
  w.use_dynamic_batching_in_train = true;
  w.max_tokens_per_microbatch_in_train = max_tokens;
  w.sequence_length_round_in_train = round;
}

void enable_infer(config::WorkerConfig& w, int64_t max_tokens, int64_t round) {
  w.use_dynamic_batching_in_infer = true;
  w.max_tokens_per_microbatch_in_infer = max_tokens;
  w.sequence_length_round_in_infer = round;
}

// rows / (micro x ga) mini-batches: with micro x ga = the rank's rows, one optimizer step per epoch
// in either split.
train::TrainOptions sgd_options(int64_t micro, int64_t ga, int64_t epochs, int stage = 0) {
  train::TrainOptions o;
  o.optimizer = "sgd";
  o.learning_rate = kLr;
  o.lr_scheduler_type = "constant";
  o.per_device_train_batch_size = micro;
  o.gradient_accumulation_steps = ga;
  o.ppo_epochs = epochs;
  o.seed = kSeed;
  o.max_grad_norm = 1.0;
  o.zero_stage = stage;
  o.gradient_checkpointing = true;
  o.total_steps = 8;
  return o;
}

struct TrainResult {
  std::map<std::string, double> metrics;
  model::NamedTensors params;
};

TrainResult train_actor(const config::PipelineConfig& p, const std::string& dir, const Batch& batch,
                        const train::TrainOptions& o, int rank = 0, int world = 1,
                        std::shared_ptr<comm::ProcessGroup> pg = nullptr) {
  workers::ActorTrainer actor(p, p.actor_train, dir, rank, world, pg, o);
  const Batch out = actor.train_step(batch);
  return {workers::metrics_from_json(out.meta.at("metrics")).reduce(), actor.strategy().full_parameters()};
}

// SGD with the gradient clipped to norm <= 1: per step |Δw| <= lr·‖Δg‖ <= lr·1e-5 for the fp32
// gradient bound of train_grad_accumulation (each gradient entry sums ~150 response tokens per
// layer over other micro-batch groupings: ~sqrt(150)·2^-24 ≈ 7e-7 relative per reduction, through
// the ~8 chained reductions of the 2-layer model -> 1e-5), +1e-6 for rounding |w| < 4.
double sgd_param_tol(int64_t steps) { return 1e-6 + 1e-5 * kLr * static_cast<double>(steps); }

void expect_same_training(const TrainResult& dynamic, const TrainResult& fixed, int64_t steps,
                          const model::NamedTensors& initial) {
  // The summed losses add the same per-token terms over the same global normalisers: a few ulp of
  // |loss| ≲ 3 per term, over ~150 terms in another order -> 1e-5 relative, 3e-7 absolute floor.
  for (const char* key : {"actor/pg_loss@sum", "actor/kl_loss@sum", "actor/total_loss@sum", "actor/entropy_loss@sum"}) {
    ASSERT_TRUE(fixed.metrics.count(key)) << key;
    ASSERT_TRUE(dynamic.metrics.count(key)) << key;
    EXPECT_LE(std::abs(dynamic.metrics.at(key) - fixed.metrics.at(key)), 1e-5 * std::abs(fixed.metrics.at(key)) + 3e-7)
        << key << ": dynamic " << dynamic.metrics.at(key) << ", fixed " << fixed.metrics.at(key);
  }
  // The ratios never reach the clip edges, so both splits take the same branches everywhere.
  EXPECT_EQ(fixed.metrics.at("actor/ppo_ratio_clipfrac@sum"), 0.0);
  EXPECT_EQ(dynamic.metrics.at("actor/ppo_ratio_clipfrac@sum"), 0.0);
  EXPECT_EQ(dynamic.metrics.at("actor/backward_steps"), fixed.metrics.at("actor/backward_steps"));
  std::string where;
  const double tol = sgd_param_tol(steps);
  EXPECT_LE(worst_param_diff(dynamic.params, fixed.params, &where), tol) << "parameters, worst at " << where;
  EXPECT_GT(max_abs_diff(fixed.params[1].second, initial[1].second), 10 * tol) << "the actor did not train";
}

}  // namespace

TEST(WorkersDynamicBatching, PlanSortsTheRowsUnderTheBudgetAndCountsThePadding) {
  // Lengths 24, 21, 18, 15 twice over 24 columns; budget 48 tokens, lengths rounded to 4: the
  // sorted lengths 15 15 | 18 18 | 21 21 | 24 24 pad to 16, 20, 24, 24 (2 rows each: 32, 40, 48, 48).
  at::Tensor mask = at::zeros({8, 24}, at::kLong);
  for (int64_t r = 0; r < 8; ++r) mask[r].slice(0, 0, 24 - (r % 4) * 3).fill_(1);
  const workers::TokenBudget budget{48, 4, "actor_train.max_tokens_per_microbatch_in_train"};
  const workers::MicroBatchRows plan = workers::dynamic_micro_batches(mask, budget, nullptr, "actor_train/train_step");
  EXPECT_EQ(plan.micro_batches, (std::vector<std::vector<int64_t>>{{3, 7}, {2, 6}, {1, 5}, {0, 4}}));
  const auto m = plan.metrics.reduce();
  const std::string p = "dynamic_batching/actor_train/train_step/";
  EXPECT_DOUBLE_EQ(m.at(p + "valid_tokens@sum"), 156);
  EXPECT_DOUBLE_EQ(m.at(p + "actual_tokens_origin@sum"), 192);
  EXPECT_DOUBLE_EQ(m.at(p + "actual_tokens@sum"), 168);
  EXPECT_DOUBLE_EQ(m.at(p + "removed_padding_tokens@sum"), 24);
  EXPECT_DOUBLE_EQ(m.at(p + "removed_padding_ratio"), 24.0 / 192.0);

  // ga consecutive micro-batches per step, the same steps every epoch (no shuffle).
  const auto steps = workers::dynamic_mini_batches(plan, 3, 2);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].micro_batches.size(), 3u);
  EXPECT_EQ(steps[1].micro_batches, (std::vector<std::vector<int64_t>>{{0, 4}}));
  EXPECT_EQ(steps[2].micro_batches, steps[0].micro_batches);

  // A sequence the budget cannot hold names the key.
  const workers::TokenBudget small{20, 4, "critic.max_tokens_per_microbatch_in_train"};
  try {
    workers::dynamic_micro_batches(mask, small, nullptr, "critic/train_step");
    ADD_FAILURE() << "a 24-token sequence fit a 20-token budget";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("critic.max_tokens_per_microbatch_in_train"), std::string::npos) << e.what();
  }
}

TEST(WorkersDynamicBatching, BudgetsComeFromTheWorkerConfigAndNameTheirKeys) {
  config::WorkerConfig w;
  EXPECT_FALSE(workers::train_token_budget(w, "actor_train"));
  EXPECT_FALSE(workers::infer_token_budget(w, "actor_train"));
  w.use_dynamic_batching_in_infer = true;  // ROLL's default budget: none
  try {
    workers::infer_token_budget(w, "reference");
    ADD_FAILURE() << "dynamic batching without a budget was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "reference.max_tokens_per_microbatch_in_infer");
  }
  enable_train(w, 8192, 128);
  const auto b = workers::train_token_budget(w, "critic");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->max_tokens, 8192);
  EXPECT_EQ(b->round, 128);
  enable_train(w, 8192, 0);
  EXPECT_THROW(workers::train_token_budget(w, "critic"), ConfigError);
}

TEST(WorkersDynamicBatching, ActorTrainStepEqualsFixedBatchingOnTheSameSamples) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const Batch batch = worker_batch(*m0, kDataSeed);
  // 8 rows: fixed 2 x GA 4 and dynamic 4 micro-batches (budget 48) are one optimizer step per epoch.
  const train::TrainOptions o = sgd_options(2, 4, kEpochs);
  const config::PipelineConfig fixed_cfg = actor_config();
  config::PipelineConfig dynamic_cfg = actor_config();
  enable_train(dynamic_cfg.actor_train, 48, 4);
  const TrainResult fixed = train_actor(fixed_cfg, dir, batch, o);
  const TrainResult dynamic = train_actor(dynamic_cfg, dir, batch, o);
  expect_same_training(dynamic, fixed, kEpochs, m0->named_parameters());
  // The padding the plan removed is reported; the fixed split reports none.
  const std::string p = "dynamic_batching/actor_train/train_step/";
  EXPECT_DOUBLE_EQ(dynamic.metrics.at(p + "actual_tokens_origin@sum"), 192);
  EXPECT_DOUBLE_EQ(dynamic.metrics.at(p + "actual_tokens@sum"), 168);
  EXPECT_GT(dynamic.metrics.at(p + "removed_padding_tokens@sum"), 0);
  EXPECT_FALSE(fixed.metrics.count(p + "actual_tokens@sum"));
}

TEST(WorkersDynamicBatching, LogProbsAndValuesComeBackInTheBatchOrder) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const Batch batch = worker_batch(*m0, kDataSeed);
  // Budget 40: micro-batches {3,7} {2,6} {1} {5} {0} {4}, far from the batch order.
  constexpr double kTol = kForwardTol;
  {
    const config::PipelineConfig fixed_cfg = actor_config();
    config::PipelineConfig dynamic_cfg = actor_config();
    enable_infer(dynamic_cfg.actor_train, 40, 4);
    workers::ActorTrainer fixed(fixed_cfg, fixed_cfg.actor_train, dir, 0, 1, nullptr);
    workers::ActorTrainer dynamic(dynamic_cfg, dynamic_cfg.actor_train, dir, 0, 1, nullptr);
    const Batch want = fixed.compute_log_probs(batch), got = dynamic.compute_log_probs(batch);
    EXPECT_LE(max_abs_diff(got.tensor("log_probs"), want.tensor("log_probs")), kTol);
    EXPECT_LE(max_abs_diff(got.tensor("entropy"), want.tensor("entropy")), kTol);
    const auto m = workers::metrics_from_json(got.meta.at("metrics")).reduce();
    EXPECT_GT(m.at("dynamic_batching/actor_train/compute_log_probs/removed_padding_tokens@sum"), 0);
  }
  {
    config::PipelineConfig p;
    p.reference.name = "reference";
    p.reference.model_args.dtype = "fp32";
    p.reference.infer_batch_size = 5;
    workers::ReferenceModel fixed(p, p.reference, dir);
    enable_infer(p.reference, 40, 4);
    workers::ReferenceModel dynamic(p, p.reference, dir);
    const Batch want = fixed.compute_log_probs(batch), got = dynamic.compute_log_probs(batch);
    EXPECT_LE(max_abs_diff(got.tensor("log_probs"), want.tensor("log_probs")), kTol);
    EXPECT_LE(max_abs_diff(got.tensor("entropy"), want.tensor("entropy")), kTol);
  }
  {
    config::PipelineConfig p;
    p.seed = static_cast<int64_t>(kSeed);
    p.critic.name = "critic";
    p.critic.model_args.dtype = "fp32";
    p.critic.infer_batch_size = 3;
    workers::CriticTrainer fixed(p, p.critic, dir, 0, 1, nullptr);
    enable_infer(p.critic, 40, 4);
    workers::CriticTrainer dynamic(p, p.critic, dir, 0, 1, nullptr);
    // Values |v| ≲ 1 from the same fp32 forwards: the bound above. Past a row's last token the value
    // head sees padding, computed or not depending on the micro-batch's width: compare its tokens.
    const at::Tensor tokens = batch.tensor("attention_mask").slice(1, 0, kWorkerSeq - 1).to(at::kFloat);
    EXPECT_LE(max_abs_diff(dynamic.compute_values(batch).tensor("values") * tokens,
                           fixed.compute_values(batch).tensor("values") * tokens),
              kTol);
  }
}

TEST(WorkersDynamicBatching, CriticTrainStepEqualsFixedBatchingOnTheSameSamples) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  Batch batch = worker_batch(*m0, kDataSeed);
  at::Generator g = at::detail::createCPUGenerator(kDataSeed + 1);
  batch.set_tensor("values", at::randn({kWorkerRows, kWorkerSeq - 1}, g) * 0.1);
  batch.set_tensor("returns", at::randn({kWorkerRows, kWorkerSeq - 1}, g));
  config::PipelineConfig p;
  p.seed = static_cast<int64_t>(kSeed);
  p.value_clip = 0.05;
  p.critic.name = "critic";
  p.critic.model_args.dtype = "fp32";
  const train::TrainOptions o = sgd_options(2, 4, 1);
  model::NamedTensors fixed_params, dynamic_params;
  {
    workers::CriticTrainer fixed(p, p.critic, dir, 0, 1, nullptr, o);
    fixed.train_step(batch);
    fixed_params = fixed.strategy().full_parameters();
  }
  enable_train(p.critic, 48, 4);
  workers::CriticTrainer dynamic(p, p.critic, dir, 0, 1, nullptr, o);
  const Batch out = dynamic.train_step(batch);
  dynamic_params = dynamic.strategy().full_parameters();
  std::string where;
  EXPECT_LE(worst_param_diff(dynamic_params, fixed_params, &where), sgd_param_tol(1)) << "worst at " << where;
  const auto m = workers::metrics_from_json(out.meta.at("metrics")).reduce();
  EXPECT_DOUBLE_EQ(m.at("dynamic_batching/critic/train_step/actual_tokens@sum"), 168);
}

TEST(WorkersDynamicBatching, TwoRanksWithDifferentLengthsRunTheSameMicroBatchesUnderZero3) {
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    auto pg = child_group(*ctx);
    const std::string dir = ctx->dir + "/model";
    auto m0 = model::Transformer::load(dir, at::kFloat);
    const Batch full = worker_batch(*m0, kDataSeed);
    const int world = ctx->world_size, rank = ctx->rank;
    // Rank 0 holds the long rows (24, 21), rank 1 the short ones (18, 15): with budget 40 rank 1 alone
    // would fit 2 rows per micro-batch, rank 0 only 1; both follow the longer of each sorted pair.
    const Batch shard = full.take(rank == 0 ? std::vector<int64_t>{0, 1, 4, 5} : std::vector<int64_t>{2, 3, 6, 7});
    const std::vector<std::vector<int64_t>> want_micro{{1}, {3}, {0}, {2}};
    const workers::TokenBudget budget{40, 4, "actor_train.max_tokens_per_microbatch_in_train"};
    EXPECT_EQ(workers::dynamic_micro_batches(shard.tensor("attention_mask"), budget, pg.get(), "t").micro_batches,
              want_micro);

    // ZeRO-3 gathers the weights in every forward and backward: unequal micro-batch counts would hang.
    const train::TrainOptions o = sgd_options(1, 4, 1, /*stage=*/3);
    config::PipelineConfig fixed_cfg = actor_config(), dynamic_cfg = actor_config();
    enable_train(dynamic_cfg.actor_train, 40, 4);
    enable_infer(dynamic_cfg.actor_train, 40, 4);
    const TrainResult fixed = train_actor(fixed_cfg, dir, shard, o, rank, world, pg);
    const TrainResult dynamic = train_actor(dynamic_cfg, dir, shard, o, rank, world, pg);
    // The loss metrics are this rank's shares: compare the parameters (the same on every rank).
    std::string where;
    EXPECT_LE(worst_param_diff(dynamic.params, fixed.params, &where), sgd_param_tol(1)) << "worst at " << where;
    Batch want, got;
    {
      workers::ActorTrainer plain(fixed_cfg, fixed_cfg.actor_train, dir, rank, world, pg, o);
      want = plain.compute_log_probs(shard);
    }
    {
      workers::ActorTrainer actor(dynamic_cfg, dynamic_cfg.actor_train, dir, rank, world, pg, o);
      got = actor.compute_log_probs(shard);
    }
    EXPECT_LE(max_abs_diff(got.tensor("log_probs"), want.tensor("log_probs")), kForwardTol);
    return;
  }
  ScratchDir tmp;
  RunOptions o;
  o.dir = tmp.path;
  o.timeout_s = 110;
  write_model(o.dir + "/model");
  expect_all_ok(run_ranks(2, o));
}
