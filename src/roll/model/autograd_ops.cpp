#include "roll/model/autograd_ops.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <mutex>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "roll/model/logit_rows.h"
#include "roll/model/rope_kernel.h"

namespace roll::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

using CheckpointedFn = std::function<std::vector<at::Tensor>(const at::Tensor&)>;

struct FnHolder : torch::CustomClassHolder {
  explicit FnHolder(std::shared_ptr<CheckpointedFn> f) : fn(std::move(f)) {}
  std::shared_ptr<CheckpointedFn> fn;
};

at::Tensor cpu_rng_state() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_cpu_rng_state(const at::Tensor& state) {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

struct CheckpointFn : public torch::autograd::Function<CheckpointFn> {
  static variable_list forward(AutogradContext* ctx, std::shared_ptr<CheckpointedFn> fn, at::Tensor x,
                               at::TensorList params) {
    // The callable travels in a capsule: saved_data only holds IValues.
    ctx->saved_data["fn"] = c10::IValue::make_capsule(c10::make_intrusive<FnHolder>(fn));
    std::vector<at::Tensor> to_save{x};
    to_save.insert(to_save.end(), params.begin(), params.end());
    ctx->save_for_backward(to_save);
    // The recompute in backward must draw what this forward draws (dropout): keep the CPU
    // generator's state, as torch.utils.checkpoint's preserve_rng_state does.
    ctx->saved_data["rng"] = cpu_rng_state();
    ctx->set_materialize_grads(false);  // an output without a gradient takes no part in backward
    at::NoGradGuard no_grad;
    return (*fn)(x);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    auto holder = ctx->saved_data["fn"].toCapsule();
    auto fn = static_cast<FnHolder*>(holder.get())->fn;
    at::Tensor x = saved[0].detach().requires_grad_(saved[0].requires_grad());
    variable_list inputs{x};
    for (size_t i = 1; i < saved.size(); ++i) inputs.push_back(saved[i]);
    variable_list ys;
    {
      const at::Tensor now = cpu_rng_state();
      set_cpu_rng_state(ctx->saved_data["rng"].toTensor());
      at::AutoGradMode grad_mode(true);
      ys = (*fn)(x);
      set_cpu_rng_state(now);
    }
    // Gradients for the input and every parameter that wants one, from the outputs that carry a
    // gradient and a graph.
    variable_list wanted, outputs, output_grads;
    std::vector<size_t> where;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i].requires_grad()) {
        wanted.push_back(inputs[i]);
        where.push_back(i);
      }
    for (size_t i = 0; i < ys.size(); ++i)
      if (grad_out[i].defined() && ys[i].requires_grad()) {
        outputs.push_back(ys[i]);
        output_grads.push_back(grad_out[i]);
      }
    variable_list grads = wanted.empty() || outputs.empty()
                              ? variable_list(wanted.size())
                              : torch::autograd::grad(outputs, wanted, output_grads, /*retain_graph=*/false,
                                                      /*create_graph=*/false, /*allow_unused=*/true);
    variable_list out(1 + inputs.size());  // slot 0: the fn argument (not a tensor)
    for (size_t k = 0; k < where.size(); ++k) out[1 + where[k]] = grads[k];
    return out;
  }
};

