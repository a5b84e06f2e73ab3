// ActorTrainer and ReferenceModel against independent single-process references: plain model
// forward over full logits with autograd, the rl:: loss functions called directly, and the
// micro-batch plan, the global normalisers, the ℓ_old cache, the data-parallel sum and the
// optimizer written out by hand here.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "multiprocess.h"
#include "roll/core/error.h"
#include "roll/rl/policy_loss.h"
#include "roll/rl/train_infer.h"
#include "roll/train/checkpoint.h"
#include "roll/train/strategy.h"
#include "roll/workers/actor_trainer.h"
#include "roll/workers/loss_params_from_config.h"
#include "roll/workers/reference_model.h"
#include "workers_test_util.h"

using namespace roll;
using namespace roll::test;

namespace {

constexpr uint64_t kSeed = 42, kDataSeed = 5;
constexpr int64_t kBs = 2, kGa = 2, kEpochs = 2;

// One configuration of the actor loss; to_config and to_params read it independently, so the
// config -> PolicyLossParams mapping is checked too.
struct ActorCase {
  std::string label;
  std::string pg_variant;  // empty: ROLL's ActorWorker (PPO); else ActorPGWorker with this variant
  bool agentic = false;
  bool recompute = false;  // enable_old_logprobs_recompute
  std::string agg = "seq-mean-token-mean";
  std::string ratio = "token";  // importance_sampling (RLVR) or ratio_type (agentic)
  double kl_coef = 0.1, entropy_coef = 0.0, rl_loss_coef = 1.0;
  bool dual_clip = false, clip_range = false, length_weight = false, difficulty_weight = false;
  bool unified_mask = false;
  bool is_weight = false, filter = false;  // train_infer_correction
  std::string optimizer = "sgd";
  double lr = 2.0;
  int stage = 0;
};

config::PipelineConfig to_config(const ActorCase& c) {
  config::PipelineConfig p;
  p.kind = c.agentic ? config::PipelineKind::agentic : config::PipelineKind::rlvr;
  p.seed = static_cast<int64_t>(kSeed);
  p.ppo_epochs = kEpochs;
  p.loss_agg_mode = c.agg;
  (c.agentic ? p.ratio_type : p.importance_sampling) = c.ratio;
  p.use_kl_loss = c.kl_coef > 0;
  p.kl_loss_coef = c.kl_coef;
  p.entropy_loss_coef = c.entropy_coef;
  p.rl_loss_coef = c.rl_loss_coef;
  p.dual_clip_loss = c.dual_clip;
  p.use_pg_clip_range = c.clip_range;
  p.pg_clip_low = 0.1;
  p.pg_clip_high = 0.3;
  p.length_loss_weight = c.length_weight;
  p.difficulty_loss_weight = c.difficulty_weight;
  p.enable_old_logprobs_recompute = c.recompute;
  p.train_infer_correction.is_weight.enabled = c.is_weight;
  p.train_infer_correction.is_weight.weight_type = c.recompute ? "token" : "geometric";
  p.train_infer_correction.is_weight.upper_bound = 1.05;
  if (c.filter) {
    config::TrainInferFilterConfig f;
    f.enabled = true;
    f.agg_type = "token";
    f.ratio_low = 0.96;
    f.ratio_high = 1.04;
    p.train_infer_correction.filters.push_back(f);
  }
  config::WorkerConfig& a = p.actor_train;
  a.name = "actor_train";
  a.model_args.dtype = "fp32";
  a.infer_batch_size = 3;
  if (!c.pg_variant.empty()) {
    a.worker_cls = "roll.pipeline.rlvr.actor_pg_worker.ActorPGWorker";
    a.pg_variant = c.pg_variant;
    a.tis_lower_bound = 0.1;
    a.tis_upper_bound = 1.05;
    a.topr_positive_weight = 0.7;
    a.topr_negative_weight = 1.3;
    a.cispo_epsilon_low = 0.05;
    a.cispo_epsilon_high = 0.08;
    a.cispo_use_unified_mask = c.unified_mask;
    a.kimi15_tau = 0.3;
  }
  return p;
}

// What ROLL's workers compute with the config above, written out directly.
rl::PolicyLossParams to_params(const ActorCase& c) {
  rl::PolicyLossParams o;
  if (!c.pg_variant.empty()) o.pg_variant = rl::parse_pg_variant(c.pg_variant);
  o.ratio_type = c.ratio == "seq" ? rl::RatioType::seq : c.ratio == "segment" ? rl::RatioType::segment : rl::RatioType::token;
  o.pg_clip = 0.2;
  o.use_pg_clip_range = c.clip_range;
  o.pg_clip_low = 0.1;
  o.pg_clip_high = 0.3;
  o.dual_clip_loss = c.dual_clip;
  o.loss_agg_mode = rl::parse_loss_agg_mode(c.agg);
  o.use_kl_loss = c.kl_coef > 0;
  o.kl_loss_coef = c.kl_coef;
  o.entropy_loss_coef = c.entropy_coef;
  o.rl_loss_coef = c.agentic ? 1.0 : c.rl_loss_coef;  // the agentic worker has no rl_loss_coef
  o.tis_lower_bound = 0.1;
  o.tis_upper_bound = 1.05;
  o.topr_positive_weight = 0.7;
  o.topr_negative_weight = 1.3;
  o.cispo_epsilon_low = 0.05;
  o.cispo_epsilon_high = 0.08;
  o.cispo_use_unified_mask = c.unified_mask;
  o.kimi15_tau = 0.3;
  return o;
}

rl::TrainInferParams to_train_infer(const ActorCase& c) {
  rl::TrainInferParams t;
  t.is_weight.enabled = c.is_weight;
  t.is_weight.weight_type = c.recompute ? rl::MismatchGranularity::token : rl::MismatchGranularity::geometric;
  t.is_weight.upper_bound = 1.05;
  if (c.filter) {
    rl::MismatchFilter f;
    f.enabled = true;
    f.agg_type = rl::MismatchGranularity::token;
    f.ratio_enabled = true;
    f.ratio_low = 0.96;
    f.ratio_high = 1.04;
    t.filters.push_back(f);
  }
  return t;
}

train::TrainOptions to_options(const ActorCase& c) {
  train::TrainOptions o;
  o.optimizer = c.optimizer;
  o.learning_rate = c.lr;
  o.lr_scheduler_type = "constant";
  o.weight_decay = c.optimizer == "adamw" ? 0.01 : 0.0;
  o.adam_epsilon = 1e-6;  // see docs/training.md: AdamW's 1e-8 amplifies rounding noise
  o.per_device_train_batch_size = kBs;
  o.gradient_accumulation_steps = kGa;
  o.ppo_epochs = kEpochs;
  o.seed = kSeed;
  o.max_grad_norm = 1.0;
  o.zero_stage = c.stage;
  o.gradient_checkpointing = true;
  o.total_steps = 8;
  return o;
}

std::vector<ActorCase> actor_cases() {
  std::vector<ActorCase> v;
  ActorCase ppo;
  ppo.label = "ppo sgd seq-mean-token-mean dual-clip entropy length-weights";
  ppo.dual_clip = true;
  ppo.entropy_coef = 0.01;
  ppo.length_weight = true;
  ppo.difficulty_weight = true;
  ppo.rl_loss_coef = 0.7;
  v.push_back(ppo);
  ActorCase adam;
  adam.label = "ppo adamw zero-3 token-mean gspo clip-range";
  adam.optimizer = "adamw";
  adam.lr = 1e-2;
  adam.stage = 3;
  adam.agg = "token-mean";
  adam.ratio = "seq";
  adam.clip_range = true;
  v.push_back(adam);
  ActorCase tis;
  tis.label = "tis seq-mean-token-sum";
  tis.pg_variant = "tis";
  tis.agg = "seq-mean-token-sum";
  tis.lr = 0.5;
  v.push_back(tis);
  ActorCase topr;
  topr.label = "topr seq-mean-token-sum-norm";
  topr.pg_variant = "topr";
  topr.agg = "seq-mean-token-sum-norm";
  v.push_back(topr);
  ActorCase cispo;
  cispo.label = "cispo token-mean unified mask";
  cispo.pg_variant = "cispo";
  cispo.agg = "token-mean";
  cispo.unified_mask = true;
  v.push_back(cispo);
  ActorCase kimi;
  kimi.label = "kimi15";
  kimi.pg_variant = "kimi15";
  v.push_back(kimi);
  ActorCase agentic;
  agentic.label = "agentic segment ratio (no sample weights, no rl_loss_coef, fm = m)";
  agentic.agentic = true;
  agentic.ratio = "segment";
  agentic.agg = "token-mean";
  agentic.length_weight = true;  // ignored by the agentic worker
  agentic.rl_loss_coef = 0.5;    // ignored by the agentic worker
  v.push_back(agentic);
  ActorCase recompute;
  recompute.label = "old_log_probs recompute with the batch's train_infer_is_weight";
  recompute.recompute = true;
  recompute.is_weight = true;
  v.push_back(recompute);
  ActorCase in_loss;
  in_loss.label = "train-infer IS weight and token filter inside the loss";
  in_loss.is_weight = true;
  in_loss.filter = true;
  in_loss.agg = "token-mean";
  v.push_back(in_loss);
  return v;
}

struct ReferenceRun {
  model::NamedTensors params;
  std::vector<double> grad_norms;
  std::map<std::string, double> metrics;  // reduced as the pipeline reduces the ranks' outputs
};

// The whole batch in one process: step e trains on the e-th mini-batch of every rank (here each
// rank's 4 rows are one mini-batch of 2 micro-batches), with normalisers over all their rows.
ReferenceRun reference_actor(const ActorCase& c, const std::string& model_dir, const Batch& full, int world) {
  auto model = model::Transformer::load(model_dir, at::kFloat);
  model->set_requires_grad(true);
  const std::vector<at::Tensor> params = parameter_list(*model);
  const rl::PolicyLossParams P = to_params(c);
  const rl::TrainInferParams TI = to_train_infer(c);
  const int64_t per_rank = kWorkerRows / world, S = kWorkerSeq;
  const at::Tensor ids = full.tensor("input_ids"), attn = full.tensor("attention_mask"), pos = full.tensor("position_ids");
  const at::Tensor m_all = full.tensor("response_mask").slice(1, 1, S).to(at::kFloat);
  const at::Tensor fm_all = c.agentic ? m_all : full.tensor("final_response_mask");
  std::vector<double> diff(kWorkerRows);
  for (int64_t r = 0; r < kWorkerRows; ++r) diff[static_cast<size_t>(r)] = full.get_double("difficulty", r);
  const at::Tensor difficulty = at::tensor(diff).to(at::kFloat);
  at::Tensor cache = at::zeros_like(m_all);

  ReferenceOptimizer opt;
  opt.kind = c.optimizer;
  opt.lr = c.lr;
  opt.weight_decay = c.optimizer == "adamw" ? 0.01 : 0.0;
  const auto orders = shuffled_epochs(per_rank, kEpochs, kSeed);
  rl::MetricMap mt;
  ReferenceRun out;
  for (int64_t e = 0; e < kEpochs; ++e) {
    auto norm_of = [](const at::Tensor& mask) {
      return rl::AggNorm{std::max(1.0, mask.sum().item<double>()),
                         std::max(1.0, (mask > 0).any(-1).sum().item<double>())};
    };
    const rl::AggNorm norm_m = norm_of(m_all), norm_fm = norm_of(fm_all);
    at::Tensor total = at::zeros({});
    for (int r = 0; r < world; ++r)
      for (int64_t k = 0; k < kGa; ++k) {
        std::vector<int64_t> rows;
        for (int64_t j = 0; j < kBs; ++j) rows.push_back(r * per_rank + orders[e][k * kBs + j]);
        const at::Tensor idx = at::tensor(rows, at::kLong);
        auto sel = [&](const at::Tensor& t) { return t.index_select(0, idx); };
        auto [lp, ent] = full_log_probs(*model, sel(ids), sel(attn), sel(pos));
        at::Tensor m = sel(m_all), fm = sel(fm_all);
        lp = lp * m;
        at::Tensor old;
        if (c.recompute) {
          old = sel(full.tensor("old_log_probs"));
        } else if (e == 0) {
          old = lp.detach();
          cache.index_copy_(0, idx, old);
        } else {
          old = sel(cache);
        }
        rl::PolicyLossInputs in;
        if (!c.recompute) {
          rl::TrainInferResult ti = rl::train_infer_correction(m, old, sel(full.tensor("infer_logprobs")), TI, norm_m);
          mt.merge(ti.metrics);
          if (c.is_weight) in.is_weight = ti.is_weight;
          m = m * ti.filter_mask;
          fm = fm * ti.filter_mask;
        } else if (c.is_weight) {
          in.is_weight = sel(full.tensor("train_infer_is_weight"));
        }
        in.log_probs = lp;
        in.old_log_probs = old;
        in.ref_log_probs = sel(full.tensor("ref_log_probs"));
        in.advantages = sel(full.tensor("advantages"));
        in.response_mask = m;
        in.final_response_mask = fm;
        if (c.entropy_coef > 0) in.entropy = ent * sel(m_all);
        if (!c.agentic) in.sample_weights = rl::compute_sample_weights(m, sel(difficulty), c.difficulty_weight, c.length_weight);
        in.scores = sel(full.tensor("scores"));
        in.norm_final = norm_fm;
        in.norm_response = norm_m;
        rl::PolicyLossResult res = rl::policy_loss(in, P);
        mt.merge(res.metrics);
        total = total + res.total_loss;
      }
    total.backward();
    const double norm = opt.step(params);
    out.grad_norms.push_back(norm);
    mt.add("actor_train/grad_norm", norm);
  }
  // ROLL divides each rank's "@sum" totals by its backward steps and the pipeline sums the ranks:
  // the global total over all micro-batches divided by the optimizer steps.
  const double steps = static_cast<double>(kEpochs);
  rl::MetricMap reported;
  for (const auto& [key, values] : mt.values()) {
    if (key.ends_with("@sum")) {
      double s = 0;
      for (double x : values) s += x;
      reported.add(key, s / steps);
    } else {
      reported.add(key, values);
    }
  }
  reported.add("actor/lr", c.lr);
  reported.add("actor/backward_steps", steps);
  out.metrics = reported.reduce();
  out.params = model->named_parameters();
  return out;
}

std::string write_model(const std::string& dir) {
  tiny_model(at::kFloat, 11)->save(dir);
  return dir;
}

}  // namespace

