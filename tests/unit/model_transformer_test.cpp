// Transformer numerics against an independent plain-PyTorch reference (tests/oracles/model_forward.py
// run with Debian's /usr/bin/python3 and python3-torch), plus internal consistency checks.
#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "config_test_util.h"
#include "roll/core/error.h"
#include "roll/model/model_init.h"
#include "roll/model/transformer.h"

using namespace roll;
using namespace roll::model;
using roll::testing::TempConfigDir;
namespace fs = std::filesystem;

namespace {

ModelConfig small_config(Architecture arch, bool tied) {
  ModelConfig c;
  c.arch = arch;
  c.model_type = arch == Architecture::qwen2 ? "qwen2" : arch == Architecture::qwen3 ? "qwen3" : "llama";
  c.attention_bias = arch == Architecture::qwen2;
  c.qk_norm = arch == Architecture::qwen3;
  c.vocab_size = 300;
  c.hidden_size = 48;
  c.intermediate_size = 96;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 6;
  c.num_key_value_heads = 2;  // GQA
  c.head_dim = 8;
  c.rope_theta = 10000.0;
  c.rms_norm_eps = 1e-6;
  c.tie_word_embeddings = tied;
  return c;
}

// A random model with non-trivial norm weights and biases, so every parameter matters.
std::shared_ptr<Transformer> perturbed(const ModelConfig& c, uint64_t seed) {
  auto m = Transformer::random(c, at::kFloat, seed, 0.1);
  at::NoGradGuard g;
  at::manual_seed(seed);
  for (auto& [name, t] : const_cast<NamedTensors&>(m->named_parameters()))
    if (name.find("norm") != std::string::npos || name.find("bias") != std::string::npos)
      t.add_(at::randn(t.sizes()) * 0.1);
  return m;
}

struct Inputs {
  at::Tensor ids, mask, pos;
};

// Rows: full, left-padded, right-padded, left-padded short.
Inputs mixed_padding(int64_t vocab) {
  at::manual_seed(11);
  const int64_t B = 4, T = 9;
  Inputs in;
  in.ids = at::randint(0, vocab, {B, T}, at::kLong);
  in.mask = at::ones({B, T}, at::kLong);
  in.mask[1].slice(0, 0, 3).zero_();  // left padding 3
  in.mask[2].slice(0, 6, T).zero_();  // right padding 3
  in.mask[3].slice(0, 0, 6).zero_();  // left padding 6
  in.ids.masked_fill_(in.mask == 0, 0);
  in.pos = (in.mask.cumsum(1) - 1).clamp_min(0);
  return in;
}

// `adapter_dir`: a PEFT LoRA adapter the oracle merges into the weights itself (numpy, float64).
at::Tensor oracle_logits(const std::string& model_dir, const Inputs& in, int64_t vocab,
                         const std::string& adapter_dir = "") {
  if (!fs::exists("/usr/bin/python3")) return at::Tensor();
  TempConfigDir d;
  nlohmann::json j;
  auto to_vec = [](const at::Tensor& t) {
    std::vector<std::vector<int64_t>> v;
    for (int64_t b = 0; b < t.size(0); ++b) {
      auto row = t[b].contiguous();
      v.emplace_back(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
    }
    return v;
  };
  j["input_ids"] = to_vec(in.ids);
  j["attention_mask"] = to_vec(in.mask);
  j["position_ids"] = to_vec(in.pos);
  const std::string inp = d.write("in.json", j.dump());
  const std::string out = d.path() + "/out.bin";
  const std::string cmd = "/usr/bin/python3 " + roll::testing::source_dir() + "/tests/oracles/model_forward.py " +
                          model_dir + " " + inp + " " + out + (adapter_dir.empty() ? "" : " " + adapter_dir);
  if (std::system(cmd.c_str()) != 0) {
    ADD_FAILURE() << "oracle failed: " << cmd;
    return at::Tensor();
  }
  std::ifstream f(out, std::ios::binary);
  at::Tensor logits = at::empty({in.ids.size(0), in.ids.size(1), vocab}, at::kFloat);
  f.read(static_cast<char*>(logits.data_ptr()), logits.numel() * 4);
  EXPECT_TRUE(f.good()) << "short oracle output";
  return logits;
}

// Our logits of `m` (saved in `dir`) against the reference's, on rows with mixed padding.
void expect_dir_matches_oracle(const Transformer& m, const std::string& dir, const std::string& what,
                               const std::string& adapter_dir = "") {
  const int64_t vocab = m.config().vocab_size;
  auto in = mixed_padding(vocab);
  at::Tensor ref = oracle_logits(dir, in, vocab, adapter_dir);
  if (!ref.defined()) GTEST_SKIP() << "/usr/bin/python3 with python3-torch not available";
  at::NoGradGuard g;
  at::Tensor ours = m.logits(in.ids, in.mask, in.pos);
  // Compare real tokens only: padding positions are finite but meaningless.
  at::Tensor valid = in.mask.to(at::kBool).unsqueeze(-1).expand_as(ours);
  at::Tensor diff = (ours - ref).abs().masked_select(valid);
  // fp32 against a float64 reference: ~16 fp32 reductions of ~64 terms in quadrature, √16·√64·eps ≈ 4e-6
  // relative, on |z| ≲ 3.
  EXPECT_LT(diff.max().item<float>(), 1e-4) << what;
  EXPECT_TRUE(at::isfinite(ours).all().item<bool>()) << what;
}

void expect_matches_oracle(Architecture arch, bool tied) {
  TempConfigDir d;
  auto c = small_config(arch, tied);
  auto m = perturbed(c, 5);
  m->save(d.path() + "/m");
  expect_dir_matches_oracle(*m, d.path() + "/m", c.model_type + (tied ? " tied" : " untied"));
}

}  // namespace

TEST(ModelTransformer, Qwen2TiedMatchesReference) { expect_matches_oracle(Architecture::qwen2, true); }
TEST(ModelTransformer, Qwen2UntiedMatchesReference) { expect_matches_oracle(Architecture::qwen2, false); }
TEST(ModelTransformer, Qwen3MatchesReference) { expect_matches_oracle(Architecture::qwen3, false); }
TEST(ModelTransformer, LlamaMatchesReference) { expect_matches_oracle(Architecture::llama, true); }

namespace {

// A LoRA adapter written in PEFT's format, read back by the oracle (which merges W + alpha/r B A
// itself and puts the saved modules in place of the base's) and by Transformer::load: the same
// logits as the model that wrote it.
void expect_lora_matches_oracle(const std::string& target, int64_t rank, double alpha,
                                const std::vector<std::string>& modules_to_save = {}, bool tied = false) {
  TempConfigDir d;
  auto c = small_config(Architecture::qwen2, tied);
  auto m = perturbed(c, 7);
  m->save(d.path() + "/base");
  m = Transformer::load(d.path() + "/base", at::kFloat);
  LoraConfig lora;
  lora.target = config::parse_lora_target(target, "lora_target");
  lora.rank = rank;
  lora.alpha = alpha;
  lora.modules_to_save = modules_to_save;
  m->add_lora(lora, 3);
  {
    // B starts at zero (the adapter is a no-op) and the saved copies at the base: give them
    // values so that they matter.
    at::manual_seed(4);
    NamedTensors moved;
    for (const auto& [name, t] : m->adapters())
      if (name.ends_with(".lora_B.weight")) moved.emplace_back(name, at::randn(t.sizes()) * 0.05);
    for (const auto& [name, t] : m->saved_modules()) moved.emplace_back(name, t + at::randn(t.sizes()) * 0.05);
    m->load_adapters(moved);
  }
  NamedTensors files = m->adapters();
  files.insert(files.end(), m->saved_modules().begin(), m->saved_modules().end());
  save_peft_adapter(d.path() + "/adapter", lora, files, d.path() + "/base");
  const std::string what = fmt::format("LoRA {} saving [{}]{}", target, fmt::join(modules_to_save, ","),
                                       tied ? " tied" : "");
  expect_dir_matches_oracle(*m, d.path() + "/base", what, d.path() + "/adapter");
  auto back = Transformer::load(d.path() + "/adapter", at::kFloat);
  ASSERT_NE(back->lora(), nullptr);
  EXPECT_EQ(back->adapters().size(), m->adapters().size());
  EXPECT_EQ(back->saved_modules().size(), m->saved_modules().size());
  auto in = mixed_padding(c.vocab_size);
  at::NoGradGuard g;
  const at::Tensor logits = m->logits(in.ids, in.mask, in.pos);
  EXPECT_TRUE(at::equal(back->logits(in.ids, in.mask, in.pos), logits)) << what;
  // Merged into a plain model (untied where a saved copy needs it): the same logits, rounding apart.
  back->merge_adapters();
  EXPECT_EQ(back->lora(), nullptr);
  EXPECT_LT((back->logits(in.ids, in.mask, in.pos) - logits).abs().max().item<float>(), 1e-4) << what;
}

}  // namespace

TEST(ModelTransformer, LoraAllLinearMatchesReference) { expect_lora_matches_oracle("all-linear", 4, 8); }
TEST(ModelTransformer, LoraListAndRegexMatchReference) {
  expect_lora_matches_oracle("q_proj,v_proj,down_proj", 2, 16);
  expect_lora_matches_oracle(R"(.*\.layers\.1\..*(o_proj|up_proj))", 3, 3);
}
// additional_target (PEFT's modules_to_save), untied and tied: a saved embedding leaves a tied
// head as it was, a saved head leaves the embedding.
TEST(ModelTransformer, LoraWithSavedModulesMatchesReference) {
  expect_lora_matches_oracle("q_proj", 2, 4, {"model.embed_tokens", "lm_head", "model.norm"});
  expect_lora_matches_oracle("v_proj", 2, 4, {"model.embed_tokens"}, true);
  expect_lora_matches_oracle("v_proj", 2, 4, {"lm_head", "model.norm"}, true);
}

TEST(ModelTransformer, TinyPresetWithFullVocabularyMatchesReference) {
  TempConfigDir d;
  ModelInitOptions o;
  o.preset = "tiny";
  o.out_dir = d.path() + "/tiny";
  o.seed = 1;
  if (!fs::exists(default_tokenizer_dir() + "/tokenizer.json")) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  init_model_dir(o);
  auto m = Transformer::load(o.out_dir, at::kFloat);
  EXPECT_EQ(m->config().vocab_size, 151936);
  expect_dir_matches_oracle(*m, o.out_dir, "tiny preset");
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "generation_config.json", "config.json"})
    EXPECT_TRUE(fs::exists(o.out_dir + "/" + f)) << f;
}

