// SftTrainer against an independent single-process reference: the full logits of a plain model
// copy, ATen's cross_entropy over ROLL's shifted labels (ignore_index -100, summed, divided by the
// label tokens of each optimizer step's rows), autograd, and SGD with the global L2 clip written out
// by hand. One rank and two ranks (ZeRO-3) must both equal the reference.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "multiprocess.h"
#include "roll/core/error.h"
#include "roll/train/strategy.h"
#include "roll/workers/sft_trainer.h"
#include "workers_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

constexpr int64_t kRows = 8, kSeq = 20, kBs = 2;
constexpr double kLr = 0.5;

// Right-padded rows with a prompt of 3-5 tokens; odd rows have a 2-token hole in their targets (a
// second turn's prompt), row 6 trains nothing. labels[:, t] = input_ids[:, t+1] where token t+1 is a
// target, else -100 (ROLL's DataCollatorForSFT output).
Batch sft_batch(int64_t vocab, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  at::Tensor ids = at::randint(1, vocab, {kRows, kSeq}, g, at::kLong);
  at::Tensor attn = at::zeros({kRows, kSeq}, at::kLong), target = at::zeros({kRows, kSeq}, at::kLong);
  for (int64_t r = 0; r < kRows; ++r) {
    const int64_t len = kSeq - (r % 4) * 3, prompt = 3 + r % 3;
    attn[r].slice(0, 0, len).fill_(1);
    if (r == 6) continue;
    target[r].slice(0, prompt, len).fill_(1);
    if (r % 2 == 1) target[r].slice(0, prompt + 4, prompt + 6).zero_();
  }
  ids = ids * attn;
  at::Tensor labels = at::full({kRows, kSeq}, workers::kIgnoreIndex, at::kLong);
  labels.slice(1, 0, kSeq - 1)
      .copy_(at::where(target.slice(1, 1, kSeq) > 0, ids.slice(1, 1, kSeq),
                       at::full({}, workers::kIgnoreIndex, at::kLong)));
  Batch b(kRows);
  b.set_tensor("input_ids", ids);
  b.set_tensor("attention_mask", attn);
  b.set_tensor("position_ids", (attn.cumsum(1) - 1).clamp_min(0));
  b.set_tensor("labels", labels);
  return b;
}

train::TrainOptions sft_options(int64_t ga, int stage) {
  train::TrainOptions o;
  o.optimizer = "sgd";
  o.learning_rate = kLr;
  o.lr_scheduler_type = "constant";
  o.per_device_train_batch_size = kBs;
  o.gradient_accumulation_steps = ga;
  o.max_grad_norm = 1.0;
  o.zero_stage = stage;
  o.seed = 42;
  o.gradient_checkpointing = true;
  o.total_steps = 4;
  return o;
}

config::PipelineConfig sft_config() {
  config::PipelineConfig p;
  p.kind = config::PipelineKind::sft;
  p.sft_train.name = "sft_train";
  p.sft_train.model_args.dtype = "fp32";
  p.sft_train.infer_batch_size = 3;
  return p;
}

// ROLL's language loss of some rows from full logits: Σ CE(logits[:, t], labels[:, t]) / tokens.
at::Tensor reference_loss(const model::Transformer& m, const Batch& b, const std::vector<int64_t>& rows,
                          double tokens) {
  const at::Tensor idx = at::tensor(rows, at::kLong);
  auto sel = [&](const char* key) { return b.tensor(key).index_select(0, idx); };
  at::Tensor logits = m.logits(sel("input_ids"), sel("attention_mask"), sel("position_ids"));
  at::Tensor ce = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), sel("labels").reshape({-1}), {},
                                         at::Reduction::Sum, workers::kIgnoreIndex);
  return ce / tokens;
}

struct Reference {
  model::NamedTensors params;
  std::vector<double> losses, grad_norms;  // per optimizer step
};