TEST(WorkersActorTrainStep, TwoRanksMatchSingleProcessReferenceForEveryVariant) {
  if (auto ctx = child_context()) {
    at::set_num_threads(ctx->threads);
    auto pg = child_group(*ctx);
    const std::string model_dir = ctx->dir + "/model";
    auto m0 = model::Transformer::load(model_dir, at::kFloat);
    const Batch full = worker_batch(*m0, kDataSeed);
    const int world = ctx->world_size, rank = ctx->rank;
    const int64_t share = kWorkerRows / world;
    int index = 0;
    for (const ActorCase& c : actor_cases()) {
      SCOPED_TRACE(c.label);
      const config::PipelineConfig cfg = to_config(c);
      workers::ActorTrainer actor(cfg, cfg.actor_train, model_dir, rank, world, pg, to_options(c));
      const Batch out = actor.train_step(full.slice(rank * share, (rank + 1) * share));
      const model::NamedTensors params = actor.strategy().full_parameters();
      const std::string prefix = fmt::format("{}/case{}", ctx->dir, index++);
      write_rank_metrics(prefix, rank, out);
      pg->barrier();
      if (rank != 0) continue;

      // The pipeline's view: the ranks' metric lists concatenated, then reduced by their tags.
      std::vector<double> grad_norms;
      const std::map<std::string, double> got_reduced =
          read_rank_metrics(prefix, world, "actor_train/grad_norm", &grad_norms).reduce();
      const ReferenceRun ref = reference_actor(c, model_dir, full, world);

      // Token means of values from fp32 log-probs, each off by a few ulp of |log p| ≲ 5 (≈ 1e-6): rel
      // 1e-5; abs 1e-6 for means that cancel to ≈ 0.
      expect_metrics_near(got_reduced, ref.metrics, 1e-5, 1e-6, c.label);
      // The losses with a tighter floor: those ≲ 1e-6 errors times |A·ρ| ≲ 3, averaged over ≳ 100 tokens.
      for (const char* key : {"actor/pg_loss@sum", "actor/kl_loss@sum", "actor/total_loss@sum"}) {
        ASSERT_TRUE(ref.metrics.count(key)) << key;
        EXPECT_LE(std::abs(got_reduced.at(key) - ref.metrics.at(key)), 1e-5 * std::abs(ref.metrics.at(key)) + 3e-7)
            << key;
      }
      if (c.pg_variant.empty()) {
        // Counts over the same tokens: equal unless a ratio lands within rounding of a clip edge.
        for (const char* key : {"actor/clipfrac@sum", "actor/ppo_ratio_clipfrac@sum"})
          EXPECT_LE(std::abs(got_reduced.at(key) - ref.metrics.at(key)), 1e-5 * std::abs(ref.metrics.at(key)) + 1e-9)
              << key;
        // The second epoch must have moved the ratio out of the clip range somewhere, or the
        // clip metrics and the clipped branch of the loss were never exercised.
        EXPECT_GT(ref.metrics.at("actor/ppo_ratio_clipfrac@sum"), 0.0);
      }
      ASSERT_EQ(grad_norms.size(), ref.grad_norms.size());
      // |‖g‖ − ‖g'‖| ≤ ‖g − g'‖ ≲ 1e-5·‖g‖: the fp32 gradient bound (see train_grad_accumulation).
      for (size_t k = 0; k < grad_norms.size(); ++k)
        EXPECT_NEAR(grad_norms[k], ref.grad_norms[k], 1e-5 * ref.grad_norms[k]) << "grad_norm of step " << k;

      std::string where;
      const double worst = worst_param_diff(params, ref.params, &where);
      // The actor runs its LM head on response rows only, so the head's weight gradient sums rows in
      // other groups than this reference's full logits.
      // SGD: per step |Δw| ≤ lr·‖Δg‖₂ ≤ lr·1e-5·max_grad_norm (fp32 gradient bound), +1e-6 rounding |w| < 4.
      // AdamW: a step is lr·g/eps where |g| ≲ eps = 1e-6; fp32 noise √184·eps·|g|rms(3e-3) ≈ 5e-9 -> 5e-3·lr.
      const double tol = c.optimizer == "sgd" ? 1e-6 + 1e-5 * c.lr * kEpochs : 1e-6 + 5e-3 * c.lr * kEpochs;
      EXPECT_LE(worst, tol) << "parameters after train_step, worst at " << where;
      EXPECT_GT(max_abs_diff(ref.params[1].second, m0->named_parameters()[1].second), 100 * tol)
          << "the reference did not train";
    }
    // Unequal shards would leave the ranks waiting on different collectives: every rank refuses.
    const ActorCase c;
    const config::PipelineConfig cfg = to_config(c);
    workers::ActorTrainer actor(cfg, cfg.actor_train, model_dir, rank, world, pg, to_options(c));
    try {
      actor.train_step(full.slice(0, rank == 0 ? 3 : 4));
      ADD_FAILURE() << "rank " << rank << " trained on an unequal shard";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("different numbers of rows"), std::string::npos) << e.what();
    }
    return;
  }
  ScratchDir tmp;
  RunOptions o;
  o.dir = tmp.path;
  o.timeout_s = 110;
  write_model(o.dir + "/model");
  expect_all_ok(run_ranks(2, o));
}