// `roll model init` size overrides (the FrozenLake demo's model): the written config carries them
// and the forward follows rope_theta as the reference reads it from config.json.
TEST(ModelTransformer, InitOverridesReachConfigAndForward) {
  TempConfigDir d;
  ModelInitOptions o;
  o.preset = "tiny";
  o.out_dir = d.path() + "/m";
  o.seed = 2;
  o.vocab = 512;
  o.hidden_size = 64, o.num_layers = 2, o.intermediate_size = 128, o.num_heads = 8, o.num_kv_heads = 4;
  o.rope_theta = 100;
  if (!fs::exists(default_tokenizer_dir() + "/tokenizer.json")) GTEST_SKIP() << "run scripts/setup for the tokenizer";
  init_model_dir(o);
  const nlohmann::json c = nlohmann::json::parse(std::ifstream(o.out_dir + "/config.json"));
  EXPECT_EQ(c["rope_theta"].get<double>(), 100.0);
  EXPECT_EQ(c["num_attention_heads"], 8);
  EXPECT_EQ(c["num_key_value_heads"], 4);
  EXPECT_EQ(c["head_dim"], 8);
  expect_dir_matches_oracle(*Transformer::load(o.out_dir, at::kFloat), o.out_dir, "init overrides");
  o.rope_theta = -1;
  o.out_dir = d.path() + "/bad";
  EXPECT_THROW(init_model_dir(o), Error);
}

