#pragma once
// Shared pieces of the workers_* tests: a fixed RLVR-style batch over a tiny model, full-softmax
// log-probs (independent of the chunked LM-head op the roles use), ROLL's seeded micro-batch order
// and the optimizers, written out by hand for the single-process references.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "roll/core/batch.h"
#include "roll/model/transformer.h"
#include "roll/rl/metrics.h"
#include "roll/workers/metrics_json.h"
#include "multiprocess.h"
#include "train_test_util.h"

namespace roll::test {

constexpr int64_t kWorkerRows = 8, kWorkerSeq = 24, kWorkerPrompt = 6;

// A fresh directory under /tmp, removed with everything in it when the test is done.
struct ScratchDir {
  std::string path = make_scratch_dir();
  ScratchDir() = default;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// log p(input_ids[:, t+1]) and the entropy of the full softmax, [B, S-1], from Transformer::logits.
inline std::pair<at::Tensor, at::Tensor> full_log_probs(const model::Transformer& m, const at::Tensor& ids,
                                                        const at::Tensor& mask, const at::Tensor& pos) {
  const int64_t S = ids.size(1);
  at::Tensor logp = at::log_softmax(m.logits(ids, mask, pos).slice(1, 0, S - 1), -1);
  at::Tensor lp = logp.gather(-1, ids.slice(1, 1, S).unsqueeze(-1)).squeeze(-1);
  at::Tensor ent = -(logp.exp() * logp).sum(-1);
  return {lp, ent};
}

// kWorkerRows right-padded rows of up to kWorkerSeq tokens: a prompt of kWorkerPrompt tokens, then
// the response; odd rows have a 2-token gap in their response mask (an agentic observation turn),
// so segment ratios see two turns. Per-token tensors are [B, S-1] and zero outside the response:
// advantages, ref/old/infer log-probs (the initial model's ℓ plus noise), train_infer_is_weight;
// final_response_mask drops row 5; scores of both signs; `difficulty` and `sample_uuid` columns.
inline Batch worker_batch(const model::Transformer& m0, uint64_t seed) {
  const int64_t B = kWorkerRows, S = kWorkerSeq;
  at::Generator g = at::detail::createCPUGenerator(seed);
  at::Tensor ids = at::randint(1, m0.config().vocab_size, {B, S}, g, at::kLong);
  at::Tensor attn = at::zeros({B, S}, at::kLong), resp = at::zeros({B, S}, at::kLong);
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = S - (r % 4) * 3;
    attn[r].slice(0, 0, len).fill_(1);
    resp[r].slice(0, kWorkerPrompt, len).fill_(1);
    if (r % 2 == 1) resp[r].slice(0, kWorkerPrompt + 4, kWorkerPrompt + 6).zero_();
  }
  ids = ids * attn;
  at::Tensor pos = (attn.cumsum(1) - 1).clamp_min(0);
  at::Tensor m = resp.slice(1, 1, S).to(at::kFloat);
  at::Tensor lp0;
  {
    at::NoGradGuard no_grad;
    lp0 = full_log_probs(m0, ids, attn, pos).first * m;
  }
  auto noise = [&](double scale) { return at::randn({B, S - 1}, g) * scale; };
  Batch b(B);
  b.set_tensor("input_ids", ids);
  b.set_tensor("attention_mask", attn);
  b.set_tensor("position_ids", pos);
  b.set_tensor("response_mask", resp);
  b.set_tensor("advantages", at::randn({B, S - 1}, g) * m);
  b.set_tensor("ref_log_probs", (lp0 + noise(0.05)) * m);
  b.set_tensor("old_log_probs", (lp0 + noise(0.02)) * m);
  b.set_tensor("infer_logprobs", (lp0 + noise(0.05)) * m);
  b.set_tensor("train_infer_is_weight", (at::rand({B, S - 1}, g) * 0.4 + 0.8) * m);
  at::Tensor fm = m.clone();
  fm[5].zero_();
  b.set_tensor("final_response_mask", fm);
  b.set_tensor("scores", at::tensor(std::vector<double>{1.0, -0.5, 0.0, 2.0, -1.0, 1.0, 0.5, -2.0}).to(at::kFloat));
  NonTensorColumn difficulty, uuid;
  for (int64_t r = 0; r < B; ++r) {
    difficulty.push_back(static_cast<double>(r) / 7.0);
    uuid.push_back("uuid-" + std::to_string(r));
  }
  b.set_column("difficulty", difficulty);
  b.set_column("sample_uuid", uuid);
  return b;
}

// ROLL's DataProto.make_iterator order over n rows: per epoch the DataLoader iterator draws one
// int64 (its base seed), RandomSampler draws randperm(n) and, at exhaustion, one more randperm(n).
inline std::vector<std::vector<int64_t>> shuffled_epochs(int64_t n, int64_t epochs, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  std::vector<std::vector<int64_t>> out;
  for (int64_t e = 0; e < epochs; ++e) {
    at::empty({}, at::kLong).random_(g);
    at::Tensor perm = at::randperm(n, g, at::kLong);
    at::randperm(n, g, at::kLong);
    out.emplace_back(perm.data_ptr<int64_t>(), perm.data_ptr<int64_t>() + n);
  }
  return out;
}

// The optimizers of the references: plain SGD and torch.optim.AdamW's formulas, with the global
// L2 clip (coefficient min(1, max / (norm + 1e-6))) applied first. Returns the pre-clip norm.
struct ReferenceOptimizer {
  std::string kind = "sgd";
  double lr = 0.1, weight_decay = 0.0, eps = 1e-6, beta1 = 0.9, beta2 = 0.999, max_grad_norm = 1.0;
  int64_t t = 0;
  std::vector<at::Tensor> exp_avg, exp_avg_sq;