TEST(WorkersActorLogProbs, ComputeLogProbsEqualsTheModelsLogProbsOfTheTokens) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const Batch batch = worker_batch(*m0, kDataSeed);
  config::PipelineConfig p;
  p.actor_train.model_args.dtype = "fp32";
  p.actor_train.infer_batch_size = 3;  // 8 rows -> 2 forward micro-batches of 4 (ROLL's split)
  // The config constructor: fsdp2_train (the default) with reshard_after_forward -> ZeRO-3 gathers.
  workers::ActorTrainer actor(p, p.actor_train, dir, 0, 1, nullptr);
  const Batch out = actor.compute_log_probs(batch);
  ASSERT_EQ(out.size(), batch.size());
  const at::Tensor m = batch.tensor("response_mask").slice(1, 1, kWorkerSeq).to(at::kFloat);
  at::NoGradGuard no_grad;
  auto [lp, ent] = full_log_probs(*m0, batch.tensor("input_ids"), batch.tensor("attention_mask"),
                                  batch.tensor("position_ids"));
  // fp32 forwards in other GEMM shapes (micro-batches, used columns, LM-head chunks): ~16 fp32 reductions of
  // ~64 terms in quadrature, √16·√64·eps ≈ 4e-6 relative, on logits |z| ≲ 3 -> 1.2e-5.
  EXPECT_LE(max_abs_diff(out.tensor("log_probs"), lp * m), 2e-5);
  EXPECT_LE(max_abs_diff(out.tensor("entropy"), ent * m), 2e-5);
  EXPECT_EQ(out.tensor("log_probs").sizes(), m.sizes());
  EXPECT_EQ((out.tensor("log_probs") * (1 - m)).abs().max().item<double>(), 0.0);
}

