#include "roll/engine/model_runner.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "roll/core/error.h"
#include "roll/core/log.h"
#include "roll/core/parallel_for.h"
#include "roll/engine/cpu_kernels.h"
#include "roll/engine/linear.h"

namespace roll::engine {

namespace {

at::Tensor optional_param(const model::Transformer& m, const std::string& name) {
  for (const auto& [k, v] : m.named_parameters())
    if (k == name) return v;
  return at::Tensor();
}

// Rows per parallel task for the row-wise ops below (they are cheap: only large steps split).
constexpr int64_t kRowGrain = 64;
// RMSNorm values per task (~1.5 us of work): a decode batch of 896-wide rows splits from 36 rows.
constexpr int64_t kNormGrain = 16384;

// HF's RMSNorm in fp32, one pass per row: x * rsqrt(mean(x^2) + eps) * w. x [rows, H] contiguous;
// w fp32 or bf16 (widened once per call, not through an ATen op).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  const int64_t H = x.size(-1), rows = x.numel() / H;
  at::Tensor y = at::empty_like(x);
  thread_local std::vector<float> widened;
  at::Tensor wf = w.scalar_type() == at::kBFloat16 ? w.contiguous() : w.to(at::kFloat).contiguous();
  const float* wp;
  if (wf.scalar_type() == at::kBFloat16) {
    widened.resize(H);
    kernels::bf16_to_float(reinterpret_cast<const uint16_t*>(wf.data_ptr<at::BFloat16>()), widened.data(), H);
    wp = widened.data();
  } else {
    wp = wf.data_ptr<float>();
  }
  const float* xp = x.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  // Vectorised sum of squares (fp32 lanes: relative error ~sqrt(H / 8) ulp, far below bf16's).
  at::parallel_for(0, rows, std::max<int64_t>(1, kNormGrain / H), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* a = xp + r * H;
      float* b = yp + r * H;
      const double ss = kernels::dot(a, a, H);
      const float inv = static_cast<float>(1.0 / std::sqrt(ss / H + eps));
      for (int64_t i = 0; i < H; ++i) b[i] = (a[i] * inv) * wp[i];
    }
  });
  return y;
}

// Rotate-half RoPE in place: x [N, heads, D]; cos/sin [N, D/2] (the two halves share angles).
void apply_rope_(at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t N = x.size(0), heads = x.size(1), D = x.size(2), h = D / 2;
  float* xp = x.data_ptr<float>();
  const float* cp = cos.data_ptr<float>();
  const float* sp = sin.data_ptr<float>();
  at::parallel_for(0, N, kRowGrain, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t j = 0; j < heads; ++j) {
        float* v = xp + (n * heads + j) * D;
        const float* c = cp + n * h;
        const float* s = sp + n * h;
        for (int64_t i = 0; i < h; ++i) {
          const float a = v[i], b = v[i + h];
          v[i] = a * c[i] - b * s[i];
          v[i + h] = b * c[i] + a * s[i];
        }
      }
  });
}

// gate <- silu(gate) * up, in place.
void silu_mul_(at::Tensor& gate, const at::Tensor& up) {
  float* g = gate.data_ptr<float>();
  const float* u = up.data_ptr<float>();
  at::parallel_for(0, gate.numel(), 1 << 14,
                   [&](int64_t i0, int64_t i1) { kernels::silu_mul(g + i0, u + i0, i1 - i0); });
}

}  // namespace

