// Backward: gradients into fp32 unit buffers, unit reductions launched in a fixed order.
#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/core/error.h"
#include "roll/train/grad_accumulate.h"
#include "roll/train/strategy_impl.h"

namespace roll::train {
namespace {

// Stages 2/3 keep at most this many unit reductions in flight: each holds a full-size fp32
// gradient buffer, and the point of sharding gradients is not to hold them all.
constexpr size_t kMaxInFlight = 2;

}  // namespace

at::Tensor TrainStrategy::Impl::own_grad(size_t u) const {
  const FlatUnit& fu = layout.units[u];
  if (stage == 1) return units[u].grad.narrow(0, rank * fu.chunk, fu.chunk);
  return units[u].grad;  // stage 0: everything; stages 2/3: already the chunk
}

at::Tensor TrainStrategy::Impl::own_params(size_t u) const {
  const FlatUnit& fu = layout.units[u];
  if (stage == 0) return units[u].full;
  if (stage == 3) return units[u].shard;
  return units[u].full.narrow(0, rank * fu.chunk, fu.chunk);
}

void TrainStrategy::Impl::on_grad(size_t k) {
  const size_t u = static_cast<size_t>(layout.unit_of_param[k]);
  const FlatParam& fp = layout.units[u].params[static_cast<size_t>(layout.slot_of_param[k])];
  UnitState& us = units[u];
  at::Tensor& p = us.params[static_cast<size_t>(layout.slot_of_param[k])];
  at::Tensor g = p.grad();
  if (g.defined()) {
    at::NoGradGuard no_grad;
    if (stage >= 2 && !us.grad_tmp.defined()) us.grad_tmp = pool.take(layout.units[u].padded, at::kFloat, true);
    at::Tensor& buf = stage >= 2 ? us.grad_tmp : us.grad;
    accumulate_grad(buf.narrow(0, fp.offset, fp.numel).view(fp.shape), g);
    p.mutable_grad().reset();
  }
  if (--us.pending == 0 && reduce_this_backward) launch_ready();
}

void TrainStrategy::Impl::launch_ready() {
  while (next_launch < layout.reduce_order.size() && units[layout.reduce_order[next_launch]].pending <= 0)
    launch(layout.reduce_order[next_launch++]);
}

void TrainStrategy::Impl::launch(size_t u) {
  UnitState& us = units[u];
  if (us.launched) return;
  us.launched = true;
  InFlight f;
  f.unit = u;
  if (stage <= 1) {
    // The accumulated gradient of the whole step, once (DDP's no_sync for the earlier micro-batches).
    if (grads_pg) f.work = grads_pg->all_reduce_async(us.grad);
  } else {
    if (!us.grad_tmp.defined())  // no gradient reached this unit: it still takes part
      us.grad_tmp = pool.take(layout.units[u].padded, at::kFloat, true);
    f.chunk = at::empty({layout.units[u].chunk}, at::TensorOptions().dtype(at::kFloat));
    if (grads_pg)
      f.work = grads_pg->reduce_scatter_async(us.grad_tmp, f.chunk);
    else
      f.chunk.copy_(us.grad_tmp);
    // The unit's weights are no longer needed in this backward.
    release(u);
  }
  inflight.push_back(std::move(f));
  if (stage >= 2)
    while (inflight.size() > kMaxInFlight) retire_one();
}

void TrainStrategy::Impl::retire_one() {
  InFlight f = std::move(inflight.front());
  inflight.pop_front();
  f.work.wait();
  f.work = comm::Work();  // drops the collective's reference to the buffer, so the pool may keep it
  if (stage >= 2) {
    units[f.unit].grad.add_(f.chunk);
    pool.give(units[f.unit].grad_tmp);
  }
}

void TrainStrategy::Impl::wait_all() {
  while (!inflight.empty()) retire_one();
}

void TrainStrategy::Impl::finish_backward() {
  if (reduce_this_backward) {
    // Units some parameters of which got no gradient (unused in this graph) are launched now, in
    // the same fixed order on every rank.
    for (UnitState& us : units) us.pending = 0;
    launch_ready();
    if (stage >= 2) wait_all();
    if (stage <= 1) reduced_this_step = true;
  }
  if (stage == 3) release_all();
}

void TrainStrategy::backward(const at::Tensor& loss) {
  Impl& s = *impl_;
  if (!loss.defined() || loss.numel() != 1)
    throw Error("TrainStrategy::backward needs a scalar loss");
  if (!loss.requires_grad()) throw Error("TrainStrategy::backward: the loss does not depend on the model");
  if (s.stage <= 1 && s.reduced_this_step)
    throw Error(fmt::format("TrainStrategy::backward: {} micro-batches were announced for this step and all "
                            "have run; call step() first",
                            s.micro_expected));
  s.reduce_this_backward = s.stage >= 2 || s.micro_done + 1 >= s.micro_expected;
  for (size_t u = 0; u < s.units.size(); ++u) {
    s.units[u].pending = static_cast<int>(s.layout.units[u].params.size());
    s.units[u].launched = false;
  }
  s.next_launch = 0;
  // ROLL's backends divide each micro-batch loss by gradient_accumulation_steps and average the
  // gradients over data-parallel ranks (the caller's loss scale undoes both, docs/rl.md). Dividing
  // the loss here makes the all-reduce sum the average.
  const double scale = 1.0 / static_cast<double>(s.opt.gradient_accumulation_steps * s.world);
  at::Tensor scaled = scale == 1.0 ? loss : loss * scale;
  try {
    scaled.backward();
  } catch (...) {
    s.release_all();
    throw;
  }
  s.finish_backward();
  ++s.micro_done;
}

}  // namespace roll::train