TEST(WorkersActorReference, LogProbsEqualTheModelsAndOnlyForwardStrategiesAreAccepted) {
  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const Batch batch = worker_batch(*m0, kDataSeed);
  config::PipelineConfig p;
  p.reference.name = "reference";
  p.reference.model_args.dtype = "fp32";
  p.reference.infer_batch_size = 5;
  for (const char* strategy : {"hf_infer", "megatron_infer"}) {
    p.reference.strategy_args = config::StrategyArguments{strategy, nullptr};
    workers::ReferenceModel ref(p, p.reference, dir);
    const Batch out = ref.compute_log_probs(batch);
    const at::Tensor m = batch.tensor("response_mask").slice(1, 1, kWorkerSeq).to(at::kFloat);
    at::NoGradGuard no_grad;
    auto [lp, ent] = full_log_probs(*m0, batch.tensor("input_ids"), batch.tensor("attention_mask"),
                                    batch.tensor("position_ids"));
    // As in ComputeLogProbsEqualsTheModelsLogProbsOfTheTokens.
    EXPECT_LE(max_abs_diff(out.tensor("log_probs"), lp * m), 2e-5) << strategy;
    EXPECT_LE(max_abs_diff(out.tensor("entropy"), ent * m), 2e-5) << strategy;
  }
  p.reference.strategy_args = config::StrategyArguments{"vllm", nullptr};
  try {
    workers::ReferenceModel bad(p, p.reference, dir);
    ADD_FAILURE() << "vllm was accepted for reference log-probs";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "reference.strategy_args.strategy_name");
  }
}

