#include "roll/model/transformer.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "roll/core/error.h"
#include "roll/model/autograd_ops.h"
#include "roll/model/lora_linear.h"
#include "roll/model/rms_norm.h"
#include "roll/model/swiglu.h"

namespace roll::model {

struct Transformer::Layer {
  // The LoRA adapter of one linear module (undefined when the module has none).
  struct Adapter {
    at::Tensor a, b;  // A [rank, in], B [out, rank]
  };
  at::Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, q_norm, k_norm, in_norm, post_norm, gate_w, up_w, down_w;
  Adapter q_l, k_l, v_l, o_l, gate_l, up_l, down_l;
  std::vector<at::Tensor> all() const {
    std::vector<at::Tensor> out;
    for (const auto* t : {&q_w, &q_b, &k_w, &k_b, &v_w, &v_b, &o_w, &q_norm, &k_norm, &in_norm, &post_norm, &gate_w,
                          &up_w, &down_w})
      if (t->defined()) out.push_back(*t);
    for (const Adapter* a : {&q_l, &k_l, &v_l, &o_l, &gate_l, &up_l, &down_l})
      if (a->a.defined()) {
        out.push_back(a->a);
        out.push_back(a->b);
      }
    return out;
  }
};

namespace {

// cos/sin of HF's rotate-half RoPE for `positions` (any shape) -> [..., head_dim].
std::pair<at::Tensor, at::Tensor> rope_tables(const at::Tensor& positions, int64_t head_dim, double theta,
                                              at::ScalarType dtype) {
  at::Tensor inv_freq =
      1.0 / at::pow(theta, at::arange(0, head_dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) /
                               static_cast<double>(head_dim));
  at::Tensor freqs = positions.to(at::kFloat).unsqueeze(-1) * inv_freq;
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return b.defined() ? at::linear(x, w, b) : at::linear(x, w);
}

// How the adapters take part in one forward: scale 0 = not at all (none, or disabled); dropout
// only in a forward that trains (decided once per forward: a checkpointed layer runs its forward
// without autograd and its recompute with it, and both must drop the same inputs).
struct AdapterUse {
  double scale = 0;
  double dropout = 0;
};

AdapterUse adapter_use(const std::optional<LoraConfig>& lora, bool enabled) {
  if (!lora || !enabled) return {};
  return {lora->scale(), at::GradMode::is_enabled() ? lora->dropout : 0.0};
}

// A linear module with its LoRA adapter when the adapters take part (model/lora_linear.h).
at::Tensor proj(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const Transformer::Layer::Adapter& ad,
               const AdapterUse& use) {
  if (use.scale == 0 || !ad.a.defined()) return linear(x, w, b);
  return lora_linear(x, w, b, ad.a, ad.b, use.scale, use.dropout);
}

// q, k, v of a layer for x [..., hidden] -> [..., H, D] each, q/k normed (qwen3) and rotated.
std::tuple<at::Tensor, at::Tensor, at::Tensor> qkv(const Transformer::Layer& L, const ModelConfig& c,
                                                    const at::Tensor& h, const at::Tensor& cos, const at::Tensor& sin,
                                                    const AdapterUse& use) {
  auto shape = h.sizes().vec();
  shape.pop_back();
  auto heads = [&](at::Tensor t, int64_t n) {
    auto s = shape;
    s.push_back(n);
    s.push_back(c.head_dim);
    return t.view(s);
  };
  at::Tensor q = heads(proj(h, L.q_w, L.q_b, L.q_l, use), c.num_attention_heads);
  at::Tensor k = heads(proj(h, L.k_w, L.k_b, L.k_l, use), c.num_key_value_heads);
  at::Tensor v = heads(proj(h, L.v_w, L.v_b, L.v_l, use), c.num_key_value_heads);
  if (c.qk_norm) {
    q = rms_norm(q, L.q_norm, c.rms_norm_eps);
    k = rms_norm(k, L.k_norm, c.rms_norm_eps);
  }
  // cos/sin [..., D] broadcast over the head axis.
  q = rope(q, cos.unsqueeze(-2), sin.unsqueeze(-2));
  k = rope(k, cos.unsqueeze(-2), sin.unsqueeze(-2));
  return {q, k, v};
}

// The MLP's SwiGLU activation, the input of its down projection.
at::Tensor mlp_activation(const Transformer::Layer& L, const at::Tensor& h, const AdapterUse& use) {
  const at::Tensor none;
  return swiglu(proj(h, L.gate_w, none, L.gate_l, use), proj(h, L.up_w, none, L.up_l, use));
}

at::Tensor down_projection(const Transformer::Layer& L, const at::Tensor& act, const AdapterUse& use) {
  return proj(act, L.down_w, at::Tensor(), L.down_l, use);
}

// One decoder layer over a padded batch up to the down projection: x [B, T, hidden], mask
// [B, 1, T, T] additive -> the residual stream after attention and the MLP's activation.
std::pair<at::Tensor, at::Tensor> layer_until_down(const Transformer::Layer& L, const ModelConfig& c,
                                                   const at::Tensor& x, const at::Tensor& mask, const at::Tensor& cos,
                                                   const at::Tensor& sin, const AdapterUse& use) {
  const int64_t B = x.size(0), T = x.size(1);
  at::Tensor h = rms_norm(x, L.in_norm, c.rms_norm_eps);
  auto [q, k, v] = qkv(L, c, h, cos, sin, use);
  q = q.transpose(1, 2);  // [B, Hq, T, D]
  k = k.transpose(1, 2);  // [B, Hkv, T, D]
  v = v.transpose(1, 2);
  const int64_t groups = c.num_attention_heads / c.num_key_value_heads;
  if (groups > 1) {
    k = k.unsqueeze(2).expand({B, c.num_key_value_heads, groups, T, c.head_dim}).reshape({B, -1, T, c.head_dim});
    v = v.unsqueeze(2).expand({B, c.num_key_value_heads, groups, T, c.head_dim}).reshape({B, -1, T, c.head_dim});
  }
  // HF eager attention: scores in the model dtype, softmax in fp32 (the fp32 mask promotes the
  // scores as it is added). A scale that is a power of two (head_dim 16, 64, 256) scales q
  // instead, exactly as it would the scores, on a quarter of the elements at T = 4·head_dim.
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const bool exact_scale = std::ldexp(1.0, std::ilogb(scale)) == scale;
  at::Tensor scores = exact_scale ? at::matmul(q * scale, k.transpose(-1, -2)) : at::matmul(q, k.transpose(-1, -2)) * scale;
  at::Tensor probs = at::softmax(mask + scores, -1).to(x.scalar_type());
  at::Tensor attn = at::matmul(probs, v).transpose(1, 2).reshape({B, T, -1});
  at::Tensor y = x + proj(attn, L.o_w, at::Tensor(), L.o_l, use);
  return {y, mlp_activation(L, rms_norm(y, L.post_norm, c.rms_norm_eps), use)};
}

at::Tensor layer_forward(const Transformer::Layer& L, const ModelConfig& c, const at::Tensor& x,
                         const at::Tensor& mask, const at::Tensor& cos, const at::Tensor& sin, const AdapterUse& use) {
  auto [y, act] = layer_until_down(L, c, x, mask, cos, sin, use);
  return y + down_projection(L, act, use);
}

// Under gradient checkpointing a frozen down projection without an adapter runs outside the
// layer's checkpoint: its backward needs only the weight and the gradient, not the activation,
// so nothing more is kept, and the recompute in backward skips a third of the MLP's products
// (LoRA on the attention modules).
bool down_outside_checkpoint(const Transformer::Layer& L, const AdapterUse& use) {
  return !L.down_w.requires_grad() && (use.scale == 0 || !L.down_l.a.defined());
}

// Additive fp32 mask [B, 1, T, T]: causal and key padding. Masked entries get the most negative
// finite float (as HF does), so fully masked rows (left-padding queries) stay finite.
at::Tensor attention_mask_4d(const at::Tensor& attention_mask) {
  const int64_t T = attention_mask.size(1);
  at::Tensor causal = at::ones({T, T}, attention_mask.options().dtype(at::kBool)).tril();
  at::Tensor keys = attention_mask.to(at::kBool).unsqueeze(1).unsqueeze(2);  // [B,1,1,T]
  at::Tensor allowed = causal.unsqueeze(0).unsqueeze(0) & keys;
  at::Tensor mask = at::zeros(allowed.sizes(), attention_mask.options().dtype(at::kFloat));
  return mask.masked_fill(allowed.logical_not(), std::numeric_limits<float>::lowest());
}

void check_batch(const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& pos) {
  if (ids.dim() != 2) throw Error(fmt::format("input_ids must be [B, T], got {} dims", ids.dim()));
  if (!mask.sizes().equals(ids.sizes()))
    throw Error(fmt::format("attention_mask shape {} differs from input_ids {}", c10::str(mask.sizes()),
                            c10::str(ids.sizes())));
  if (!pos.sizes().equals(ids.sizes()))
    throw Error(fmt::format("position_ids shape {} differs from input_ids {}", c10::str(pos.sizes()),
                            c10::str(ids.sizes())));
}

}  // namespace

std::shared_ptr<Transformer> Transformer::random(const ModelConfig& c, at::ScalarType dtype, uint64_t seed,
                                                 double init_std, bool value_head) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return with_weights(c, dtype, value_head, [&](const std::string&, std::vector<int64_t> shape) {
    return at::normal(0.0, init_std, shape, gen, at::TensorOptions().dtype(at::kFloat)).to(dtype);
  });
}