  double step(const std::vector<at::Tensor>& params) {
    at::NoGradGuard no_grad;
    double sq = 0;
    for (const at::Tensor& p : params)
      if (p.grad().defined()) sq += p.grad().to(at::kDouble).pow(2).sum().item<double>();
    const double norm = std::sqrt(sq);
    const double coef = std::min(1.0, max_grad_norm / (norm + 1e-6));
    ++t;
    if (exp_avg.empty())
      for (const at::Tensor& p : params) {
        exp_avg.push_back(at::zeros_like(p));
        exp_avg_sq.push_back(at::zeros_like(p));
      }
    for (size_t k = 0; k < params.size(); ++k) {
      at::Tensor p = params[k];
      at::Tensor g = p.grad().defined() ? p.grad() * coef : at::zeros_like(p);
      if (kind == "sgd") {
        p.sub_(g * lr);
        continue;
      }
      p.mul_(1.0 - lr * weight_decay);
      exp_avg[k].mul_(beta1).add_(g * (1.0 - beta1));
      exp_avg_sq[k].mul_(beta2).add_(g * g * (1.0 - beta2));
      const double bc1 = 1.0 - std::pow(beta1, static_cast<double>(t));
      const double bc2 = 1.0 - std::pow(beta2, static_cast<double>(t));
      at::Tensor denom = exp_avg_sq[k].sqrt() / std::sqrt(bc2) + eps;
      p.sub_(exp_avg[k] / denom * (lr / bc1));
    }
    for (const at::Tensor& p : params)
      if (p.grad().defined()) p.mutable_grad().reset();
    return norm;
  }
};

inline std::vector<at::Tensor> parameter_list(const model::Transformer& m) {
  std::vector<at::Tensor> out;
  for (const auto& [name, t] : m.named_parameters()) out.push_back(t);
  return out;
}

// Multi-process tests: every rank writes its train_step metrics to <prefix>.rank<r>.json; rank 0
// then reads them all (after a barrier) and concatenates them in rank order, as the pipeline's
// Batch::concat does. `rank0_key` (a per-step metric) is also returned as rank 0 reported it.
inline void write_rank_metrics(const std::string& prefix, int rank, const Batch& out) {
  std::ofstream(prefix + ".rank" + std::to_string(rank) + ".json") << out.meta.at("metrics").dump();
}

inline rl::MetricMap read_rank_metrics(const std::string& prefix, int world, const std::string& rank0_key,
                                       std::vector<double>* rank0_values) {
  rl::MetricMap all;
  for (int r = 0; r < world; ++r) {
    std::ifstream in(prefix + ".rank" + std::to_string(r) + ".json");
    rl::MetricMap part = workers::metrics_from_json(nlohmann::json::parse(in));
    if (r == 0) *rank0_values = part.at(rank0_key);
    all.merge(part);
  }
  return all;
}

// Same keys; each value within rel·|want| + abs.
inline void expect_metrics_near(const std::map<std::string, double>& got, const std::map<std::string, double>& want,
                                double rel, double abs, const std::string& what) {
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) {
      ADD_FAILURE() << what << ": metric " << k << " missing";
      continue;
    }
    EXPECT_LE(std::abs(it->second - v), rel * std::abs(v) + abs) << what << ": " << k << " = " << it->second
                                                                  << ", reference " << v;
  }
  for (const auto& [k, v] : got)
    if (!want.count(k)) ADD_FAILURE() << what << ": unexpected metric " << k << " = " << v;
}

inline double worst_param_diff(const model::NamedTensors& got, const model::NamedTensors& want, std::string* where) {
  double worst = 0;
  EXPECT_EQ(got.size(), want.size());
  for (size_t k = 0; k < std::min(got.size(), want.size()); ++k) {
    EXPECT_EQ(got[k].first, want[k].first);
    const double d = max_abs_diff(got[k].second, want[k].second);
    if (d > worst) worst = d, *where = want[k].first;
  }
  return worst;
}

}  // namespace roll::test
