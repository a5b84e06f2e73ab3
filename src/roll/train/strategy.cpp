#include "roll/train/strategy.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "roll/core/error.h"
#include "roll/train/strategy_impl.h"

namespace roll::train {

TrainStrategy::Impl::Impl(std::shared_ptr<model::Transformer> m, TrainOptions o,
                          std::shared_ptr<comm::ProcessGroup> g)
    : model(std::move(m)),
      opt(std::move(o)),
      schedule(opt.lr_scheduler_type, opt.learning_rate, opt.total_steps, opt.warmup_steps, opt.warmup_ratio) {
  if (!model) throw Error("TrainStrategy: no model");
  if (opt.zero_stage < 0 || opt.zero_stage > 3)
    throw ConfigError("strategy_config.zero_optimization.stage",
                      fmt::format("ZeRO stage {} does not exist (0, 1, 2 or 3)", opt.zero_stage));
  if (opt.gradient_accumulation_steps < 1)
    throw ConfigError("gradient_accumulation_steps", "gradient_accumulation_steps must be >= 1");
  stage = opt.zero_stage;
  if (model->dtype() != at::kFloat && model->dtype() != at::kBFloat16)
    throw Error(fmt::format("training needs a float32 or bfloat16 model, got {}", c10::toString(model->dtype())));
  // Under LoRA the strategy holds the adapters only (fp32 unless autocast_adapter_dtype is off);
  // the frozen base stays in the model, unsharded.
  dtype = model->trainable_parameters().front().second.scalar_type();
  hyper = {opt.optimizer, opt.adam_beta1, opt.adam_beta2, opt.adam_epsilon, opt.weight_decay};
  if (hyper.kind != "adamw" && hyper.kind != "sgd")
    throw ConfigError("optimizer", fmt::format("optimizer '{}' is not supported (adamw, sgd)", hyper.kind));
  micro_expected = opt.gradient_accumulation_steps;
  if (g && g->size() > 1) {
    grads_pg = g;
    rank = g->rank();
    world = g->size();
    if (stage >= 1) params_pg = g->sibling("params");
  }
  placeholder = at::empty({0}, at::TensorOptions().dtype(dtype));

  model->set_requires_grad(true);
  const model::NamedTensors& named = model->trainable_parameters();
  std::vector<ParamInfo> infos;
  for (const auto& [name, t] : named) infos.push_back({name, t.sizes().vec()});
  layout = make_flat_layout(infos, model->config().num_hidden_layers, world);

  // A post hook on every parameter's gradient accumulator moves the fresh gradient into the
  // unit's fp32 buffer (so bf16 gradients accumulate in fp32 and .grad never stays allocated) and
  // launches the unit's reduction once the unit is complete (DDP's reducer does the same).
  // Created while the parameters still have their full shapes: an accumulator records the shape
  // of the gradient it accepts, and ZeRO-3 parameters are empty between uses.
  for (size_t k = 0; k < named.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(named[k].second);
    Impl* self = this;
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [self, k](const torch::autograd::variable_list& outputs, const torch::autograd::variable_list&) {
          self->on_grad(k);
          return outputs;
        }));
    accumulators.push_back(std::move(acc));
  }
  at::NoGradGuard no_grad;
  units.resize(layout.units.size());
  for (size_t u = 0; u < units.size(); ++u) {
    const FlatUnit& fu = layout.units[u];
    UnitState& us = units[u];
    at::Tensor full = at::zeros({fu.padded}, at::TensorOptions().dtype(dtype));
    for (const FlatParam& fp : fu.params) {
      at::Tensor p = named[fp.index].second;
      full.narrow(0, fp.offset, fp.numel).copy_(p.reshape({-1}));
      us.params.push_back(p);
    }
    const at::Tensor own = full.narrow(0, rank * fu.chunk, fu.chunk);
    if (stage == 3) {
      us.shard = own.clone();
      for (at::Tensor& p : us.params) p.set_data(placeholder);
    } else {
      us.full = full;
      for (size_t k = 0; k < fu.params.size(); ++k)
        us.params[k].set_data(full.narrow(0, fu.params[k].offset, fu.params[k].numel).view(fu.params[k].shape));
    }
    const at::Tensor region = stage == 0 ? full : stage == 3 ? us.shard : own;
    us.master_aliases = dtype == at::kFloat;
    us.master = us.master_aliases ? region : region.to(at::kFloat);
    us.grad = at::zeros({stage <= 1 ? fu.padded : fu.chunk}, at::TensorOptions().dtype(at::kFloat));
  }

  if (stage == 3) model->set_layer_hooks(this);
}

TrainStrategy::Impl::~Impl() {
  if (stage == 3 && model) model->set_layer_hooks(nullptr);
}

void TrainStrategy::Impl::begin_forward() {
  if (stage == 3) gather(0);  // embeddings, final norm and head: used at both ends of the model
}

void TrainStrategy::Impl::end_forward() {
  // Without autograd nothing will come back for the weights: drop them now.
  if (stage == 3 && !at::GradMode::is_enabled()) release_all();
}

void TrainStrategy::Impl::before_layer(int64_t layer) { gather(static_cast<size_t>(1 + layer)); }

void TrainStrategy::Impl::after_layer(int64_t layer, const at::Tensor& output) {
  const size_t u = static_cast<size_t>(1 + layer);
  if (!at::GradMode::is_enabled() || !output.requires_grad()) {
    release(u);
    return;
  }
  // Without checkpointing, autograd saved views of the gathered weights for backward: releasing
  // would not free them, so the layer stays gathered until its gradients are reduced.
  if (!opt.gradient_checkpointing) return;
  // With checkpointing nothing holds the weights; backward recomputes the layer, so gather it
  // again just before (a pre-hook on the layer output's gradient runs before the layer's backward).
  release(u);
  Impl* self = this;
  output.register_hook([self, u](const at::TensorBase&) { self->gather(u); });
}

