// The optimizer step: finish the reductions, global grad norm, clip, update, re-share weights.
#include <ATen/ATen.h>

#include <cmath>

#include "roll/train/grad_norm.h"
#include "roll/train/strategy_impl.h"

namespace roll::train {

void TrainStrategy::Impl::gather_params() {
  at::NoGradGuard no_grad;
  std::vector<comm::Work> gathers;
  std::vector<at::Tensor> keep;
  for (size_t u = 0; u < units.size(); ++u) {
    UnitState& us = units[u];
    at::Tensor own = own_params(u);
    if ((stage == 1 || stage == 2) && params_pg) {
      // Every rank updated its own chunk; gather the chunks back into the full weights. The input
      // is copied because it lives inside the output buffer.
      keep.push_back(own.clone());
      gathers.push_back(params_pg->all_gather_async(keep.back(), us.full));
    }
  }
  for (comm::Work& w : gathers) w.wait();
}

StepStats TrainStrategy::step() {
  Impl& s = *impl_;
  at::NoGradGuard no_grad;
  StepStats st;
  st.micro_batches = s.micro_done;
  // Stages 0/1 reduce once per step, in the last announced micro-batch; if fewer ran, now.
  if (s.stage <= 1 && !s.reduced_this_step) {
    for (UnitState& us : s.units) us.launched = false;
    for (size_t u : s.layout.reduce_order) s.launch(u);
  }
  s.wait_all();

  // Total L2 norm (torch.nn.utils.clip_grad_norm_). At stages 0/1 every rank holds the whole
  // reduced gradient; from stage 2 each holds a chunk and the squared norms are summed over ranks.
  std::vector<at::Tensor> grads;
  for (size_t u = 0; u < s.units.size(); ++u) grads.push_back(s.stage <= 1 ? s.units[u].grad : s.own_grad(u));
  double sq = squared_norm_sum(grads);
  if (s.stage >= 2 && s.grads_pg) {
    at::Tensor t = at::full({1}, sq, at::TensorOptions().dtype(at::kDouble));
    s.grads_pg->all_reduce(t);
    sq = t.item<double>();
  }
  st.grad_norm = std::sqrt(sq);
  st.lr = s.schedule.lr(s.global_step);
  st.skipped = !is_finite_norm(st.grad_norm);
  // The clip, zeroing the gradients and writing the model's weights from the master ride along the
  // update's pass (UpdateExtras); a gradient the update reads only part of (stage 1) is zeroed apart.
  std::vector<bool> zeroed(s.units.size(), false);
  if (!st.skipped) {
    UpdateExtras extras;
    if (s.opt.max_grad_norm > 0) extras.grad_scale = clip_coefficient(st.grad_norm, s.opt.max_grad_norm);
    ++s.optimizer_steps;
    for (size_t u = 0; u < s.units.size(); ++u) {
      UnitState& us = s.units[u];
      at::Tensor g = s.own_grad(u);
      extras.zero_grad = g.numel() == us.grad.numel();
      extras.weights_out = us.master_aliases ? at::Tensor() : s.own_params(u);
      optimizer_update(s.hyper, us.master, g, us.slot, st.lr, s.optimizer_steps, extras);
      zeroed[u] = extras.zero_grad;
    }
    s.gather_params();
  }
  for (size_t u = 0; u < s.units.size(); ++u)
    if (!zeroed[u]) s.units[u].grad.zero_();
  ++s.global_step;
  s.micro_done = 0;
  s.micro_expected = s.opt.gradient_accumulation_steps;
  s.reduced_this_step = false;
  st.step = s.global_step;
  return st;
}

}  // namespace roll::train