TEST(ModelTransformer, ChunkedLogProbsEqualFullLogits) {
  auto c = small_config(Architecture::qwen2, false);
  auto m = perturbed(c, 7);
  auto in = mixed_padding(c.vocab_size);
  at::NoGradGuard g;
  at::Tensor full = at::log_softmax(m->logits(in.ids, in.mask, in.pos), -1);
  at::Tensor want = full.slice(1, 0, -1).gather(2, in.ids.slice(1, 1).unsqueeze(-1)).squeeze(-1);
  at::Tensor p = full.exp();
  at::Tensor want_ent = -(p * full).sum(-1).slice(1, 0, -1);
  // Same hidden states; only the LM head's GEMM shape and the log-softmax grouping change: a few ulp of
  // |log p| ≲ 8 (ulp 1e-6) -> 1e-5; the entropy sums 300 terms: sqrt(300)·eps·|H ≲ 6| ≈ 1e-5 -> 1e-4.
  for (int64_t chunk : {1, 5, 1000}) {
    auto got = m->token_log_probs(in.ids, in.mask, in.pos, true, false, chunk);
    EXPECT_LT((got.log_probs - want).abs().max().item<float>(), 1e-5) << chunk;
    EXPECT_LT((got.entropy - want_ent).abs().max().item<float>(), 1e-4) << chunk;
  }
}