TEST(WorkersActorCheckpoint, SavedStateLoadsIntoAFreshTrainer) {
  ScratchDir tmp;
  const std::string root = tmp.path;
  const std::string dir = write_model(root + "/model");
  auto m0 = model::Transformer::load(dir, at::kFloat);
  const Batch batch = worker_batch(*m0, kDataSeed);
  ActorCase c;
  c.optimizer = "adamw";
  c.lr = 1e-3;
  const config::PipelineConfig cfg = to_config(c);
  workers::ActorTrainer a(cfg, cfg.actor_train, dir, 0, 1, nullptr, to_options(c));
  a.train_step(batch);
  const std::string ckpt = a.save_checkpoint(root + "/actor_train", 3);
  EXPECT_TRUE(train::checkpoint_problem(ckpt).empty()) << train::checkpoint_problem(ckpt);
  workers::ActorTrainer b(cfg, cfg.actor_train, dir, 0, 1, nullptr, to_options(c));
  b.load_checkpoint(ckpt);
  EXPECT_EQ(b.strategy().global_step(), a.strategy().global_step());
  std::string where;
  EXPECT_EQ(worst_param_diff(b.strategy().full_parameters(), a.strategy().full_parameters(), &where), 0.0) << where;
  // Both continue identically: the optimizer moments came back too.
  a.train_step(batch);
  b.train_step(batch);
  EXPECT_EQ(worst_param_diff(b.strategy().full_parameters(), a.strategy().full_parameters(), &where), 0.0) << where;
}