// Forward of the chunked log-prob, shared by the autograd and the no-grad paths. A bf16 head on an
// AVX2 CPU takes the fused row kernels (model/logit_rows.h): its logits stay bf16, as the product
// rounds them, and backward needs only them and each row's log-sum-exp (`lse_out`). With `kept`
// ([M, V]) every row is kept for a backward without recompute: the bf16 logits on the fused path,
// else the fp32 log-softmax.
void chunked_forward(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                     bool with_entropy, int64_t chunk, at::Tensor& logp, at::Tensor& entropy,
                     at::Tensor* kept = nullptr, at::Tensor* lse_out = nullptr) {
  const int64_t m = hidden.size(0);
  logp = at::empty({m}, hidden.options().dtype(at::kFloat));
  if (with_entropy) entropy = at::empty({m}, hidden.options().dtype(at::kFloat));
  if (logit_rows_apply(hidden, weight)) {
    at::Tensor lse = at::empty({m}, hidden.options().dtype(at::kFloat));
    at::Tensor scratch;
    for (int64_t s = 0; s < m; s += chunk) {
      const int64_t e = std::min(m, s + chunk);
      at::Tensor logits;
      if (kept) {
        logits = kept->slice(0, s, e);
      } else {
        if (!scratch.defined()) scratch = at::empty({std::min(chunk, m), weight.size(0)}, weight.options());
        logits = scratch.slice(0, 0, e - s);
      }
      at::mm_out(logits, hidden.slice(0, s, e), weight.t());
      logit_rows_forward(logits, targets.slice(0, s, e), lse.slice(0, s, e), logp.slice(0, s, e),
                         with_entropy ? entropy.slice(0, s, e) : at::Tensor());
    }
    if (lse_out) *lse_out = lse;
    return;
  }
  for (int64_t s = 0; s < m; s += chunk) {
    const int64_t e = std::min(m, s + chunk);
    at::Tensor logits = at::matmul(hidden.slice(0, s, e), weight.t()).to(at::kFloat);
    at::Tensor lse = at::logsumexp(logits, -1);
    at::Tensor tgt = logits.gather(1, targets.slice(0, s, e).unsqueeze(1)).squeeze(1);
    logp.slice(0, s, e).copy_(tgt - lse);
    if (kept) {
      at::Tensor rows = kept->slice(0, s, e);
      at::sub_out(rows, logits, lse.unsqueeze(1));
    }
    if (with_entropy) {
      at::Tensor p = at::softmax(logits, -1);
      entropy.slice(0, s, e).copy_(lse - (p * logits).sum(-1));
    }
  }
}

// Backward of the fused path: each chunk's logits (kept, else recomputed in bf16) give its logit
// gradient in one pass (bf16, as the products take it), then the hidden gradient's product; the
// weight gradient is one product over all rows at the end, or per chunk into fp32 when the rows
// were not kept.
variable_list fused_backward(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets,
                             const at::Tensor& entropy, const at::Tensor& kept, const at::Tensor& lse,
                             const at::Tensor& g_logp, const at::Tensor& g_ent, int64_t chunk, bool weight_grad) {
  at::NoGradGuard no_grad;
  const int64_t m = hidden.size(0), vocab = weight.size(0);
  const bool one_product = weight_grad && kept.defined() && m > 0;
  at::Tensor g_hidden = at::empty(hidden.sizes(), hidden.options());
  at::Tensor g_rows = one_product ? at::empty({m, vocab}, weight.options()) : at::Tensor();
  at::Tensor g_weight = weight_grad && !one_product ? at::zeros(weight.sizes(), weight.options().dtype(at::kFloat))
                                                    : at::Tensor();
  at::Tensor scratch_logits, scratch_grad;
  auto slice_or = [](const at::Tensor& t, int64_t s, int64_t e) { return t.defined() ? t.slice(0, s, e) : t; };
  for (int64_t s = 0; s < m; s += chunk) {
    const int64_t e = std::min(m, s + chunk);
    const at::Tensor h = hidden.slice(0, s, e);
    at::Tensor logits;
    if (kept.defined()) {
      logits = kept.slice(0, s, e);
    } else {
      if (!scratch_logits.defined()) scratch_logits = at::empty({std::min(chunk, m), vocab}, weight.options());
      logits = scratch_logits.slice(0, 0, e - s);
      at::mm_out(logits, h, weight.t());
    }
    at::Tensor g;
    if (one_product) {
      g = g_rows.slice(0, s, e);
    } else {
      if (!scratch_grad.defined()) scratch_grad = at::empty({std::min(chunk, m), vocab}, weight.options());
      g = scratch_grad.slice(0, 0, e - s);
    }
    logit_rows_backward(logits, targets.slice(0, s, e), lse.slice(0, s, e), slice_or(entropy, s, e),
                        slice_or(g_logp, s, e), slice_or(g_ent, s, e), g);
    at::Tensor gh = g_hidden.slice(0, s, e);
    at::mm_out(gh, g, weight);
    if (g_weight.defined()) g_weight.addmm_(g.t().to(at::kFloat), h.to(at::kFloat));
  }
  at::Tensor g_w;
  if (one_product)
    g_w = at::mm(g_rows.t(), hidden);
  else if (g_weight.defined())
    g_w = g_weight.to(weight.scalar_type());
  return {g_hidden, g_w, at::Tensor(), at::Tensor(), at::Tensor()};
}

