#include "roll/engine/model_runner.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/engine/linear.h"

namespace roll::engine {

namespace {

at::Tensor optional_param(const model::Transformer& m, const std::string& name) {
  for (const auto& [k, v] : m.named_parameters())
    if (k == name) return v;
  return at::Tensor();
}

// HF's RMSNorm in fp32: x * rsqrt(mean(x^2) + eps) * w.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  at::Tensor y = x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return y.mul_(w.to(at::kFloat));
}

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t h = x.size(-1) / 2;
  return at::cat({-x.slice(-1, h), x.slice(-1, 0, h)}, -1);
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
}

at::Tensor ModelRunner::forward(const at::Tensor& tokens, const at::Tensor& positions, model::AttentionBackend& attn,
                                const at::Tensor& sample_rows) const {
  const auto& c = model_->config();
  const int64_t N = tokens.size(0), Hq = c.num_attention_heads, Hkv = c.num_key_value_heads, D = c.head_dim;
  at::Tensor x = at::embedding(embed_, tokens).to(at::kFloat);  // [N, H]
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq_;
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  at::Tensor cos = emb.cos().unsqueeze(1), sin = emb.sin().unsqueeze(1);  // [N, 1, D]
  for (size_t i = 0; i < layers_.size(); ++i) {
    const LayerWeights& L = layers_[i];
    at::Tensor h = rms_norm(x, L.in_norm, c.rms_norm_eps);
    at::Tensor q = engine::linear(h, L.q_w, L.q_b).view({N, Hq, D});
    at::Tensor k = engine::linear(h, L.k_w, L.k_b).view({N, Hkv, D});
    at::Tensor v = engine::linear(h, L.v_w, L.v_b).view({N, Hkv, D});
    if (c.qk_norm) {
      q = rms_norm(q, L.q_norm, c.rms_norm_eps);
      k = rms_norm(k, L.k_norm, c.rms_norm_eps);
    }
    q = q * cos + rotate_half(q) * sin;
    k = k * cos + rotate_half(k) * sin;
    at::Tensor a = attn.attend(static_cast<int64_t>(i), q, k, v);
    x = x + engine::linear(a, L.o_w);
    h = rms_norm(x, L.post_norm, c.rms_norm_eps);
    at::Tensor gate = engine::linear(h, L.gate_w);
    gate = at::silu_(gate).mul_(engine::linear(h, L.up_w));
    x = x + engine::linear(gate, L.down_w);
  }
  at::Tensor rows = x.index_select(0, sample_rows);
  return engine::linear(rms_norm(rows, norm_, c.rms_norm_eps).contiguous(), head_);
}

}  // namespace roll::engine
