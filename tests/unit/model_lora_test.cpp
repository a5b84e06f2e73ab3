// LoRA (model/lora.h, config/lora_target.h): what lora_target names, adapters that start as a
// no-op, the base model with adapters off, merging, training only the adapters (gradients against
// the full model's own gradient), dropout under gradient checkpointing, PEFT files and checkpoints.
// The forward against an independent float64 reference is ModelTransformer.Lora*.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config_test_util.h"
#include "roll/config/lora_target.h"
#include "roll/core/error.h"
#include "roll/model/lora.h"
#include "roll/train/checkpoint.h"
#include "roll/train/strategy.h"
#include "train_test_util.h"

using namespace roll;
using namespace roll::model;
using roll::testing::TempConfigDir;
namespace fs = std::filesystem;

namespace {

LoraConfig lora_of(const std::string& target, int64_t rank = 4, double alpha = 8, double dropout = 0) {
  return lora_config_from_args(target, rank, static_cast<int64_t>(alpha), dropout, "actor_train.model_args");
}

// Non-zero B everywhere, so that the adapters change the model.
void randomise_b(Transformer& m, uint64_t seed, double std = 0.05) {
  at::manual_seed(seed);
  NamedTensors b;
  for (const auto& [name, t] : m.adapters())
    if (name.ends_with(".lora_B.weight")) b.emplace_back(name, at::randn(t.sizes()) * std);
  m.load_adapters(b);
}

at::Tensor logits_of(const Transformer& m, const test::TokenBatch& b) {
  at::NoGradGuard g;
  return m.logits(b.ids, b.mask, b.pos);
}

// A strategy training `lc`'s adapters (and saved modules) on `m`, lr 1e-2.
std::unique_ptr<train::TrainStrategy> lora_strategy(std::shared_ptr<Transformer> m, const LoraConfig& lc) {
  m->add_lora(lc, 3);
  train::TrainOptions o;
  o.learning_rate = 1e-2;
  o.total_steps = 10;
  return std::make_unique<train::TrainStrategy>(std::move(m), o);
}

at::Tensor named(const NamedTensors& ts, const std::string& name) {
  for (const auto& [n, t] : ts)
    if (n == name) return t;
  ADD_FAILURE() << "no tensor " << name;
  return at::Tensor();
}

}  // namespace