ModelRunner::ModelRunner(std::shared_ptr<const model::Transformer> model) : model_(std::move(model)) {
  const auto& c = model_->config();
  if (model_->has_value_head()) throw Error("the inference engine needs a model with an LM head, not a value head");
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = fmt::format("model.layers.{}.", i);
    auto get = [&](const char* n) { return optional_param(*model_, p + n); };
    layers_.push_back({get("self_attn.q_proj.weight"), get("self_attn.q_proj.bias"), get("self_attn.k_proj.weight"),
                       get("self_attn.k_proj.bias"), get("self_attn.v_proj.weight"), get("self_attn.v_proj.bias"),
                       get("self_attn.o_proj.weight"), get("self_attn.q_norm.weight"), get("self_attn.k_norm.weight"),
                       get("input_layernorm.weight"), get("post_attention_layernorm.weight"),
                       get("mlp.gate_proj.weight"), get("mlp.up_proj.weight"), get("mlp.down_proj.weight")});
  }
  embed_ = model_->parameter("model.embed_tokens.weight");
  norm_ = model_->parameter("model.norm.weight");
  head_ = c.tie_word_embeddings ? embed_ : model_->parameter("lm_head.weight");
  // Same inverse frequencies as the model's RoPE tables.
  inv_freq_ = 1.0 / at::pow(c.rope_theta, at::arange(0, c.head_dim, 2, at::kLong).to(at::kFloat) /
                                              static_cast<double>(c.head_dim));
  static std::once_flag logged;  // once per process, whichever model comes first
  std::call_once(logged, [&] { log::info("engine matrix products: {}", engine::linear_path(head_.scalar_type())); });
}

at::Tensor ModelRunner::forward(const at::Tensor& tokens, const at::Tensor& positions, model::AttentionBackend& attn,
                                const at::Tensor& sample_rows, StepPhaseSeconds* phases) const {
  const auto& c = model_->config();
  const int64_t N = tokens.size(0), Hq = c.num_attention_heads, Hkv = c.num_key_value_heads, D = c.head_dim;
  StepPhaseSeconds unused;
  StepPhaseClock clock(phases ? *phases : unused);
  using P = StepPhase;
  at::Tensor x = at::embedding(embed_, tokens).to(at::kFloat).contiguous();  // [N, H]
  at::Tensor angles = positions.to(at::kFloat).unsqueeze(-1) * inv_freq_;    // [N, D/2]
  at::Tensor cos = angles.cos(), sin = angles.sin();
  clock.mark(P::embed);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const LayerWeights& L = layers_[i];
    at::Tensor h = rms_norm(x, L.in_norm, c.rms_norm_eps);
    clock.mark(P::norm);
    std::vector<at::Tensor> qkv = engine::linear_shared_input(h, {L.q_w, L.k_w, L.v_w}, {L.q_b, L.k_b, L.v_b});
    clock.mark(P::qkv);
    at::Tensor q = qkv[0].view({N, Hq, D}), k = qkv[1].view({N, Hkv, D}), v = qkv[2].view({N, Hkv, D});
    if (c.qk_norm) {
      q = rms_norm(q, L.q_norm, c.rms_norm_eps);
      k = rms_norm(k, L.k_norm, c.rms_norm_eps);
      clock.mark(P::norm);
    }
    apply_rope_(q, cos, sin);
    apply_rope_(k, cos, sin);
    clock.mark(P::rope);
    at::Tensor a = attn.attend(static_cast<int64_t>(i), q, k, v);
    clock.mark(P::attention);
    x.add_(engine::linear(a.contiguous(), L.o_w));
    clock.mark(P::o_proj);
    h = rms_norm(x, L.post_norm, c.rms_norm_eps);
    clock.mark(P::norm);
    std::vector<at::Tensor> gate_up = engine::linear_shared_input(h, {L.gate_w, L.up_w});
    clock.mark(P::gate_up);
    at::Tensor& gate = gate_up[0];
    silu_mul_(gate, gate_up[1]);
    clock.mark(P::swiglu);
    x.add_(engine::linear(gate, L.down_w));
    clock.mark(P::down);
  }
  at::Tensor rows = x.index_select(0, sample_rows);
  at::Tensor normed = rms_norm(rows, norm_, c.rms_norm_eps).contiguous();
  clock.mark(P::norm);
  at::Tensor logits = engine::linear(normed, head_);
  clock.mark(P::lm_head);
  return logits;
}

}  // namespace roll::engine