std::shared_ptr<Transformer> Transformer::with_weights(const ModelConfig& c, at::ScalarType dtype, bool value_head,
                                                       const WeightMaker& make) {
  std::shared_ptr<Transformer> m(new Transformer());
  m->config_ = c;
  m->dtype_ = dtype;
  m->value_head_ = value_head;
  auto ones = [&](int64_t n) { return at::ones({n}, at::TensorOptions().dtype(dtype)); };
  auto zeros = [&](int64_t n) { return at::zeros({n}, at::TensorOptions().dtype(dtype)); };
  const int64_t H = c.hidden_size, D = c.head_dim, q_out = c.num_attention_heads * D,
                kv_out = c.num_key_value_heads * D;
  auto& p = m->params_;
  auto add_weight = [&](std::string name, std::vector<int64_t> shape) {
    at::Tensor t = make(name, std::move(shape));
    p.emplace_back(std::move(name), std::move(t));
  };
  add_weight("model.embed_tokens.weight", {c.vocab_size, H});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string pre = fmt::format("model.layers.{}.", i);
    add_weight(pre + "self_attn.q_proj.weight", {q_out, H});
    if (c.attention_bias) p.emplace_back(pre + "self_attn.q_proj.bias", zeros(q_out));
    add_weight(pre + "self_attn.k_proj.weight", {kv_out, H});
    if (c.attention_bias) p.emplace_back(pre + "self_attn.k_proj.bias", zeros(kv_out));
    add_weight(pre + "self_attn.v_proj.weight", {kv_out, H});
    if (c.attention_bias) p.emplace_back(pre + "self_attn.v_proj.bias", zeros(kv_out));
    add_weight(pre + "self_attn.o_proj.weight", {H, q_out});
    if (c.qk_norm) {
      p.emplace_back(pre + "self_attn.q_norm.weight", ones(D));
      p.emplace_back(pre + "self_attn.k_norm.weight", ones(D));
    }
    add_weight(pre + "mlp.gate_proj.weight", {c.intermediate_size, H});
    add_weight(pre + "mlp.up_proj.weight", {c.intermediate_size, H});
    add_weight(pre + "mlp.down_proj.weight", {H, c.intermediate_size});
    p.emplace_back(pre + "input_layernorm.weight", ones(H));
    p.emplace_back(pre + "post_attention_layernorm.weight", ones(H));
  }
  p.emplace_back("model.norm.weight", ones(H));
  if (value_head) {
    add_weight("score.weight", {c.num_labels, H});
    p.emplace_back("score.bias", zeros(c.num_labels));
  } else if (!c.tie_word_embeddings) {
    add_weight("lm_head.weight", {c.vocab_size, H});
  }
  m->bind_layers();
  return m;
}