// Log-probs of the needed rows only (the RL response mask): equal to the full path there, 0
// elsewhere, and the same gradients for a loss that reads only needed positions.
TEST(ModelTransformer, NeededRowsOnlyEqualFullPathOnThoseRows) {
  auto c = small_config(Architecture::qwen2, false);
  auto m = perturbed(c, 11);
  m->set_requires_grad(true);
  auto in = mixed_padding(c.vocab_size);
  at::Tensor needed = (at::rand({in.ids.size(0), in.ids.size(1) - 1}) > 0.5).to(at::kFloat);
  auto run = [&](bool only) {
    for (auto& [n, t] : m->named_parameters())
      if (t.grad().defined()) t.mutable_grad().zero_();
    auto lp = m->token_log_probs(in.ids, in.mask, in.pos, true, false, 5, only ? needed : at::Tensor());
    ((lp.log_probs * needed).sum() + 0.3 * (lp.entropy * needed).sum()).backward();
    std::vector<at::Tensor> gs;
    for (auto& [n, t] : m->named_parameters()) gs.push_back(t.grad().clone());
    return std::make_tuple(lp.log_probs.detach(), lp.entropy.detach(), gs);
  };
  auto [full_lp, full_ent, full_g] = run(false);
  auto [lp, ent, g] = run(true);
  // As in ChunkedLogProbsEqualFullLogits; the gradients as in ChunkedAndCheckpointedGradientsEqualPlainAutograd.
  EXPECT_LT((lp - full_lp * needed).abs().max().item<float>(), 1e-5);
  EXPECT_LT((ent - full_ent * needed).abs().max().item<float>(), 1e-4);
  EXPECT_EQ((lp * (1 - needed)).abs().max().item<float>(), 0.0f);
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_TRUE(at::allclose(g[i], full_g[i], 1e-4, 1e-5)) << m->named_parameters()[i].first;
}

TEST(ModelTransformer, ChunkedAndCheckpointedGradientsEqualPlainAutograd) {
  auto c = small_config(Architecture::qwen3, true);
  auto m = perturbed(c, 9);
  m->set_requires_grad(true);
  auto in = mixed_padding(c.vocab_size);
  at::Tensor w = at::rand({in.ids.size(0), in.ids.size(1) - 1});
  auto grads_of = [&](bool chunked, bool ckpt) {
    for (auto& [n, t] : m->named_parameters())
      if (t.grad().defined()) t.mutable_grad().zero_();
    at::Tensor loss;
    if (chunked) {
      auto lp = m->token_log_probs(in.ids, in.mask, in.pos, true, ckpt, 7);
      loss = (lp.log_probs * w).sum() + 0.3 * (lp.entropy * w).sum();
    } else {
      at::Tensor h = m->hidden_states(in.ids, in.mask, in.pos, ckpt);
      at::Tensor logp = at::log_softmax(m->lm_head(h), -1);
      at::Tensor tok = logp.slice(1, 0, -1).gather(2, in.ids.slice(1, 1).unsqueeze(-1)).squeeze(-1);
      at::Tensor ent = -(logp.exp() * logp).sum(-1).slice(1, 0, -1);
      loss = (tok * w).sum() + 0.3 * (ent * w).sum();
    }
    loss.backward();
    std::vector<at::Tensor> gs;
    for (auto& [n, t] : m->named_parameters()) gs.push_back(t.grad().clone());
    return gs;
  };
  auto ref = grads_of(false, false);
  // fp32 gradients in other groupings: ~1e-5 relative (see train_grad_accumulation) -> rtol 1e-4, and
  // atol 1e-5 for entries that cancel.
  for (auto [chunked, ckpt] : {std::pair{true, false}, {false, true}, {true, true}}) {
    auto got = grads_of(chunked, ckpt);
    for (size_t i = 0; i < ref.size(); ++i)
      EXPECT_TRUE(at::allclose(got[i], ref[i], 1e-4, 1e-5))
          << m->named_parameters()[i].first << " chunked=" << chunked << " ckpt=" << ckpt;
  }
}

// A contiguous per-sequence cache: the engine's contract in its simplest form.
class ContiguousCache : public AttentionBackend {
 public:
  ContiguousCache(const ModelConfig& c) : c_(c), k_(c.num_hidden_layers), v_(c.num_hidden_layers) {}
  at::Tensor attend(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) override {
    auto& K = k_[layer];
    auto& V = v_[layer];
    K = K.defined() ? at::cat({K, k}) : k;  // [S, Hkv, D]
    V = V.defined() ? at::cat({V, v}) : v;
    const int64_t n = q.size(0), S = K.size(0), g = c_.num_attention_heads / c_.num_key_value_heads;
    at::Tensor kk = K.repeat_interleave(g, 1).permute({1, 2, 0});  // [Hq, D, S]
    at::Tensor vv = V.repeat_interleave(g, 1).transpose(0, 1);      // [Hq, S, D]
    at::Tensor s = at::matmul(q.transpose(0, 1), kk) / std::sqrt(static_cast<double>(c_.head_dim));  // [Hq, n, S]
    // causal within this step: query i sits at position S - n + i
    at::Tensor allowed = at::arange(S).unsqueeze(0) <= (at::arange(n) + (S - n)).unsqueeze(1);
    s = s.masked_fill(allowed.logical_not(), -INFINITY);
    return at::matmul(at::softmax(s.to(at::kFloat), -1).to(q.scalar_type()), vv).transpose(0, 1).reshape({n, -1});
  }