TEST(WorkersActorConfig, ErrorsNameTheKeyOrTheTensor) {
  ActorCase c;
  config::PipelineConfig p = to_config(c);
  p.actor_train.worker_cls = "roll.pipeline.rlvr.actor_pg_worker.ActorPGWorker";
  try {
    workers::policy_loss_params(p, p.actor_train);
    ADD_FAILURE() << "ActorPGWorker without pg_variant was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "actor_train.pg_variant");
  }
  p = to_config(c);
  p.importance_sampling = "segment";  // agentic only
  try {
    workers::policy_loss_params(p, p.actor_train);
    ADD_FAILURE() << "importance_sampling: segment was accepted for RLVR";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "importance_sampling");
  }
  // A plain ActorWorker runs PPO whatever pg_variant says (ROLL reads it only in ActorPGWorker).
  p = to_config(c);
  p.actor_train.pg_variant = "kimi15";
  EXPECT_EQ(workers::policy_loss_params(p, p.actor_train).pg_variant, rl::PgVariant::ppo);

  ScratchDir tmp;
  const std::string dir = write_model(tmp.path + "/model");
  // Dynamic batching without a token budget (ROLL's default max_tokens_per_microbatch_in_train: 0).
  p = to_config(c);
  p.actor_train.use_dynamic_batching_in_train = true;
  try {
    workers::ActorTrainer(p, p.actor_train, dir, 0, 1, nullptr, to_options(c));
    ADD_FAILURE() << "dynamic batching without a token budget was accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "actor_train.max_tokens_per_microbatch_in_train");
  }

  auto m0 = model::Transformer::load(dir, at::kFloat);
  Batch batch = worker_batch(*m0, kDataSeed);
  batch.erase_tensor("advantages");
  p = to_config(c);
  workers::ActorTrainer actor(p, p.actor_train, dir, 0, 1, nullptr, to_options(c));
  try {
    actor.train_step(batch);
    ADD_FAILURE() << "a batch without advantages was trained on";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'advantages'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("actor_train"), std::string::npos) << e.what();
  }
}
