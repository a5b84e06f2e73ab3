#pragma once
// Shared pieces of the train_* tests: a tiny model with a small vocabulary, deterministic
// right-padded batches and ROLL's globally normalised token-mean loss.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <memory>

#include "roll/model/model_init.h"
#include "roll/model/transformer.h"
#include "roll/rl/agg_loss.h"
#include "roll/train/strategy.h"

namespace roll::test {

inline model::ModelConfig tiny_config(int64_t layers = 2, int64_t vocab = 96, bool tie = true,
                                      const std::string& arch = "qwen2") {
  model::ModelConfig c = model::preset_config("tiny", arch);
  c.vocab_size = vocab;
  c.num_hidden_layers = layers;
  c.tie_word_embeddings = tie;
  return c;
}

inline std::shared_ptr<model::Transformer> tiny_model(at::ScalarType dtype = at::kFloat, uint64_t seed = 7,
                                                      int64_t layers = 2, bool tie = true,
                                                      const std::string& arch = "qwen2") {
  // A larger init than HF's 0.02 so that the gradients are far from rounding noise.
  return model::Transformer::random(tiny_config(layers, 96, tie, arch), dtype, seed, 0.08);
}

struct TokenBatch {
  at::Tensor ids, mask, pos;  // [B, T]
  at::Tensor loss_mask;       // [B, T-1]: the response tokens whose log-probs are trained
  TokenBatch rows(int64_t begin, int64_t end) const {
    return {ids.slice(0, begin, end), mask.slice(0, begin, end), pos.slice(0, begin, end),
            loss_mask.slice(0, begin, end)};
  }
  TokenBatch select(const std::vector<int64_t>& idx) const {
    at::Tensor i = at::tensor(idx, at::kLong);
    return {ids.index_select(0, i), mask.index_select(0, i), pos.index_select(0, i), loss_mask.index_select(0, i)};
  }
};

// B rows of up to T tokens, right padded with different lengths; the first 3 tokens are the
// "prompt" (not trained).
inline TokenBatch make_batch(int64_t B, int64_t T, int64_t vocab, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  TokenBatch b;
  b.ids = at::randint(1, vocab, {B, T}, g, at::kLong);
  b.mask = at::zeros({B, T}, at::kLong);
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = T - (r * 3) % (T / 2);
    b.mask[r].slice(0, 0, len).fill_(1);
  }
  b.ids = b.ids * b.mask;
  b.pos = at::arange(T, at::kLong).unsqueeze(0).expand({B, T}).contiguous();
  b.loss_mask = b.mask.slice(1, 1, T).clone().to(at::kFloat);
  b.loss_mask.slice(1, 0, 2).zero_();
  return b;
}

// ROLL's micro-batch loss: token-mean of -log p over the global token count, times the loss scale
// (num_micro_batches x dp_size) that the strategy's ÷GA and DP averaging undo.
inline at::Tensor micro_loss(train::TrainStrategy& s, const TokenBatch& b, double global_tokens,
                             int64_t num_micro_batches, int64_t dp_size) {
  auto lp = s.log_probs(b.ids, b.mask, b.pos);
  rl::AggNorm norm;
  norm.num_tokens = global_tokens;
  at::Tensor loss = rl::agg_loss(-lp.log_probs * b.loss_mask, b.loss_mask, rl::LossAggMode::token_mean, norm);
  return loss * rl::loss_scale_factor(num_micro_batches, dp_size);
}

inline double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  const double denom = std::max(b.to(at::kDouble).norm().item<double>(), 1e-30);
  return (a.to(at::kDouble) - b.to(at::kDouble)).norm().item<double>() / denom;
}

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace roll::test