 private:
  ModelConfig c_;
  std::vector<at::Tensor> k_, v_;
};

TEST(ModelTransformer, ForwardTokensWithExternalCacheEqualsFullForward) {
  auto c = small_config(Architecture::qwen2, true);
  auto m = perturbed(c, 13);
  at::NoGradGuard g;
  at::Tensor ids = at::randint(0, c.vocab_size, {1, 10}, at::kLong);
  at::Tensor pos = at::arange(10, at::kLong).unsqueeze(0);
  at::Tensor full = m->hidden_states(ids, at::ones_like(ids), pos)[0];
  ContiguousCache cache(c);
  at::Tensor prefill = m->forward_tokens(ids[0].slice(0, 0, 6), pos[0].slice(0, 0, 6), cache);
  std::vector<at::Tensor> rows{prefill};
  for (int64_t t = 6; t < 10; ++t) rows.push_back(m->forward_tokens(ids[0].slice(0, t, t + 1), pos[0].slice(0, t, t + 1), cache));
  at::Tensor inc = at::cat(rows);
  // 1-row and 10-row GEMMs: ~16 fp32 reductions of ~64 terms in quadrature, √16·√64·eps ≈ 4e-6
  // relative, on |h| ≲ 3.
  EXPECT_LT((inc - full).abs().max().item<float>(), 2e-5);
}

TEST(ModelTransformer, ValueHeadAndCriticFromPolicyCheckpoint) {
  TempConfigDir d;
  auto c = small_config(Architecture::qwen2, true);
  perturbed(c, 3)->save(d.path() + "/policy");
  auto critic = Transformer::load(d.path() + "/policy", at::kFloat, /*value_head=*/true, 4);
  auto in = mixed_padding(c.vocab_size);
  at::NoGradGuard g;
  at::Tensor v = critic->values(in.ids, in.mask, in.pos);
  EXPECT_EQ(v.sizes(), in.ids.sizes());
  EXPECT_TRUE(at::isfinite(v).all().item<bool>());
  critic->save(d.path() + "/critic");
  auto again = Transformer::load(d.path() + "/critic", at::kFloat, true);
  EXPECT_TRUE(at::equal(again->values(in.ids, in.mask, in.pos), v));
}

TEST(ModelTransformer, Bf16ForwardTracksFp32) {
  TempConfigDir d;
  auto c = small_config(Architecture::qwen3, false);
  perturbed(c, 21)->save(d.path() + "/m");
  auto f32 = Transformer::load(d.path() + "/m", at::kFloat);
  auto b16 = Transformer::load(d.path() + "/m", at::kBFloat16);
  auto in = mixed_padding(c.vocab_size);
  at::NoGradGuard g;
  auto a = f32->token_log_probs(in.ids, in.mask, in.pos).log_probs;
  auto b = b16->token_log_probs(in.ids, in.mask, in.pos).log_probs;
  at::Tensor valid = in.mask.slice(1, 1).to(at::kBool);
  EXPECT_LT((a - b).abs().masked_select(valid).max().item<float>(), 0.1);
}

TEST(ModelTransformer, LoadErrorsNameTheTensor) {
  TempConfigDir d;
  auto c = small_config(Architecture::qwen2, false);
  auto m = perturbed(c, 1);
  m->save(d.path() + "/m");
  // Drop lm_head: a config saying untied needs it.
  NamedTensors some;
  for (const auto& [n, t] : m->named_parameters())
    if (n != "lm_head.weight") some.emplace_back(n, t);
  write_safetensors(d.path() + "/m/model.safetensors", some);
  auto msg = roll::testing::error_of([&] { Transformer::load(d.path() + "/m", at::kFloat); });
  EXPECT_NE(msg.find("'lm_head.weight'"), std::string::npos) << msg;
  d.write("bad/config.json", R"({"model_type": "gpt2", "vocab_size": 10})");
  msg = roll::testing::error_of([&] { Transformer::load(d.path() + "/bad", at::kFloat); });
  EXPECT_NE(msg.find("gpt2"), std::string::npos) << msg;
}