at::Tensor BufferPool::take(int64_t numel, at::ScalarType dtype, bool zeroed) {
  for (size_t i = 0; i < free_.size(); ++i)
    if (free_[i].numel() == numel && free_[i].scalar_type() == dtype) {
      at::Tensor t = std::move(free_[i]);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
      return zeroed ? t.zero_() : t;
    }
  auto opts = at::TensorOptions().dtype(dtype);
  return zeroed ? at::zeros({numel}, opts) : at::empty({numel}, opts);
}

void BufferPool::give(at::Tensor& t) {
  if (t.defined() && t.storage().use_count() == 1 && free_.size() < kMaxFree) free_.push_back(t);
  t = at::Tensor();
}

void TrainStrategy::Impl::gather(size_t u) {
  UnitState& us = units[u];
  if (stage != 3 || us.gathered) return;
  const FlatUnit& fu = layout.units[u];
  at::NoGradGuard no_grad;
  us.full = pool.take(fu.padded, dtype, false);
  if (params_pg)
    params_pg->all_gather(us.shard, us.full);
  else
    us.full.copy_(us.shard);
  for (size_t k = 0; k < fu.params.size(); ++k)
    us.params[k].set_data(us.full.narrow(0, fu.params[k].offset, fu.params[k].numel).view(fu.params[k].shape));
  us.gathered = true;
}

void TrainStrategy::Impl::release(size_t u) {
  UnitState& us = units[u];
  if (stage != 3 || !us.gathered) return;
  for (at::Tensor& p : us.params) p.set_data(placeholder);
  pool.give(us.full);
  us.gathered = false;
}

void TrainStrategy::Impl::release_all() {
  for (size_t u = 0; u < units.size(); ++u) release(u);
}

TrainStrategy::TrainStrategy(std::shared_ptr<model::Transformer> model, TrainOptions options,
                             std::shared_ptr<comm::ProcessGroup> group)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options), std::move(group))) {}

TrainStrategy::~TrainStrategy() = default;

model::TokenLogProbs TrainStrategy::log_probs(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                              const at::Tensor& position_ids, bool with_entropy,
                                              int64_t chunk_tokens, const at::Tensor& needed) {
  impl_->begin_forward();
  auto out = impl_->model->token_log_probs(input_ids, attention_mask, position_ids, with_entropy,
                                           impl_->opt.gradient_checkpointing, chunk_tokens, needed);
  impl_->end_forward();
  return out;
}

at::Tensor TrainStrategy::values(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                 const at::Tensor& position_ids) {
  impl_->begin_forward();
  at::Tensor v = impl_->model->values(input_ids, attention_mask, position_ids, impl_->opt.gradient_checkpointing);
  impl_->end_forward();
  return v;
}

at::Tensor TrainStrategy::logits_at(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                   const at::Tensor& position_ids, const at::Tensor& positions) {
  impl_->begin_forward();
  const at::Tensor hidden =
      impl_->model->hidden_states(input_ids, attention_mask, position_ids, impl_->opt.gradient_checkpointing);
  at::Tensor out = impl_->model->lm_head(hidden.index({positions.to(at::kBool)}));
  impl_->end_forward();
  return out;
}

StepStats TrainStrategy::train_step(int64_t num_micro_batches, const std::function<at::Tensor(int64_t)>& micro_loss) {
  if (num_micro_batches < 1) throw Error("train_step needs at least one micro-batch");
  impl_->micro_expected = num_micro_batches;
  for (int64_t i = 0; i < num_micro_batches; ++i) backward(micro_loss(i));
  return step();
}

double TrainStrategy::current_lr() const { return impl_->schedule.lr(impl_->global_step); }
int64_t TrainStrategy::global_step() const { return impl_->global_step; }
int TrainStrategy::rank() const { return impl_->rank; }
int TrainStrategy::world_size() const { return impl_->world; }
const TrainOptions& TrainStrategy::options() const { return impl_->opt; }
const FlatLayout& TrainStrategy::layout() const { return impl_->layout; }
model::Transformer& TrainStrategy::model() { return *impl_->model; }

std::string TrainStrategy::describe() const {
  const Impl& s = *impl_;
  static const char* what[] = {"plain data parallel", "ZeRO-1 (optimizer state sharded)",
                               "ZeRO-2 (optimizer state and gradients sharded)",
                               "ZeRO-3 (optimizer state, gradients and parameters sharded)"};
  std::string d = fmt::format(
      "{} over {} rank(s){}; {} parameters{}; fp32 gradient reduction in {} units; {}; optimizer {} lr {} "
      "({} schedule, {} warmup of {} steps)",
      what[s.stage], s.world, s.grads_pg ? " (" + s.grads_pg->backend() + ")" : "",
      s.dtype == at::kBFloat16 ? "bf16" : "fp32", s.dtype == at::kBFloat16 ? " with fp32 master weights" : "",
      s.units.size(), s.opt.gradient_checkpointing ? "per-layer gradient checkpointing" : "no gradient checkpointing",
      s.hyper.kind, s.opt.learning_rate, s.schedule.type(), s.schedule.warmup_steps(), s.schedule.total_steps());
  if (const model::LoraConfig* lora = s.model->lora())
    d += fmt::format("; LoRA rank {} alpha {} on {} modules (the base frozen in {})", lora->rank, lora->alpha,
                     s.model->adapters().size() / 2, s.model->dtype() == at::kBFloat16 ? "bf16" : "fp32");
  for (const std::string& n : s.opt.notes) d += "; " + n;
  return d;
}

}  // namespace roll::train
