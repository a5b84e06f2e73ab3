#pragma once
// A c10d process group behind a small, dtype-safe interface. The backend is chosen by name
// ("gloo" on CPU; "nccl" / "hccl" on their builds). Gloo's gaps are filled here, so callers never
// branch on the backend: bf16/int16 reductions are refused before Gloo sees them, bf16 data
// moves as raw bytes, all-gather does not use _allgather_base, and reduce_scatter is emulated.
#include <ATen/core/Tensor.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "roll/comm/gloo_device.h"
#include "roll/comm/store.h"

namespace roll::comm {

enum class ReduceOp { sum, max, min };

// A collective in flight. wait() blocks, rethrows a failure as roll::Error and then runs the
// completion step (for example copying this rank's slice out of an emulated reduce_scatter).
class Work {
 public:
  Work() = default;
  bool valid() const { return impl_ != nullptr; }
  void wait();

  struct Impl;
  explicit Work(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<Impl> impl_;
};

struct GroupOptions {
  std::string backend = "gloo";  // gloo | nccl | hccl
  std::string name = "default";  // store namespace: several groups may share one store
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  std::vector<GlooDeviceSpec> gloo_devices;  // empty: choose_gloo_devices(process_env(), false, "")
  int gloo_threads = 2;
};

class ProcessGroup {
 public:
  // Every rank calls this with the same name; it returns once all `world_size` ranks joined.
  static std::shared_ptr<ProcessGroup> create(const std::shared_ptr<Store>& store, int rank, int world_size,
                                              const GroupOptions& options = {});
  ~ProcessGroup();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& backend() const { return backend_; }

  // In place over all ranks. Refuses dtypes the backend cannot reduce (Gloo: bf16, int16, bool).
  void all_reduce(at::Tensor& t, ReduceOp op = ReduceOp::sum);
  Work all_reduce_async(const at::Tensor& t, ReduceOp op = ReduceOp::sum);
  // `t` from `root` to everyone, any dtype (bf16 as bytes on Gloo).
  void broadcast(at::Tensor& t, int root);
  // The same in flight; an invalid Work when there is nothing to send. `t` must stay untouched
  // until wait() returns.
  Work broadcast_async(at::Tensor& t, int root);
  // out (contiguous, world_size * in.numel() elements, same dtype) = the ranks' `in`, in rank order.
  void all_gather(const at::Tensor& in, at::Tensor& out);
  Work all_gather_async(const at::Tensor& in, at::Tensor& out);
  std::vector<at::Tensor> all_gather(const at::Tensor& in);  // one tensor per rank, shaped like `in`
  // out (contiguous, in.numel() / world_size elements) = this rank's chunk of the reduction of the
  // ranks' `in`. On Gloo (no reduce_scatter) `in` is all-reduced in place and the chunk copied out,
  // so `in` is clobbered on every backend.
  void reduce_scatter(at::Tensor& in, at::Tensor& out, ReduceOp op = ReduceOp::sum);
  Work reduce_scatter_async(at::Tensor& in, at::Tensor& out, ReduceOp op = ReduceOp::sum);
  void barrier();

  // Another group over the same ranks and store, under `name` (collective: every rank calls it).
  // Collectives on different groups never wait on each other's order.
  std::shared_ptr<ProcessGroup> sibling(const std::string& name) const;

  struct Impl;

 private:
  ProcessGroup() = default;
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
  std::string backend_;
};

}  // namespace roll::comm