TEST(ModelLora, LoraTargetIsAllLinearAListOrARegex) {
  using config::lora_target_modules;
  using config::parse_lora_target;
  EXPECT_EQ(lora_target_modules(parse_lora_target("all-linear", "k"), 2).size(), 14u);
  const auto list = lora_target_modules(parse_lora_target(" q_proj , v_proj", "k"), 2);
  EXPECT_EQ(list, (std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                                            "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"}));
  // all-linear and the list of every linear module are the same modules (ROLL's examples mix them).
  EXPECT_EQ(lora_target_modules(parse_lora_target("all-linear", "k"), 3),
            lora_target_modules(parse_lora_target("q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "k"), 3));
  const auto rx = lora_target_modules(parse_lora_target(R"(.*layers\.1\..*_proj$)", "k"), 2);
  EXPECT_EQ(rx.size(), 7u);
  EXPECT_EQ(rx.front(), "model.layers.1.self_attn.q_proj");
  try {
    parse_lora_target("lm_head", "actor_train.model_args.lora_target");
    FAIL() << "lm_head is not a decoder linear module";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key(), "actor_train.model_args.lora_target");
  }
  EXPECT_THROW(parse_lora_target("(q_proj", "k"), ConfigError);
  EXPECT_THROW(lora_of("q_proj", 0), ConfigError);
  EXPECT_DOUBLE_EQ(lora_config_from_args("q_proj", 16, std::nullopt, 0, "k").alpha, 32);  // ROLL: 2 * rank
}

TEST(ModelLora, FreshAdaptersAreANoOpAndDisabledAdaptersGiveTheBase) {
  auto m = test::tiny_model();
  const auto batch = test::make_batch(3, 10, 96, 5);
  const at::Tensor base = logits_of(*m, batch);
  m->add_lora(lora_of("all-linear"), 1);
  EXPECT_EQ(m->adapters().size(), 2u * 7 * 2);
  EXPECT_TRUE(at::equal(logits_of(*m, batch), base)) << "B = 0 at the start";
  for (const auto& [name, t] : m->adapters())
    if (name.ends_with(".lora_A.weight"))  // PEFT's Kaiming-uniform bound 1/sqrt(in)
      EXPECT_LE(t.abs().max().item<double>(), 1.0 / std::sqrt(static_cast<double>(t.size(1))));
  randomise_b(*m, 2);
  const at::Tensor adapted = logits_of(*m, batch);
  EXPECT_GT((adapted - base).abs().max().item<double>(), 1e-3);
  m->set_adapters_enabled(false);
  EXPECT_TRUE(at::equal(logits_of(*m, batch), base));
  m->set_adapters_enabled(true);
  // Merged: the same function up to fp32 rounding of W + sBA (|W| ~ 0.1, terms of rank 4).
  m->merge_adapters();
  EXPECT_EQ(m->lora(), nullptr);
  EXPECT_LT((logits_of(*m, batch) - adapted).abs().max().item<double>(), 1e-4);
}

// The adapters' gradients follow from the full model's: with W' = W + s B A and G = dL/dW',
// dL/dB = s G A^T and dL/dA = s B^T G. G comes from plain autograd over the merged model. Both
// under gradient checkpointing: with an adapter on down_proj the whole layer is checkpointed;
// without one the frozen down projection runs outside the checkpoint.
class ModelLoraGradients : public ::testing::TestWithParam<const char*> {};

INSTANTIATE_TEST_SUITE_P(Targets, ModelLoraGradients, ::testing::Values("q_proj,down_proj", "q_proj,k_proj,v_proj,o_proj"));

TEST_P(ModelLoraGradients, FollowFromTheFullModelsGradient) {
  const auto batch = test::make_batch(4, 12, 96, 9);
  auto lora_model = test::tiny_model();
  const LoraConfig lc = lora_of(GetParam(), 4, 12);
  lora_model->add_lora(lc, 3);
  randomise_b(*lora_model, 4, 0.2);
  auto full = test::tiny_model();
  full->load_weights(merge_lora(full->named_parameters(), lc, lora_model->adapters()));

  auto loss_of = [&](Transformer& m) {
    auto lp = m.token_log_probs(batch.ids, batch.mask, batch.pos, false, /*gradient_checkpointing=*/true);
    return -(lp.log_probs * batch.loss_mask).sum() / batch.loss_mask.sum();
  };
  lora_model->set_requires_grad(true);
  loss_of(*lora_model).backward();
  full->set_requires_grad(true);
  loss_of(*full).backward();
  for (const auto& [name, t] : lora_model->named_parameters()) EXPECT_FALSE(t.grad().defined()) << name << " is frozen";
  for (const std::string& module : lora_modules(lc, 2)) {
    const at::Tensor G = full->parameter(module + ".weight").grad().to(at::kDouble);
    const at::Tensor A = named(lora_model->adapters(), lora_a_name(module)).to(at::kDouble);
    const at::Tensor B = named(lora_model->adapters(), lora_b_name(module)).to(at::kDouble);
    const at::Tensor gA = named(lora_model->adapters(), lora_a_name(module)).grad();
    const at::Tensor gB = named(lora_model->adapters(), lora_b_name(module)).grad();
    // fp32 backward of a 2-layer model against the same in a different association: reductions of
    // ~50 tokens x 64 features, relative ~1e-5 of the gradient's norm.
    EXPECT_LT(test::rel_diff(gB, lc.scale() * at::matmul(G, A.t())), 1e-4) << module;
    EXPECT_LT(test::rel_diff(gA, lc.scale() * at::matmul(B.t(), G)), 1e-4) << module;
  }
}

// With lora_dropout the recompute in backward must draw the forward's masks again.
TEST(ModelLora, DropoutUnderGradientCheckpointingGivesTheSameGradients) {
  const auto batch = test::make_batch(3, 10, 96, 13);
  auto grads = [&](bool checkpointing) {
    auto m = test::tiny_model();
    m->add_lora(lora_of("all-linear", 4, 8, 0.3), 3);
    randomise_b(*m, 4, 0.2);
    m->set_requires_grad(true);
    at::manual_seed(99);
    auto lp = m->token_log_probs(batch.ids, batch.mask, batch.pos, false, checkpointing);
    (-(lp.log_probs * batch.loss_mask).sum()).backward();
    NamedTensors out;
    for (const auto& [name, t] : m->adapters()) out.emplace_back(name, t.grad().clone());
    return out;
  };
  const NamedTensors plain = grads(false), recomputed = grads(true);
  for (size_t i = 0; i < plain.size(); ++i)
    EXPECT_LT(test::rel_diff(recomputed[i].second, plain[i].second), 1e-5) << plain[i].first;
  // And dropout does act: without it the gradients differ.
  auto m = test::tiny_model();
  m->add_lora(lora_of("all-linear", 4, 8, 0.0), 3);
  randomise_b(*m, 4, 0.2);
  m->set_requires_grad(true);
  auto lp = m->token_log_probs(batch.ids, batch.mask, batch.pos);
  (-(lp.log_probs * batch.loss_mask).sum()).backward();
  EXPECT_GT(test::rel_diff(named(m->adapters(), plain[1].first).grad(), plain[1].second), 1e-2);
}

TEST(ModelLora, TrainingUpdatesTheAdaptersOnlyAndCheckpointsThemInPeftFormat) {
  TempConfigDir d;
  auto base = test::tiny_model(at::kBFloat16);
  base->save(d.path() + "/base");
  auto make = [&] {
    auto m = Transformer::load(d.path() + "/base", at::kBFloat16);
    m->add_lora(lora_of("q_proj,v_proj,up_proj"), 3);
    train::TrainOptions o;
    o.learning_rate = 1e-2;
    o.total_steps = 10;
    o.gradient_checkpointing = true;
    return std::make_unique<train::TrainStrategy>(m, o);
  };
  auto s = make();
  EXPECT_NE(s->describe().find("LoRA rank 4"), std::string::npos) << s->describe();
  NamedTensors before;
  for (const auto& [n, t] : s->model().named_parameters()) before.emplace_back(n, t.clone());
  for (int64_t k = 0; k < 3; ++k) {
    const auto b = test::make_batch(4, 12, 96, 20 + k);
    s->train_step(1, [&](int64_t) { return test::micro_loss(*s, b, b.loss_mask.sum().item<double>(), 1, 1); });
  }
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(at::equal(s->model().named_parameters()[i].second, before[i].second)) << before[i].first;
  for (const auto& [n, t] : s->full_parameters()) {
    EXPECT_EQ(t.scalar_type(), at::kFloat) << n << ": adapters train in fp32 beside a bf16 base";
    if (n.ends_with(".lora_B.weight")) EXPECT_GT(t.abs().max().item<double>(), 0) << n;
  }

  const std::string ckpt = train::save_checkpoint(*s, d.path() + "/ckpt", 3);
  EXPECT_TRUE(fs::exists(ckpt + "/adapter_model.safetensors"));
  EXPECT_FALSE(fs::exists(ckpt + "/model.safetensors")) << "the frozen base is not copied";
  const nlohmann::json cfg = nlohmann::json::parse(std::ifstream(ckpt + "/adapter_config.json"));
  EXPECT_EQ(cfg["peft_type"], "LORA");
  EXPECT_EQ(cfg["r"], 4);
  EXPECT_EQ(cfg["base_model_name_or_path"], fs::absolute(d.path() + "/base").lexically_normal().string());
  auto file = SafetensorsFile::open(ckpt + "/adapter_model.safetensors");
  EXPECT_TRUE(file->has("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"));

  // Resume: same adapters and optimizer state, then the same next step.
  auto resumed = make();
  train::load_checkpoint(*resumed, ckpt);
  {
    // The checkpoint is a model directory too: the base it names plus the adapters.
    auto loaded = Transformer::load(ckpt, at::kBFloat16);
    ASSERT_NE(loaded->lora(), nullptr);
    const auto probe = test::make_batch(2, 8, 96, 50);
    EXPECT_TRUE(at::equal(logits_of(*loaded, probe), logits_of(resumed->model(), probe)));
  }
  const auto next = test::make_batch(4, 12, 96, 40);
  for (auto* st : {s.get(), resumed.get()})
    st->train_step(1, [&](int64_t) { return test::micro_loss(*st, next, next.loss_mask.sum().item<double>(), 1, 1); });
  const NamedTensors a = s->full_parameters(), b = resumed->full_parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(at::equal(a[i].second, b[i].second)) << a[i].first;

  // A full-model run cannot resume from adapters, nor the reverse.
  train::TrainOptions o;
  train::TrainStrategy full(Transformer::load(d.path() + "/base", at::kBFloat16), o);
  EXPECT_THROW(train::load_checkpoint(full, ckpt), Error);
}

TEST(ModelLora, AdapterFilesWithOptionsRollcppDoesNotApplyAreRefused) {
  TempConfigDir d;
  auto m = test::tiny_model();
  const LoraConfig lc = lora_of("q_proj");
  m->add_lora(lc, 1);
  save_peft_adapter(d.path() + "/a", lc, m->adapters(), "/nowhere");
  const std::string cfg_path = d.path() + "/a/adapter_config.json";
  nlohmann::json cfg = nlohmann::json::parse(std::ifstream(cfg_path));
  EXPECT_EQ(load_peft_adapter(d.path() + "/a").adapters.size(), 4u);
  for (const auto& [field, value] : std::vector<std::pair<std::string, nlohmann::json>>{
           {"use_dora", true}, {"use_rslora", true}, {"bias", "all"}, {"modules_to_save", {"mlp"}}}) {
    nlohmann::json bad = cfg;
    bad[field] = value;
    std::ofstream(cfg_path) << bad.dump();
    try {
      load_peft_adapter(d.path() + "/a");
      ADD_FAILURE() << field << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  std::ofstream(cfg_path) << cfg.dump();
  EXPECT_THROW(Transformer::load(d.path() + "/a", at::kFloat), Error) << "its base does not exist";
}

// additional_target (PEFT's modules_to_save): the embedding and the LM head of a tied bf16 model
// train whole, as fp32 copies, beside the adapters; the base stays as it was and serves the
// reference (adapters off); the copies are checkpointed under PEFT's names and resume.
TEST(ModelLora, SavedModulesTrainWholeBesideTheAdaptersAndStepAsideForTheReference) {
  TempConfigDir d;
  auto base = test::tiny_model(at::kBFloat16);
  ASSERT_TRUE(base->config().tie_word_embeddings);
  base->save(d.path() + "/base");
  const LoraConfig lc = lora_config_from_args("q_proj", 4, 8, 0, "actor_train.model_args", "embed_tokens,lm_head");
  EXPECT_EQ(lc.modules_to_save, (std::vector<std::string>{"model.embed_tokens", "lm_head"}));
  auto make = [&] { return lora_strategy(Transformer::load(d.path() + "/base", at::kBFloat16), lc); };
  auto s = make();
  const auto probe = test::make_batch(2, 8, 96, 50);
  const at::Tensor base_logits = logits_of(*base, probe);
  for (int64_t k = 0; k < 3; ++k) {
    const auto b = test::make_batch(4, 12, 96, 20 + k);
    s->train_step(1, [&](int64_t) { return test::micro_loss(*s, b, b.loss_mask.sum().item<double>(), 1, 1); });
  }
  for (const auto& [n, t] : s->model().named_parameters())
    EXPECT_TRUE(at::equal(t, base->parameter(n))) << n << " (the base stays frozen)";
  const NamedTensors trained = s->full_parameters();
  ASSERT_EQ(trained.size(), 2 * 2 + 2u) << "q_proj adapters of 2 layers, the embedding and the head";
  for (const char* name : {"model.embed_tokens.weight", "lm_head.weight"}) {
    const at::Tensor t = named(trained, name);
    EXPECT_EQ(t.scalar_type(), at::kFloat) << name;
    EXPECT_GT((t - base->parameter("model.embed_tokens.weight").to(at::kFloat)).abs().max().item<double>(), 1e-3)
        << name << " trained";
  }
  EXPECT_FALSE(at::equal(named(trained, "model.embed_tokens.weight"), named(trained, "lm_head.weight")))
      << "the copies are untied, as PEFT's";
  s->model().set_adapters_enabled(false);
  EXPECT_TRUE(at::equal(logits_of(s->model(), probe), base_logits)) << "adapters off: the base, saved modules too";
  s->model().set_adapters_enabled(true);
  EXPECT_FALSE(at::equal(logits_of(s->model(), probe), base_logits));

  const std::string ckpt = train::save_checkpoint(*s, d.path() + "/ckpt", 3);
  const nlohmann::json cfg = nlohmann::json::parse(std::ifstream(ckpt + "/adapter_config.json"));
  EXPECT_EQ(cfg["modules_to_save"], nlohmann::json({"model.embed_tokens", "lm_head"}));
  auto file = SafetensorsFile::open(ckpt + "/adapter_model.safetensors");
  EXPECT_TRUE(file->has("base_model.model.model.embed_tokens.weight"));
  EXPECT_TRUE(file->has("base_model.model.lm_head.weight"));
  auto resumed = make();
  train::load_checkpoint(*resumed, ckpt);
  EXPECT_TRUE(at::equal(logits_of(resumed->model(), probe), logits_of(s->model(), probe)));
  auto loaded = Transformer::load(ckpt, at::kBFloat16);
  EXPECT_TRUE(at::equal(logits_of(*loaded, probe), logits_of(s->model(), probe)));
}

// LoRA on the critic: adapters on its decoder and its value head ("score") trained whole, as
// ROLL's critic trains its value head beside PEFT's adapters; checkpointed as PEFT's TOKEN_CLS.
TEST(ModelLora, ACriticTrainsAdaptersAndItsValueHead) {
  TempConfigDir d;
  auto policy = test::tiny_model(at::kFloat);
  policy->save(d.path() + "/base");
  const LoraConfig lc = lora_config_from_args("q_proj,v_proj", 4, 8, 0, "critic.model_args", std::nullopt, true);
  EXPECT_EQ(lc.modules_to_save, (std::vector<std::string>{"score"}));
  auto make = [&] {
    return lora_strategy(Transformer::load(d.path() + "/base", at::kFloat, /*value_head=*/true, 11), lc);
  };
  auto s = make();
  const NamedTensors base_params = [&] {
    NamedTensors out;
    for (const auto& [n, t] : s->model().named_parameters()) out.emplace_back(n, t.clone());
    return out;
  }();
  const auto b = test::make_batch(4, 12, 96, 21);
  for (int64_t k = 0; k < 3; ++k)
    s->train_step(1, [&](int64_t) { return (s->values(b.ids, b.mask, b.pos) - 1.0).pow(2).mean(); });
  for (const auto& [n, t] : s->model().named_parameters())
    EXPECT_TRUE(at::equal(t, named(base_params, n))) << n << " (the base stays frozen)";
  const NamedTensors trained = s->full_parameters();
  EXPECT_FALSE(at::equal(named(trained, "score.weight"), named(base_params, "score.weight")));
  EXPECT_GT(named(trained, "model.layers.0.self_attn.q_proj.lora_B.weight").abs().max().item<double>(), 0);

  const std::string ckpt = train::save_checkpoint(*s, d.path() + "/ckpt", 3);
  const nlohmann::json cfg = nlohmann::json::parse(std::ifstream(ckpt + "/adapter_config.json"));
  EXPECT_EQ(cfg["task_type"], "TOKEN_CLS");
  EXPECT_TRUE(SafetensorsFile::open(ckpt + "/adapter_model.safetensors")->has("base_model.model.score.bias"));
  auto resumed = make();
  train::load_checkpoint(*resumed, ckpt);
  at::NoGradGuard g;
  EXPECT_TRUE(at::equal(resumed->model().values(b.ids, b.mask, b.pos), s->model().values(b.ids, b.mask, b.pos)));
}
