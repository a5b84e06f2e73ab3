// Whole-model views and the per-rank resumable state (used by checkpoint.cpp).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <map>

#include "roll/core/error.h"
#include "roll/train/strategy_impl.h"

namespace roll::train {

model::NamedTensors TrainStrategy::full_parameters() {
  Impl& s = *impl_;
  at::NoGradGuard no_grad;
  model::NamedTensors out(s.model->trainable_parameters().size());
  for (size_t u = 0; u < s.units.size(); ++u) {
    const bool was_gathered = s.units[u].gathered;
    s.gather(u);
    const FlatUnit& fu = s.layout.units[u];
    for (size_t k = 0; k < fu.params.size(); ++k) {
      at::Tensor p = s.units[u].params[k];
      out[fu.params[k].index] = {fu.params[k].name, s.stage == 3 ? p.detach().clone() : p.detach()};
    }
    if (!was_gathered) s.release(u);
  }
  return out;
}

model::NamedTensors TrainStrategy::reduced_gradients() {
  Impl& s = *impl_;
  at::NoGradGuard no_grad;
  if (s.stage <= 1 && !s.reduced_this_step) {
    for (UnitState& us : s.units) us.launched = false;
    for (size_t u : s.layout.reduce_order) s.launch(u);
    s.reduced_this_step = true;
  }
  s.wait_all();
  model::NamedTensors out(s.model->trainable_parameters().size());
  for (size_t u = 0; u < s.units.size(); ++u) {
    const FlatUnit& fu = s.layout.units[u];
    at::Tensor full = s.units[u].grad;
    if (s.stage >= 2) {
      full = at::empty({fu.padded}, at::TensorOptions().dtype(at::kFloat));
      if (s.params_pg)
        s.params_pg->all_gather(s.units[u].grad, full);
      else
        full.copy_(s.units[u].grad);
    }
    for (const FlatParam& fp : fu.params)
      out[fp.index] = {fp.name, full.narrow(0, fp.offset, fp.numel).view(fp.shape).clone()};
  }
  return out;
}

void TrainStrategy::load_full_parameters(const model::NamedTensors& weights) {
  Impl& s = *impl_;
  at::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> by_name(weights.begin(), weights.end());
  for (size_t u = 0; u < s.units.size(); ++u) {
    const FlatUnit& fu = s.layout.units[u];
    at::Tensor flat = at::zeros({fu.padded}, at::TensorOptions().dtype(s.dtype));
    for (const FlatParam& fp : fu.params) {
      auto it = by_name.find(fp.name);
      if (it == by_name.end()) throw Error(fmt::format("weights: tensor '{}' is missing", fp.name));
      if (it->second.numel() != fp.numel || it->second.sizes().vec() != fp.shape)
        throw Error(fmt::format("weights: tensor '{}' has shape {}, the model needs [{}]", fp.name,
                                c10::str(it->second.sizes()), fmt::join(fp.shape, ", ")));
      flat.narrow(0, fp.offset, fp.numel).copy_(it->second.reshape({-1}));
    }
    UnitState& us = s.units[u];
    if (s.stage == 3) {
      us.shard.copy_(flat.narrow(0, s.rank * fu.chunk, fu.chunk));
      if (us.gathered) us.full.copy_(flat);
    } else {
      us.full.copy_(flat);
    }
    if (!us.master_aliases) us.master.copy_(s.own_params(u));
  }
}

TrainState TrainStrategy::export_state() const {
  const Impl& s = *impl_;
  TrainState st;
  st.global_step = s.global_step;
  st.optimizer_steps = s.optimizer_steps;
  st.zero_stage = s.stage;
  st.world_size = s.world;
  st.rank = s.rank;
  st.layout_signature = s.layout.signature();
  for (size_t u = 0; u < s.units.size(); ++u) {
    const std::string& name = s.layout.units[u].name;
    const UnitState& us = s.units[u];
    if (us.slot.exp_avg.defined()) {
      st.tensors.emplace_back(name + ".exp_avg", us.slot.exp_avg);
      st.tensors.emplace_back(name + ".exp_avg_sq", us.slot.exp_avg_sq);
    }
    if (!us.master_aliases) st.tensors.emplace_back(name + ".master", us.master);
  }
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    st.tensors.emplace_back("rng.cpu", gen.get_state());
  }
  return st;
}

void TrainStrategy::import_state(const TrainState& st) {
  Impl& s = *impl_;
  if (st.zero_stage != s.stage || st.world_size != s.world || st.rank != s.rank)
    throw Error(fmt::format("checkpoint was written by rank {} of {} at ZeRO stage {}; this is rank {} of {} at "
                            "stage {} (resharding is not supported: resume with the same layout, or load the HF "
                            "weights as a fresh model)",
                            st.rank, st.world_size, st.zero_stage, s.rank, s.world, s.stage));
  if (st.layout_signature != s.layout.signature())
    throw Error("checkpoint parameters (names, shapes or their grouping) differ from this model's");
  at::NoGradGuard no_grad;
  std::map<std::string, at::Tensor> by_name(st.tensors.begin(), st.tensors.end());
  auto take = [&](const std::string& key, const at::Tensor& like) {
    auto it = by_name.find(key);
    if (it == by_name.end()) throw Error(fmt::format("checkpoint state lacks '{}'", key));
    if (it->second.numel() != like.numel() || it->second.scalar_type() != like.scalar_type())
      throw Error(fmt::format("checkpoint state '{}' has {} {} elements, expected {} {}", key, it->second.numel(),
                              c10::toString(it->second.scalar_type()), like.numel(), c10::toString(like.scalar_type())));
    return it->second.reshape(like.sizes());
  };
  for (size_t u = 0; u < s.units.size(); ++u) {
    const std::string& name = s.layout.units[u].name;
    UnitState& us = s.units[u];
    if (st.optimizer_steps > 0 && s.hyper.kind == "adamw") {
      us.slot.exp_avg = take(name + ".exp_avg", us.master).clone();
      us.slot.exp_avg_sq = take(name + ".exp_avg_sq", us.master).clone();
    } else {
      us.slot = OptimizerSlot();
    }
    if (!us.master_aliases) us.master.copy_(take(name + ".master", us.master));
  }
  auto rng = by_name.find("rng.cpu");
  if (rng == by_name.end()) throw Error("checkpoint state lacks 'rng.cpu'");
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng->second);
  }
  s.global_step = st.global_step;
  s.optimizer_steps = st.optimizer_steps;
}

}  // namespace roll::train