// Optimizer step k trains on `steps[k]` (all ranks' rows of that step), normalised by their label
// tokens.
Reference reference_sft(const std::string& model_dir, const Batch& b, const std::vector<std::vector<int64_t>>& steps) {
  auto model = model::Transformer::load(model_dir, at::kFloat);
  model->set_requires_grad(true);
  const std::vector<at::Tensor> params = parameter_list(*model);
  ReferenceOptimizer opt;
  opt.kind = "sgd";
  opt.lr = kLr;
  opt.max_grad_norm = 1.0;
  Reference out;
  const at::Tensor labels = b.tensor("labels");
  for (const auto& rows : steps) {
    double tokens = 0;
    for (int64_t r : rows) tokens += (labels[r] != workers::kIgnoreIndex).sum().item<double>();
    at::Tensor loss = reference_loss(*model, b, rows, std::max(1.0, tokens));
    out.losses.push_back(loss.item<double>());
    loss.backward();
    out.grad_norms.push_back(opt.step(params));
  }
  out.params = model->named_parameters();
  return out;
}

std::string write_model(const std::string& dir) {
  tiny_model(at::kFloat, 13)->save(dir);
  return dir;
}

// `loss` and `lr`: the reduced metrics the pipeline logs; `norms`: one rank's grad_norm list.
void expect_matches_reference(double loss, double lr, const std::vector<double>& norms, const Reference& ref,
                              const model::NamedTensors& params, const model::NamedTensors& initial,
                              const std::string& what) {
  double mean_loss = 0;
  for (double l : ref.losses) mean_loss += l / static_cast<double>(ref.losses.size());
  // Token-mean cross-entropy (≈ log 96) from fp32 logits in other GEMM shapes: a few ulp per token.
  EXPECT_NEAR(loss, mean_loss, 1e-5 * mean_loss) << what << ": loss";
  EXPECT_NEAR(lr, kLr, 1e-12) << what;
  ASSERT_EQ(norms.size(), ref.grad_norms.size()) << what;
  // |‖g‖ − ‖g'‖| ≤ ‖g − g'‖ ≲ 1e-5·‖g‖: the fp32 gradient bound (see train_grad_accumulation).
  for (size_t k = 0; k < norms.size(); ++k)
    EXPECT_NEAR(norms[k], ref.grad_norms[k], 1e-5 * ref.grad_norms[k]) << what << ": grad_norm of step " << k;
  // The clip must have acted in some step, or the test would not see the norm's effect.
  EXPECT_GT(*std::max_element(ref.grad_norms.begin(), ref.grad_norms.end()), 1.0) << what;
  std::string where;
  // SGD: per step |Δw| ≤ lr·‖Δg‖₂ ≤ lr·1e-5·max_grad_norm (fp32 gradient bound), +1e-6 rounding |w| < 4.
  const double tol = 1e-6 + 1e-5 * kLr * static_cast<double>(ref.grad_norms.size());
  EXPECT_LE(worst_param_diff(params, ref.params, &where), tol) << what << ": parameters, worst at " << where;
  EXPECT_GT(max_abs_diff(ref.params[1].second, initial[1].second), 1e-3) << what << ": the reference did not train";
}

}  // namespace

TEST(WorkersSftTrainStep, OneRankEqualsFullLogitsCrossEntropyReference) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const Batch batch = sft_batch(m0->config().vocab_size, 3);
  const config::PipelineConfig cfg = sft_config();
  // 8 rows, micro-batches of 2, 2 per step: two optimizer steps, each normalised by its own tokens.
  workers::SftTrainer sft(cfg, cfg.sft_train, dir, 0, 1, nullptr, sft_options(2, 0));
  const Batch out = sft.train_step(batch);
  const Reference ref = reference_sft(dir, batch, {{0, 1, 2, 3}, {4, 5, 6, 7}});
  const rl::MetricMap got = workers::metrics_from_json(out.meta.at("metrics"));
  const std::map<std::string, double> reduced = got.reduce();
  expect_matches_reference(reduced.at("sft_train/loss@sum"), reduced.at("sft_train/lr"), got.at("sft_train/grad_norm"),
                           ref, sft.strategy().full_parameters(), m0->named_parameters(), "one rank, two steps");
}

