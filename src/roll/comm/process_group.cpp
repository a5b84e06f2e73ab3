#include "roll/comm/process_group.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include "roll/comm/c10d_compat.h"
#include "roll/comm/collective_dtype.h"
#include "roll/comm/store_impl.h"
#include "roll/core/error.h"

namespace roll::comm {

struct Work::Impl {
  compat::WorkPtr work;
  std::function<void()> then;  // runs once, after the collective completed
  std::string what;
  bool finished = false;
};

struct ProcessGroup::Impl {
  compat::BackendPtr backend;
  std::shared_ptr<Store> store;
  GroupOptions options;
  int siblings = 0;  // every rank creates siblings in the same order, so the count names them alike
};

void Work::wait() {
  if (!impl_ || impl_->finished) return;
  impl_->finished = true;
  try {
    if (impl_->work) impl_->work->wait();
  } catch (const std::exception& e) {
    throw Error(fmt::format("collective {} failed: {}", impl_->what, e.what()));
  }
  if (impl_->then) impl_->then();
}

namespace {

::c10d::ReduceOp to_c10d(ReduceOp op) {
  switch (op) {
    case ReduceOp::max:
      return compat::reduce_op_max();
    case ReduceOp::min:
      return compat::reduce_op_min();
    default:
      return compat::reduce_op_sum();
  }
}

Work make_work(compat::WorkPtr w, std::string what, std::function<void()> then = {}) {
  auto impl = std::make_shared<Work::Impl>();
  impl->work = std::move(w);
  impl->what = std::move(what);
  impl->then = std::move(then);
  return Work(impl);
}

at::Tensor flat(const at::Tensor& t) { return t.reshape({-1}); }

}  // namespace

ProcessGroup::~ProcessGroup() = default;

std::shared_ptr<ProcessGroup> ProcessGroup::create(const std::shared_ptr<Store>& store, int rank, int world_size,
                                                   const GroupOptions& o) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw Error(fmt::format("process group '{}': rank {} is not in a world of {}", o.name, rank, world_size));
  std::shared_ptr<ProcessGroup> pg(new ProcessGroup());
  pg->impl_ = std::make_unique<Impl>();
  pg->rank_ = rank;
  pg->size_ = world_size;
  pg->backend_ = o.backend;
  pg->impl_->store = store;
  pg->impl_->options = o;
  compat::StorePtr prefixed = compat::make_prefix_store("pg/" + o.name, store->impl()->store);
  try {
    if (o.backend == "gloo") {
      if constexpr (!compat::kHaveGloo) throw Error("this libtorch build has no Gloo (USE_C10D_GLOO)");
#if defined(USE_C10D_GLOO)
      std::vector<GlooDeviceSpec> specs =
          o.gloo_devices.empty() ? choose_gloo_devices(process_env(), false, "") : o.gloo_devices;
      std::vector<compat::GlooDevice> devices;
      for (const GlooDeviceSpec& s : specs) {
        ResolvedGlooDevice r = resolve_gloo_device(s);
        devices.push_back({r.by_interface, r.value});
      }
      pg->impl_->backend = compat::make_gloo(prefixed, rank, world_size, devices, o.timeout, o.gloo_threads);
#endif
    } else if (o.backend == "nccl") {
#if defined(USE_C10D_NCCL)
      pg->impl_->backend = compat::make_nccl(prefixed, rank, world_size, o.timeout);
#else
      throw Error("backend 'nccl' needs a CUDA build of libtorch; this build is CPU-only (use 'gloo')");
#endif
    } else if (o.backend == "hccl") {
      throw Error("backend 'hccl' needs Ascend's torch_npu, which rollcpp does not ship (see README); use 'gloo' "
                  "or ROLL_PLATFORM=npu-emulated on CPU");
    } else {
      throw Error(fmt::format("unknown collective backend '{}' (gloo, nccl or hccl)", o.backend));
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fmt::format("process group '{}' ({}, rank {} of {}) failed to start: {}", o.name, o.backend, rank,
                            world_size, e.what()));
  }
  return pg;
}

void ProcessGroup::all_reduce(at::Tensor& t, ReduceOp op) { all_reduce_async(t, op).wait(); }

Work ProcessGroup::all_reduce_async(const at::Tensor& t, ReduceOp op) {
  check_reducible(backend_, t, "all_reduce");
  if (t.numel() == 0 || size_ == 1) return Work();
  std::vector<at::Tensor> v{t};
  ::c10d::AllreduceOptions opts;
  opts.reduceOp = to_c10d(op);
  return make_work(impl_->backend->allreduce(v, opts), "all_reduce");
}

void ProcessGroup::broadcast(at::Tensor& t, int root) {
  Work w = broadcast_async(t, root);
  if (w.valid()) w.wait();
}