std::shared_ptr<Transformer> Transformer::load(const std::string& dir, at::ScalarType dtype, bool value_head,
                                               uint64_t seed) {
  if (is_peft_adapter_dir(dir)) {
    PeftAdapter adapter = load_peft_adapter(dir);
    if (adapter.base_model.empty())
      throw Error(fmt::format("adapter directory {}: adapter_config.json names no base_model_name_or_path", dir));
    if (is_peft_adapter_dir(adapter.base_model))
      throw Error(fmt::format("adapter directory {}: its base model {} is an adapter too", dir, adapter.base_model));
    auto m = load(adapter.base_model, dtype, value_head, seed);
    m->add_lora(adapter.config, seed);
    m->load_adapters(adapter.adapters);
    return m;
  }
  const std::string cfg_path = (std::filesystem::path(dir) / "config.json").string();
  ModelConfig c = ModelConfig::load(cfg_path);
  // The parameter list (names, shapes) with uninitialised weights, then filled from the files;
  // only a critic's score head, which a policy checkpoint lacks, is drawn from `seed`.
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto m = with_weights(c, dtype, value_head, [&](const std::string& name, std::vector<int64_t> shape) {
    if (name.rfind("score.", 0) == 0)
      return at::normal(0.0, 0.02, shape, gen, at::TensorOptions().dtype(at::kFloat)).to(dtype);
    return at::empty(shape, at::TensorOptions().dtype(dtype));
  });
  auto files = SafetensorsDir::open(dir);
  for (auto& [name, t] : m->params_) {
    if (!files.has(name)) {
      if (value_head && name.rfind("score.", 0) == 0) continue;  // critic from a policy checkpoint
      throw Error(fmt::format("model directory {}: tensor '{}' is missing (config.json says {} with {} layers)", dir,
                              name, c.model_type, c.num_hidden_layers));
    }
    at::Tensor src = files.get(name);
    if (!src.sizes().equals(t.sizes()))
      throw Error(fmt::format("model directory {}: tensor '{}' has shape {}, config.json implies {}", dir, name,
                              c10::str(src.sizes()), c10::str(t.sizes())));
    t = src.to(dtype).contiguous().clone();  // own the memory: weights are trained and updated in place
  }
  m->base_model_dir_ = std::filesystem::absolute(dir).lexically_normal().string();
  m->bind_layers();
  return m;
}

