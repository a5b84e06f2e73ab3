// CriticTrainer against an independent single-process reference: the value model's plain forward
// with autograd, the clipped value loss written out over each global mini-batch, the micro-batch
// order and the optimizer by hand.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include "multiprocess.h"
#include "roll/core/error.h"
#include "roll/rl/critic_loss.h"
#include "roll/train/strategy.h"
#include "roll/workers/critic_trainer.h"
#include "workers_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

constexpr uint64_t kSeed = 42, kDataSeed = 9;
constexpr int64_t kBs = 1, kGa = 2;  // 4 rows per rank: two optimizer steps of two micro-batches
constexpr double kValueClip = 0.05, kLr = 0.5;

config::PipelineConfig critic_config() {
  config::PipelineConfig p;
  p.seed = static_cast<int64_t>(kSeed);
  p.value_clip = kValueClip;
  p.critic.name = "critic";
  p.critic.model_args.dtype = "fp32";
  p.critic.infer_batch_size = 3;
  return p;
}

train::TrainOptions critic_options() {
  train::TrainOptions o;
  o.optimizer = "sgd";
  o.learning_rate = kLr;
  o.lr_scheduler_type = "constant";
  o.per_device_train_batch_size = kBs;
  o.gradient_accumulation_steps = kGa;
  o.seed = kSeed;
  o.max_grad_norm = 1.0;
  o.total_steps = 4;
  o.gradient_checkpointing = true;
  return o;
}

// worker_batch plus the critic's inputs: V_old (the initial values plus noise, so the clip binds)
// and returns.
Batch critic_batch(const std::string& model_dir) {
  auto policy = model::Transformer::load(model_dir, at::kFloat);
  Batch b = worker_batch(*policy, kDataSeed);
  auto critic = model::Transformer::load(model_dir, at::kFloat, /*value_head=*/true, kSeed);
  at::Generator g = at::detail::createCPUGenerator(kDataSeed + 1);
  at::NoGradGuard no_grad;
  at::Tensor v = critic->values(b.tensor("input_ids"), b.tensor("attention_mask"), b.tensor("position_ids"));
  v = v.slice(1, 0, kWorkerSeq - 1);
  b.set_tensor("values", v + at::randn(v.sizes(), g) * 0.1);
  b.set_tensor("returns", at::randn(v.sizes(), g));
  return b;
}

struct ReferenceRun {
  model::NamedTensors params;
  std::vector<double> grad_norms;
  std::map<std::string, double> metrics;
};

ReferenceRun reference_critic(const std::string& model_dir, const Batch& full, int world) {
  auto model = model::Transformer::load(model_dir, at::kFloat, /*value_head=*/true, kSeed);
  model->set_requires_grad(true);
  const std::vector<at::Tensor> params = parameter_list(*model);
  const int64_t per_rank = kWorkerRows / world, T = kWorkerSeq - 1;
  const std::vector<int64_t> order = shuffled_epochs(per_rank, 1, kSeed)[0];
  const at::Tensor m_all = full.tensor("response_mask").slice(1, 1, kWorkerSeq).to(at::kFloat);
  ReferenceOptimizer opt;
  opt.lr = kLr;
  rl::MetricMap mt;
  ReferenceRun out;
  const int64_t mini = kBs * kGa;
  for (int64_t step = 0; step < per_rank / mini; ++step) {
    // The global mini-batch: every rank's step-th mini-batch.
    std::vector<int64_t> rows;
    for (int r = 0; r < world; ++r)
      for (int64_t j = 0; j < mini; ++j) rows.push_back(r * per_rank + order[step * mini + j]);
    const at::Tensor idx = at::tensor(rows, at::kLong);
    auto sel = [&](const char* key) { return full.tensor(key).index_select(0, idx); };
    at::Tensor v = model->values(sel("input_ids"), sel("attention_mask"), sel("position_ids")).slice(1, 0, T);
    const at::Tensor old = sel("values"), ret = sel("returns"), m = m_all.index_select(0, idx);
    at::Tensor clipped = at::max(at::min(v, old + kValueClip), old - kValueClip);
    at::Tensor l = at::max((v - ret).pow(2), (clipped - ret).pow(2));
    at::Tensor loss = 0.5 * ((l * m).sum(-1) / (m.sum(-1) + 1e-8)).mean();
    loss.backward();
    // ROLL's metrics are per micro-batch (here one row each).
    for (int64_t k = 0; k < static_cast<int64_t>(rows.size()); ++k) {
      at::NoGradGuard no_grad;
      auto row = [&](const at::Tensor& t) { return t.slice(0, k, k + 1); };
      mt.merge(rl::value_loss(row(v.detach()), row(old), row(ret), row(m), kValueClip).metrics);
    }
    const double norm = opt.step(params);
    out.grad_norms.push_back(norm);
    mt.add("critic/grad_norm", norm);
  }
  mt.add("critic/lr", kLr);
  out.metrics = mt.reduce();
  out.params = model->named_parameters();
  return out;
}

