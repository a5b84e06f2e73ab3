#pragma once
// TrainStrategy internals shared by strategy*.cpp. Not for other folders.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>

#include <deque>
#include <memory>
#include <vector>

#include "roll/comm/process_group.h"
#include "roll/train/lr_schedule.h"
#include "roll/train/optimizer.h"
#include "roll/train/strategy.h"

namespace roll::train {

// One unit's buffers on this rank (flat_layout.h). "own region" = the chunk this rank updates:
// the whole buffer at stage 0, chunk `rank` from stage 1.
struct UnitState {
  at::Tensor full;    // model dtype, padded: the parameters' storage (stage 3: only while gathered)
  at::Tensor shard;   // stage 3: this rank's chunk of the parameters, model dtype
  at::Tensor master;  // fp32 weights the optimizer updates: own region
  bool master_aliases = false;  // fp32 model: `master` is the model's own storage, no copy
  OptimizerSlot slot;
  at::Tensor grad;      // fp32 accumulated gradient: full at stages 0/1, own chunk at 2/3
  at::Tensor grad_tmp;  // stages 2/3: this micro-batch's full gradient until reduce-scattered
  std::vector<at::Tensor> params;  // the model's tensors (shared handles), unit order
  int pending = 0;                 // parameters yet to deliver a gradient in this backward
  bool launched = false;           // reduction launched in this backward / step
  bool gathered = false;           // stage 3
};

// Reuses the full-size unit buffers of ZeRO-2/3 (gathered weights, per-micro-batch gradients)
// instead of allocating and freeing one per layer per use: glibc raises its mmap threshold after
// such frees and then keeps the blocks in the heap, so churn shows up as resident memory.
class BufferPool {
 public:
  at::Tensor take(int64_t numel, at::ScalarType dtype, bool zeroed);
  // Keeps `t` for reuse only when nothing else (a view autograd saved) references its storage.
  void give(at::Tensor& t);

 private:
  static constexpr size_t kMaxFree = 4;
  std::vector<at::Tensor> free_;
};

struct InFlight {
  size_t unit = 0;
  comm::Work work;
  at::Tensor chunk;  // stages 2/3: the reduce-scattered chunk to add into UnitState::grad
};

struct TrainStrategy::Impl : model::LayerHooks {
  Impl(std::shared_ptr<model::Transformer> m, TrainOptions o, std::shared_ptr<comm::ProcessGroup> g);
  ~Impl() override;

  std::shared_ptr<model::Transformer> model;
  TrainOptions opt;
  std::shared_ptr<comm::ProcessGroup> grads_pg, params_pg;  // null when world == 1
  int rank = 0, world = 1, stage = 0;
  at::ScalarType dtype = at::kFloat;
  FlatLayout layout;
  std::vector<UnitState> units;
  LrSchedule schedule;
  OptimizerHyper hyper;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;  // keeps the grad hooks alive
  at::Tensor placeholder;  // what a released ZeRO-3 parameter holds (0 elements)
  BufferPool pool;

  // Backward bookkeeping.
  bool reduce_this_backward = false;
  size_t next_launch = 0;  // index into layout.reduce_order
  std::deque<InFlight> inflight;
  int64_t micro_done = 0;
  int64_t micro_expected = 1;
  bool reduced_this_step = false;  // stages 0/1: the step's single reduction has been launched

  int64_t global_step = 0, optimizer_steps = 0;

  // model::LayerHooks (stage 3 only).
  void before_layer(int64_t layer) override;
  void after_layer(int64_t layer, const at::Tensor& output) override;

  at::Tensor own_grad(size_t u) const;  // the gradient region the optimizer and the norm use
  at::Tensor own_params(size_t u) const;  // the model-dtype region `master` mirrors
  void on_grad(size_t param_index);
  void launch_ready();
  void launch(size_t u);
  void retire_one();
  void finish_backward();
  void wait_all();
  void gather(size_t u);
  void release(size_t u);
  void release_all();
  // Stages 1/2: every rank's updated chunk of the weights gathered back into the full weights.
  void gather_params();
  void begin_forward();
  void end_forward();
};

}  // namespace roll::train