void Transformer::bind_layers() {
  auto find = [&](const std::string& n) -> at::Tensor {
    for (const auto& [k, v] : params_)
      if (k == n) return v;
    return at::Tensor();
  };
  layers_ = std::make_shared<std::vector<Layer>>();
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    const std::string pre = fmt::format("model.layers.{}.", i);
    Layer L;
    L.q_w = find(pre + "self_attn.q_proj.weight");
    L.q_b = find(pre + "self_attn.q_proj.bias");
    L.k_w = find(pre + "self_attn.k_proj.weight");
    L.k_b = find(pre + "self_attn.k_proj.bias");
    L.v_w = find(pre + "self_attn.v_proj.weight");
    L.v_b = find(pre + "self_attn.v_proj.bias");
    L.o_w = find(pre + "self_attn.o_proj.weight");
    L.q_norm = find(pre + "self_attn.q_norm.weight");
    L.k_norm = find(pre + "self_attn.k_norm.weight");
    L.in_norm = find(pre + "input_layernorm.weight");
    L.post_norm = find(pre + "post_attention_layernorm.weight");
    L.gate_w = find(pre + "mlp.gate_proj.weight");
    L.up_w = find(pre + "mlp.up_proj.weight");
    L.down_w = find(pre + "mlp.down_proj.weight");
    auto adapter = [&](const std::string& module) -> Layer::Adapter {
      const std::string name = pre + module;
      Layer::Adapter a;
      for (const auto& [k, v] : adapters_) {
        if (k == lora_a_name(name)) a.a = v;
        if (k == lora_b_name(name)) a.b = v;
      }
      return a;
    };
    L.q_l = adapter("self_attn.q_proj");
    L.k_l = adapter("self_attn.k_proj");
    L.v_l = adapter("self_attn.v_proj");
    L.o_l = adapter("self_attn.o_proj");
    L.gate_l = adapter("mlp.gate_proj");
    L.up_l = adapter("mlp.up_proj");
    L.down_l = adapter("mlp.down_proj");
    layers_->push_back(L);
  }
  embed_ = find("model.embed_tokens.weight");
  norm_ = find("model.norm.weight");
  head_ = config_.tie_word_embeddings ? embed_ : find("lm_head.weight");
  score_w_ = find("score.weight");
  score_b_ = find("score.bias");
  auto saved = [&](const std::string& name) {
    for (const auto& [k, v] : saved_)
      if (k == name) return v;
    return at::Tensor();
  };
  saved_embed_ = saved("model.embed_tokens.weight");
  saved_norm_ = saved("model.norm.weight");
  saved_head_ = saved("lm_head.weight");
  saved_score_w_ = saved("score.weight");
  saved_score_b_ = saved("score.bias");
  trainable_ = adapters_;
  trainable_.insert(trainable_.end(), saved_.begin(), saved_.end());
}