Work ProcessGroup::broadcast_async(at::Tensor& t, int root) {
  if (!t.is_contiguous()) throw Error("broadcast: the tensor must be contiguous");
  if (t.numel() == 0 || size_ == 1) return Work();
  std::vector<at::Tensor> v{backend_moves(backend_, t.scalar_type()) ? t : byte_view(t)};
  ::c10d::BroadcastOptions opts;
  opts.rootRank = root;
  return make_work(impl_->backend->broadcast(v, opts), "broadcast");
}

void ProcessGroup::all_gather(const at::Tensor& in, at::Tensor& out) { all_gather_async(in, out).wait(); }

Work ProcessGroup::all_gather_async(const at::Tensor& in, at::Tensor& out) {
  if (out.scalar_type() != in.scalar_type() || !out.is_contiguous() || out.numel() != in.numel() * size_)
    throw Error(fmt::format("all_gather: output must be a contiguous {} tensor of {} x {} elements (got {} of {})",
                            c10::toString(in.scalar_type()), size_, in.numel(), c10::toString(out.scalar_type()),
                            out.numel()));
  if (size_ == 1) {
    flat(out).copy_(flat(in));
    return Work();
  }
  if (in.numel() == 0) return Work();
  const bool native = backend_moves(backend_, in.scalar_type());
  at::Tensor src = native ? flat(in.contiguous()) : byte_view(in.contiguous());
  at::Tensor dst = native ? flat(out) : byte_view(out);
  // One output view per rank into `out`: the plain allgather every backend has (Gloo lacks
  // _allgather_base and the coalesced variants).
  const int64_t n = src.numel();
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < size_; ++r) outputs[0].push_back(dst.narrow(0, r * n, n));
  std::vector<at::Tensor> inputs{src};
  return make_work(impl_->backend->allgather(outputs, inputs), "all_gather");
}

std::vector<at::Tensor> ProcessGroup::all_gather(const at::Tensor& in) {
  at::Tensor out = at::empty({size_ * in.numel()}, in.options());
  all_gather(in, out);
  std::vector<at::Tensor> parts;
  for (int r = 0; r < size_; ++r) parts.push_back(out.narrow(0, r * in.numel(), in.numel()).view(in.sizes()));
  return parts;
}

void ProcessGroup::reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op) {
  reduce_scatter_async(in, out, op).wait();
}

Work ProcessGroup::reduce_scatter_async(at::Tensor& in, at::Tensor& out, ReduceOp op) {
  check_reducible(backend_, in, "reduce_scatter");
  if (out.scalar_type() != in.scalar_type() || !out.is_contiguous() || in.numel() != out.numel() * size_)
    throw Error(fmt::format("reduce_scatter: output must be a contiguous {} tensor of {} / {} elements (got {})",
                            c10::toString(in.scalar_type()), in.numel(), size_, out.numel()));
  const int64_t n = out.numel();
  at::Tensor chunk = flat(in).narrow(0, rank_ * n, n);
  if (size_ == 1 || n == 0) {
    flat(out).copy_(chunk);
    return Work();
  }
  if (backend_ == "gloo") {
    // Gloo has no reduce_scatter: all-reduce the whole buffer, keep this rank's chunk. Twice the
    // traffic of a ring reduce-scatter, no extra memory beyond `in`.
    std::vector<at::Tensor> v{in};
    ::c10d::AllreduceOptions opts;
    opts.reduceOp = to_c10d(op);
    at::Tensor o = out;
    return make_work(impl_->backend->allreduce(v, opts), "reduce_scatter (all_reduce)",
                     [o, chunk]() mutable { flat(o).copy_(chunk); });
  }
  std::vector<at::Tensor> outputs{flat(out)};
  std::vector<std::vector<at::Tensor>> inputs(1);
  for (int r = 0; r < size_; ++r) inputs[0].push_back(flat(in).narrow(0, r * n, n));
  ::c10d::ReduceScatterOptions opts;
  opts.reduceOp = to_c10d(op);
  return make_work(impl_->backend->reduce_scatter(outputs, inputs, opts), "reduce_scatter");
}

std::shared_ptr<ProcessGroup> ProcessGroup::sibling(const std::string& name) const {
  GroupOptions o = impl_->options;
  // A fresh store namespace per sibling: a name reused by a later group would find the earlier
  // group's rendezvous keys.
  o.name = impl_->options.name + "/" + name + "." + std::to_string(impl_->siblings++);
  return create(impl_->store, rank_, size_, o);
}

void ProcessGroup::barrier() {
  if (size_ == 1) return;
  make_work(impl_->backend->barrier(), "barrier").wait();
}

}  // namespace roll::comm