struct ChunkedLogProbFn : public torch::autograd::Function<ChunkedLogProbFn> {
  static variable_list forward(AutogradContext* ctx, at::Tensor hidden, at::Tensor weight, at::Tensor targets,
                               bool with_entropy, int64_t chunk) {
    at::Tensor logp, entropy, kept, lse;
    const bool fused = logit_rows_apply(hidden, weight);
    {
      at::NoGradGuard no_grad;
      // Backward needs every row's log-softmax. Recomputing it is a third of the head's backward
      // products; keeping it costs rows x vocab fp32 (bf16 logits on the fused path), which is no
      // more than the [vocab, hidden] fp32 weight gradient backward makes anyway while there are
      // at most `hidden` rows.
      if (hidden.size(0) <= weight.size(1))
        kept = at::empty({hidden.size(0), weight.size(0)}, fused ? weight.options() : hidden.options().dtype(at::kFloat));
      chunked_forward(hidden, weight, targets, with_entropy, chunk, logp, entropy, kept.defined() ? &kept : nullptr,
                      &lse);
    }
    ctx->saved_data["chunk"] = chunk;
    ctx->saved_data["with_entropy"] = with_entropy;
    ctx->saved_data["fused"] = fused;
    if (!with_entropy) entropy = at::zeros_like(logp);
    ctx->save_for_backward({hidden, weight, targets, entropy, kept, lse});
    return {logp, entropy};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor& hidden = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& targets = saved[2];
    const at::Tensor& entropy = saved[3];
    const at::Tensor& kept = saved[4];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const bool with_entropy = ctx->saved_data["with_entropy"].toBool();
    at::Tensor g_logp = grads[0].defined() ? grads[0].to(at::kFloat).contiguous() : at::Tensor();
    at::Tensor g_ent = with_entropy && grads[1].defined() ? grads[1].to(at::kFloat).contiguous() : at::Tensor();
    if (ctx->saved_data["fused"].toBool())
      return fused_backward(hidden, weight, targets, entropy, kept, saved[5], g_logp, g_ent, chunk,
                            ctx->needs_input_grad(1));
    const int64_t m = hidden.size(0);
    const bool fp32 = hidden.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat;
    // fp32: both gradients are written by the products themselves (the first chunk's product sets
    // the weight gradient, the rest add to it): no [vocab, hidden] temporary per chunk. bf16 (and
    // fp16) with the log-softmax kept: the chunks' logit gradients, rounded to the weight's dtype
    // as the hidden gradient's product takes them anyway, are gathered and the weight gradient is
    // one product over all rows at the end. ATen has no bf16 x bf16 -> fp32 addmm, so the per-chunk
    // path ran thin fp32 products into an fp32 [vocab, hidden] accumulator at a fraction of the
    // bf16 rate; the one product accumulates in fp32 inside the GEMM and rounds once, as the fp32
    // accumulator's cast did.
    // A frozen head (LoRA, a frozen embedding tied to it) takes no weight gradient: a third of the
    // head's backward products.
    const bool weight_grad = ctx->needs_input_grad(1);
    const bool one_product =
        weight_grad && !fp32 && kept.defined() && m > 0 && hidden.scalar_type() == weight.scalar_type();
    at::Tensor g_hidden = at::empty(hidden.sizes(), hidden.options());
    at::Tensor g_rows = one_product ? at::empty({m, weight.size(0)}, weight.options()) : at::Tensor();
    at::Tensor g_weight = !weight_grad || one_product ? at::Tensor()
                                                      : at::empty(weight.sizes(), weight.options().dtype(at::kFloat));
    if (m == 0 && g_weight.defined()) g_weight.zero_();
    at::NoGradGuard no_grad;
    for (int64_t s = 0; s < m; s += chunk) {
      const int64_t e = std::min(m, s + chunk);
      at::Tensor h = hidden.slice(0, s, e);
      at::Tensor logp_all = kept.defined() ? kept.slice(0, s, e)
                                           : at::log_softmax(at::matmul(h, weight.t()).to(at::kFloat), -1);
      at::Tensor p = logp_all.exp();
      at::Tensor g;  // d loss / d logits
      if (g_logp.defined()) {
        // d logp_target / d z = onehot(target) - p
        at::Tensor gl = g_logp.slice(0, s, e).unsqueeze(1);
        g = p * gl.neg();
        g.scatter_add_(1, targets.slice(0, s, e).unsqueeze(1), gl);
      }
      if (g_ent.defined()) {
        // d H / d z_j = -p_j (log p_j + H)
        at::Tensor ge = g_ent.slice(0, s, e).unsqueeze(1);
        at::Tensor t = ge * p * (logp_all + entropy.slice(0, s, e).unsqueeze(1));
        g = g.defined() ? g.sub_(t) : t.neg_();
      }
      if (!g.defined()) g = at::zeros_like(p);
      at::Tensor gh = g_hidden.slice(0, s, e);
      if (!weight_grad) {
        if (fp32)
          at::mm_out(gh, g, weight);
        else
          gh.copy_(at::matmul(g.to(hidden.scalar_type()), weight));
      } else if (fp32) {
        at::mm_out(gh, g, weight);
        g_weight.addmm_(g.t(), h, /*beta=*/s == 0 ? 0.0 : 1.0);
      } else if (one_product) {
        at::Tensor gr = g_rows.slice(0, s, e);
        gr.copy_(g);
        at::mm_out(gh, gr, weight);
      } else {
        gh.copy_(at::matmul(g.to(hidden.scalar_type()), weight));
        g_weight.addmm_(g.t(), h.to(at::kFloat), /*beta=*/s == 0 ? 0.0 : 1.0);
      }
    }
    if (one_product) return {g_hidden, at::mm(g_rows.t(), hidden), at::Tensor(), at::Tensor(), at::Tensor()};
    return {g_hidden, weight_grad ? g_weight.to(weight.scalar_type()) : at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

// rotate_half(x) = cat(−x2, x1) over the last axis; its transpose takes y to cat(y2, −y1).
at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t h = x.size(-1) / 2;
  return at::cat({-x.slice(-1, h), x.slice(-1, 0, h)}, -1);
}

at::Tensor rotate_half_transposed(const at::Tensor& y) {
  const int64_t h = y.size(-1) / 2;
  return at::cat({y.slice(-1, h), -y.slice(-1, 0, h)}, -1);
}

at::Tensor rope_formula(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return x * cos + rotate_half(x) * sin;
}

// The formula, or its one-pass kernel where it applies (model/rope_kernel.h).
at::Tensor rope_forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  return rope_kernel_applies(x, cos, sin) ? rope_cpu(x, cos, sin, /*transpose=*/false) : rope_formula(x, cos, sin);
}

struct RopeFn : public torch::autograd::Function<RopeFn> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    ctx->save_for_backward({cos, sin});
    at::NoGradGuard no_grad;
    return rope_forward(x, cos, sin);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor g = grads[0].contiguous();
    if (rope_kernel_applies(g, saved[0], saved[1]))
      return {rope_cpu(g, saved[0], saved[1], /*transpose=*/true), at::Tensor(), at::Tensor()};
    return {g * saved[0] + rotate_half_transposed(g * saved[1]), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  if (!at::GradMode::is_enabled() || !x.requires_grad()) return rope_forward(x, cos, sin);
  return RopeFn::apply(x, cos, sin);
}

std::vector<at::Tensor> checkpoint_outputs(const CheckpointedFn& fn, const at::Tensor& x, at::TensorList params) {
  if (!at::GradMode::is_enabled()) return fn(x);
  return CheckpointFn::apply(std::make_shared<CheckpointedFn>(fn), x, params);
}

at::Tensor checkpoint(const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x,
                      at::TensorList params) {
  return checkpoint_outputs([fn](const at::Tensor& in) { return std::vector<at::Tensor>{fn(in)}; }, x, params)[0];
}

std::pair<at::Tensor, at::Tensor> chunked_token_log_probs(const at::Tensor& hidden, const at::Tensor& weight,
                                                          const at::Tensor& targets, bool with_entropy,
                                                          int64_t chunk) {
  chunk = std::max<int64_t>(1, chunk);
  if (!at::GradMode::is_enabled() || (!hidden.requires_grad() && !weight.requires_grad())) {
    at::Tensor logp, entropy;
    chunked_forward(hidden, weight, targets, with_entropy, chunk, logp, entropy);
    return {logp, entropy};
  }
  auto out = ChunkedLogProbFn::apply(hidden, weight, targets, with_entropy, chunk);
  return {out[0], with_entropy ? out[1] : at::Tensor()};
}

}  // namespace roll::model