at::Tensor Transformer::parameter(const std::string& name) const {
  for (const auto& [k, v] : params_)
    if (k == name) return v;
  throw Error(fmt::format("model has no parameter '{}'", name));
}

void Transformer::set_requires_grad(bool requires_grad) {
  for (auto& [k, v] : params_) v.requires_grad_(requires_grad && !lora_);
  for (auto& [k, v] : adapters_) v.requires_grad_(requires_grad);
  for (auto& [k, v] : saved_) v.requires_grad_(requires_grad);
}

void Transformer::add_lora(const LoraConfig& config, uint64_t seed) {
  if (lora_) throw Error("the model has LoRA adapters already");
  const std::vector<std::string> modules = lora_modules(config, config_.num_hidden_layers);
  if (modules.empty())
    throw Error(fmt::format("LoRA targets ({}) match no linear module of this {} model", config.target.describe(),
                            config_.model_type));
  at::Generator gen = at::detail::createCPUGenerator(seed);
  auto opts = at::TensorOptions().dtype(config.fp32_adapters ? at::kFloat : dtype_);
  for (const std::string& module : modules) {
    const at::Tensor w = parameter(module + ".weight");
    const int64_t out = w.size(0), in = w.size(1);
    // PEFT: kaiming_uniform_(A, a=sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in)); B starts at zero.
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    adapters_.emplace_back(lora_a_name(module),
                           at::empty({config.rank, in}, at::kFloat).uniform_(-bound, bound, gen).to(opts.dtype()));
    adapters_.emplace_back(lora_b_name(module), at::zeros({out, config.rank}, opts));
  }
  at::NoGradGuard no_grad;
  for (const std::string& module : config.modules_to_save)
    for (const std::string& name : roll::config::saved_module_parameters(module)) {
      // A tied LM head's base is the embedding; its copy is the head's own from here on.
      const at::Tensor base = name == "lm_head.weight" && config_.tie_word_embeddings && !value_head_
                                  ? parameter("model.embed_tokens.weight")
                                  : parameter(name);
      saved_.emplace_back(name, base.detach().to(opts.dtype()).clone());
    }
  lora_ = config;
  bind_layers();
}

void Transformer::untie_word_embeddings() {
  if (!config_.tie_word_embeddings || value_head_) return;
  at::NoGradGuard no_grad;
  params_.emplace_back("lm_head.weight", parameter("model.embed_tokens.weight").clone());
  config_.tie_word_embeddings = false;
  bind_layers();
}

void Transformer::load_adapters(const NamedTensors& tensors) {
  if (!lora_) throw Error("the model has no LoRA adapters to load into");
  at::NoGradGuard no_grad;
  auto find_in = [](NamedTensors& v, const std::string& name) -> at::Tensor* {
    for (auto& [k, t] : v)
      if (k == name) return &t;
    return nullptr;
  };
  for (const auto& [name, src] : tensors) {
    at::Tensor* dst = find_in(adapters_, name);
    if (!dst) dst = find_in(saved_, name);
    if (!dst)
      throw Error(fmt::format("LoRA tensor '{}' has no adapter or saved module in this model (its targets or "
                              "modules_to_save differ)",
                              name));
    if (!dst->sizes().equals(src.sizes()))
      throw Error(fmt::format("LoRA tensor '{}': shape {} does not match the model's {} (another rank?)", name,
                              c10::str(src.sizes()), c10::str(dst->sizes())));
    dst->copy_(src);
  }
}

