// model/autograd_ops: the chunked LM-head log-probs against plain autograd over full logits, on
// both of its backward paths (the forward's log-softmax kept while rows <= hidden, recomputed
// beyond).
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>

#include "roll/model/autograd_ops.h"

namespace {

struct Grads {
  at::Tensor logp, entropy, hidden, weight;
};

Grads run(int64_t rows, int64_t hidden_size, int64_t vocab, int64_t chunk, bool chunked) {
  at::manual_seed(rows * 31 + hidden_size);
  at::Tensor h = at::randn({rows, hidden_size}, at::kDouble).to(at::kFloat).requires_grad_(true);
  at::Tensor w = (at::randn({vocab, hidden_size}, at::kDouble) * 0.3).to(at::kFloat).requires_grad_(true);
  at::Tensor targets = at::randint(0, vocab, {rows}, at::kLong);
  at::Tensor gl = at::rand({rows}), ge = at::rand({rows});
  at::Tensor logp, ent;
  if (chunked) {
    std::tie(logp, ent) = roll::model::chunked_token_log_probs(h, w, targets, true, chunk);
  } else {
    at::Tensor all = at::log_softmax(at::matmul(h, w.t()), -1);
    logp = all.gather(1, targets.unsqueeze(1)).squeeze(1);
    ent = -(all.exp() * all).sum(-1);
  }
  ((logp * gl).sum() + 0.3 * (ent * ge).sum()).backward();
  return {logp.detach(), ent.detach(), h.grad(), w.grad()};
}

// fp32 sums over the vocabulary in another grouping: relative ~1e-6 per term; rtol 1e-4 and
// atol 1e-5 for entries that cancel, as the transformer's gradient tests use.
void expect_close(const at::Tensor& a, const at::Tensor& b, const char* what) {
  EXPECT_TRUE(at::allclose(a, b, 1e-4, 1e-5)) << what << " max diff " << (a - b).abs().max().item<double>();
}

}  // namespace

TEST(ModelAutogradOps, ChunkedLogProbsMatchFullLogitsOnBothBackwardPaths) {
  // rows <= hidden keeps the forward's log-softmax; rows > hidden recomputes it chunk by chunk.
  for (auto [rows, hidden] : {std::pair<int64_t, int64_t>{12, 16}, {40, 16}}) {
    const Grads ref = run(rows, hidden, 97, 5, false);
    const Grads got = run(rows, hidden, 97, 5, true);
    SCOPED_TRACE(rows);
    expect_close(got.logp, ref.logp, "log-probs");
    expect_close(got.entropy, ref.entropy, "entropy");
    expect_close(got.hidden, ref.hidden, "hidden gradient");
    expect_close(got.weight, ref.weight, "weight gradient");
  }
}