TEST(WorkersSftTrainStep, TwoRanksZero3EqualFullLogitsCrossEntropyReference) {
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    auto pg = child_group(*ctx);
    const std::string dir = ctx->dir + "/model";
    auto m0 = model::Transformer::load(dir, at::kFloat);
    const Batch batch = sft_batch(m0->config().vocab_size, 3);
    const config::PipelineConfig cfg = sft_config();
    const int rank = ctx->rank, world = ctx->world_size;
    // The pipeline's global batch of dp x 2 x 2 rows: each rank trains 4 rows in one optimizer step.
    workers::SftTrainer sft(cfg, cfg.sft_train, dir, rank, world, pg, sft_options(2, 3));
    const Batch out = sft.train_step(batch.slice(rank * 4, rank * 4 + 4));
    const model::NamedTensors params = sft.strategy().full_parameters();
    const std::string prefix = ctx->dir + "/train";
    write_rank_metrics(prefix, rank, out);
    pg->barrier();
    if (rank != 0) return;
    // The ranks' lists concatenated and reduced, as the pipeline does; every rank reports the same
    // global grad norm, so rank 0's list is compared.
    std::vector<double> rank0_norms;
    const std::map<std::string, double> reduced =
        read_rank_metrics(prefix, world, "sft_train/grad_norm", &rank0_norms).reduce();
    const Reference ref = reference_sft(dir, batch, {{0, 1, 2, 3, 4, 5, 6, 7}});
    expect_matches_reference(reduced.at("sft_train/loss@sum"), reduced.at("sft_train/lr"), rank0_norms, ref, params,
                             m0->named_parameters(), "two ranks, ZeRO-3");
    return;
  }
  ScratchDir tmp;
  RunOptions o;
  o.dir = tmp.path;
  o.timeout_s = 100;
  write_model(o.dir + "/model");
  expect_all_ok(run_ranks(2, o));
}

TEST(WorkersSftValStep, LossEqualsReferenceAndLeavesTheModelUnchanged) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const Batch batch = sft_batch(m0->config().vocab_size, 4);
  const config::PipelineConfig cfg = sft_config();  // infer_batch_size 3: two forward micro-batches of 4
  workers::SftTrainer sft(cfg, cfg.sft_train, dir, 0, 1, nullptr, sft_options(1, 0));
  const Batch out = sft.val_step(batch);
  const rl::MetricMap got = workers::metrics_from_json(out.meta.at("metrics"));
  EXPECT_EQ(got.at("sft_train/loss@sum").size(), 2u);
  const double tokens = (batch.tensor("labels") != workers::kIgnoreIndex).sum().item<double>();
  at::NoGradGuard no_grad;
  const double want = reference_loss(*m0, batch, {0, 1, 2, 3, 4, 5, 6, 7}, tokens).item<double>();
  EXPECT_NEAR(got.reduce().at("sft_train/loss@sum"), want, 1e-5 * want);
  std::string where;
  EXPECT_EQ(worst_param_diff(sft.strategy().full_parameters(), m0->named_parameters(), &where), 0.0) << where;
}

TEST(WorkersSftTrainStep, LabelsThatAreNotTheShiftedTokensAreAnErrorNamingThePosition) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const config::PipelineConfig cfg = sft_config();
  workers::SftTrainer sft(cfg, cfg.sft_train, dir, 0, 1, nullptr, sft_options(4, 0));
  auto expect_refused = [&](Batch b, const std::string& needle) {
    try {
      sft.train_step(b);
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Batch unshifted = sft_batch(m0->config().vocab_size, 5);
  unshifted.set_tensor("labels", at::where(unshifted.tensor("labels") != workers::kIgnoreIndex,
                                           unshifted.tensor("input_ids"), unshifted.tensor("labels")));
  expect_refused(unshifted, "labels[0][");
  Batch padded = sft_batch(m0->config().vocab_size, 5);
  at::Tensor labels = padded.tensor("labels").clone();
  labels[1][kSeq - 3] = 7;  // row 1 has 17 tokens: position 17 predicts padding
  padded.set_tensor("labels", labels);
  expect_refused(padded, "labels[1][17]");
  Batch missing = sft_batch(m0->config().vocab_size, 5);
  missing = missing.select({"input_ids", "attention_mask", "position_ids"}, {});
  expect_refused(missing, "no tensor 'labels'");
}