void Transformer::merge_adapters() {
  if (!lora_) return;
  load_weights(merge_lora(params_, *lora_, adapters_));
  // A saved embedding or LM head replaces one of two tied tensors only (PEFT's copy is untied).
  if (saved_embed_.defined() || saved_head_.defined()) untie_word_embeddings();
  load_weights(saved_);
  adapters_.clear();
  saved_.clear();
  lora_.reset();
  adapters_enabled_ = true;
  bind_layers();
}

void Transformer::load_weights(const NamedTensors& tensors) {
  at::NoGradGuard no_grad;
  for (const auto& [name, src] : tensors) {
    at::Tensor dst = parameter(name);
    if (!dst.sizes().equals(src.sizes()))
      throw Error(fmt::format("weight '{}': shape {} does not match the model's {}", name, c10::str(src.sizes()),
                              c10::str(dst.sizes())));
    dst.copy_(src);
  }
}

int64_t Transformer::num_parameters() const {
  int64_t n = 0;
  for (const auto& [k, v] : params_) n += v.numel();
  return n;
}

at::Tensor Transformer::run_layers(at::Tensor x, const at::Tensor& mask, const at::Tensor& cos, const at::Tensor& sin,
                                   bool gradient_checkpointing) const {
  const AdapterUse use = adapter_use(lora_, adapters_enabled_);
  for (size_t i = 0; i < layers_->size(); ++i) {
    const Layer& L = (*layers_)[i];
    if (hooks_) hooks_->before_layer(static_cast<int64_t>(i));
    if (gradient_checkpointing && at::GradMode::is_enabled()) {
      const ModelConfig& c = config_;
      auto params = L.all();
      if (down_outside_checkpoint(L, use)) {
        auto out = checkpoint_outputs(
            [&L, &c, mask, cos, sin, use](const at::Tensor& in) {
              auto [y, act] = layer_until_down(L, c, in, mask, cos, sin, use);
              return std::vector<at::Tensor>{y, act};
            },
            x, params);
        x = out[0] + down_projection(L, out[1], use);
      } else {
        x = checkpoint(
            [&L, &c, mask, cos, sin, use](const at::Tensor& in) { return layer_forward(L, c, in, mask, cos, sin, use); },
            x, params);
      }
    } else {
      x = layer_forward(L, config_, x, mask, cos, sin, use);
    }
    if (hooks_) hooks_->after_layer(static_cast<int64_t>(i), x);
  }
  return x;
}

at::Tensor Transformer::hidden_states(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                      const at::Tensor& position_ids, bool gradient_checkpointing) const {
  check_batch(input_ids, attention_mask, position_ids);
  at::Tensor x = embed_rows(input_ids);
  auto [cos, sin] = rope_tables(position_ids, config_.head_dim, config_.rope_theta, dtype_);
  at::Tensor mask = attention_mask_4d(attention_mask);
  x = run_layers(x, mask, cos, sin, gradient_checkpointing);
  return final_norm(x);
}

// A saved copy may be fp32 in a bf16 model: rows are looked up in it and then cast, the norm's
// weight is cast, the heads take their input in their own dtype.
at::Tensor Transformer::embed_rows(const at::Tensor& ids) const {
  return at::embedding(live(embed_, saved_embed_), ids.to(at::kLong)).to(dtype_);
}

at::Tensor Transformer::final_norm(const at::Tensor& x) const {
  return rms_norm(x, live(norm_, saved_norm_).to(x.scalar_type()), config_.rms_norm_eps);
}

at::Tensor Transformer::lm_head(const at::Tensor& hidden) const {
  const at::Tensor& head = live(head_, saved_head_);
  if (!head.defined()) throw Error("this model has a value head and no LM head");
  return at::matmul(hidden.to(head.scalar_type()), head.t()).to(at::kFloat);
}

at::Tensor Transformer::logits(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                               const at::Tensor& position_ids) const {
  return lm_head(hidden_states(input_ids, attention_mask, position_ids));
}