std::string write_model(const std::string& dir) {
  tiny_model(at::kFloat, 13)->save(dir);  // no score head: the critic initialises one from the seed
  return dir;
}

}  // namespace

TEST(WorkersCriticTrainStep, TwoRanksWithValueClipMatchSingleProcessReference) {
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    auto pg = child_group(*ctx);
    const std::string model_dir = ctx->dir + "/model";
    const Batch full = critic_batch(model_dir);
    const int world = ctx->world_size, rank = ctx->rank;
    const int64_t share = kWorkerRows / world;
    const config::PipelineConfig cfg = critic_config();
    workers::CriticTrainer critic(cfg, cfg.critic, model_dir, rank, world, pg, critic_options());
    const Batch out = critic.train_step(full.slice(rank * share, (rank + 1) * share));
    const model::NamedTensors params = critic.strategy().full_parameters();
    const std::string prefix = ctx->dir + "/critic";
    write_rank_metrics(prefix, rank, out);
    pg->barrier();
    if (rank != 0) return;

    std::vector<double> grad_norms;
    const rl::MetricMap got = read_rank_metrics(prefix, world, "critic/grad_norm", &grad_norms);
    const ReferenceRun ref = reference_critic(model_dir, full, world);
    // Means of fp32 values (|V| ≲ 1, a few ulp each) over the same tokens: rel 1e-5, abs ~eps.
    expect_metrics_near(got.reduce(), ref.metrics, 1e-5, 1e-7, "critic");
    EXPECT_GT(ref.metrics.at("critic/clipfrac"), 0.05) << "the value clip never bound";
    ASSERT_EQ(grad_norms.size(), ref.grad_norms.size());
    // |‖g‖ − ‖g'‖| ≤ ‖g − g'‖ ≲ 1e-5·‖g‖: the fp32 gradient bound (see train_grad_accumulation).
    for (size_t k = 0; k < grad_norms.size(); ++k)
      EXPECT_NEAR(grad_norms[k], ref.grad_norms[k], 1e-5 * ref.grad_norms[k]) << "grad_norm of step " << k;
    std::string where;
    // SGD: per step |Δw| ≤ lr·‖Δg‖₂ ≤ lr·1e-5·max_grad_norm (fp32 gradient bound), +1e-6 rounding |w| < 4.
    const double tol = 1e-6 + 1e-5 * kLr * static_cast<double>(ref.grad_norms.size());
    EXPECT_LE(worst_param_diff(params, ref.params, &where), tol) << "worst at " << where;
    auto start = model::Transformer::load(model_dir, at::kFloat, true, kSeed);
    EXPECT_GT(max_abs_diff(ref.params.back().second, start->named_parameters().back().second), 1e-4)
        << "the reference did not train the value head";
    return;
  }
  ScratchDir tmp;
  RunOptions o;
  o.dir = tmp.path;
  o.timeout_s = 90;
  write_model(o.dir + "/model");
  expect_all_ok(run_ranks(2, o));
}

TEST(WorkersCriticValues, ComputeValuesEqualsTheValueHeadWithoutTheLastPosition) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  const Batch batch = critic_batch(dir);
  const config::PipelineConfig cfg = critic_config();
  workers::CriticTrainer critic(cfg, cfg.critic, dir, 0, 1, nullptr);
  const Batch out = critic.compute_values(batch);
  auto model = model::Transformer::load(dir, at::kFloat, true, kSeed);
  at::NoGradGuard no_grad;
  at::Tensor want = model->values(batch.tensor("input_ids"), batch.tensor("attention_mask"),
                                  batch.tensor("position_ids"))
                        .slice(1, 0, kWorkerSeq - 1);
  ASSERT_EQ(out.tensor("values").sizes(), want.sizes());
  // fp32 forwards in other batch shapes: ~16 fp32 reductions of ~64 terms in quadrature, √16·√64·eps ≈ 4e-6
  // relative, on |V| ≲ 0.6.
  EXPECT_LE(max_abs_diff(out.tensor("values"), want), 1e-5);
}

TEST(WorkersCriticTrainStep, MissingReturnsIsAnErrorNamingTheTensor) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  Batch batch = critic_batch(dir);
  batch.erase_tensor("returns");
  const config::PipelineConfig cfg = critic_config();
  workers::CriticTrainer critic(cfg, cfg.critic, dir, 0, 1, nullptr, critic_options());
  try {
    critic.train_step(batch);
    ADD_FAILURE() << "a batch without returns was trained on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'returns'"), std::string::npos) << e.what();
  }
}