TokenLogProbs Transformer::token_log_probs(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                           const at::Tensor& position_ids, bool with_entropy,
                                           bool gradient_checkpointing, int64_t chunk_tokens,
                                           const at::Tensor& needed) const {
  const at::Tensor& head = live(head_, saved_head_);
  if (!head.defined()) throw Error("this model has a value head and no LM head");
  at::Tensor h = hidden_states(input_ids, attention_mask, position_ids, gradient_checkpointing).to(head.scalar_type());
  const int64_t B = h.size(0), T = h.size(1);
  if (T < 2) throw Error("token_log_probs needs sequences of at least 2 tokens");
  at::Tensor rows = h.slice(1, 0, T - 1).reshape({B * (T - 1), h.size(2)});
  at::Tensor targets = input_ids.slice(1, 1, T).reshape({B * (T - 1)}).to(at::kLong);
  at::Tensor logp, ent;
  if (needed.defined() && (needed != 0).any().item<bool>()) {
    if (needed.size(0) != B || needed.size(1) != T - 1)
      throw Error("token_log_probs: `needed` must be [B, T-1] like the log-probs");
    // Only the used rows go through the LM head; the rest are scattered back as zeros.
    at::Tensor idx = at::nonzero(needed.reshape({B * (T - 1)}) != 0).reshape({-1});
    auto [lp_sel, ent_sel] = chunked_token_log_probs(rows.index_select(0, idx), head, targets.index_select(0, idx),
                                                     with_entropy, chunk_tokens);
    logp = at::zeros({B * (T - 1)}, lp_sel.options()).index_copy(0, idx, lp_sel);
    if (with_entropy) ent = at::zeros({B * (T - 1)}, ent_sel.options()).index_copy(0, idx, ent_sel);
  } else {
    std::tie(logp, ent) = chunked_token_log_probs(rows, head, targets, with_entropy, chunk_tokens);
  }
  TokenLogProbs out;
  out.log_probs = logp.view({B, T - 1});
  if (with_entropy) out.entropy = ent.view({B, T - 1});
  return out;
}

at::Tensor Transformer::values(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                               const at::Tensor& position_ids, bool gradient_checkpointing) const {
  const at::Tensor& w = live(score_w_, saved_score_w_);
  if (!w.defined()) throw Error("this model has no value head (load it with value_head = true)");
  at::Tensor h = hidden_states(input_ids, attention_mask, position_ids, gradient_checkpointing);
  return at::linear(h.to(w.scalar_type()), w, live(score_b_, saved_score_b_)).select(-1, 0).to(at::kFloat);
}

at::Tensor Transformer::forward_tokens(const at::Tensor& tokens, const at::Tensor& positions,
                                       AttentionBackend& backend) const {
  at::Tensor x = embed_rows(tokens);  // [N, H]
  auto [cos, sin] = rope_tables(positions, config_.head_dim, config_.rope_theta, dtype_);
  const AdapterUse use = adapter_use(lora_, adapters_enabled_);
  for (size_t i = 0; i < layers_->size(); ++i) {
    const Layer& L = (*layers_)[i];
    at::Tensor h = rms_norm(x, L.in_norm, config_.rms_norm_eps);
    auto [q, k, v] = qkv(L, config_, h, cos, sin, use);
    at::Tensor attn = backend.attend(static_cast<int64_t>(i), q, k, v);
    at::Tensor y = x + proj(attn, L.o_w, at::Tensor(), L.o_l, use);
    x = y + down_projection(L, mlp_activation(L, rms_norm(y, L.post_norm, config_.rms_norm_eps), use), use);
  }
  return final_norm(x);
}

void Transformer::save(const std::string& dir, uint64_t max_shard_bytes) const {
  std::filesystem::create_directories(dir);
  ModelConfig c = config_;
  c.torch_dtype = dtype_ == at::kBFloat16 ? "bfloat16" : dtype_ == at::kHalf ? "float16" : "float32";
  std::ofstream(std::filesystem::path(dir) / "config.json") << c.to_json();
  write_safetensors_dir(dir, params_, max_shard_bytes);
}

}  // namespace roll::model
