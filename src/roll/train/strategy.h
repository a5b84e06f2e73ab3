#pragma once
// The training strategy behind `deepspeed_train`, `fsdp2_train` and (plain data parallel)
// `megatron_train`: data parallel over a comm::ProcessGroup with ZeRO stages 0-3, fp32 master
// weights for bf16 models, gradient accumulation with ROLL's loss scaling, global grad-norm
// clipping and the LR schedule. One instance per rank; every rank makes the same calls.
//
//   TrainStrategy s(model, options, group);          // group: nullptr for one process
//   for each micro-batch: s.backward(loss_of(s.log_probs(ids, mask, pos)));
//   StepStats st = s.step();                         // reduce, clip, update, schedule
//
// Gradients are reduced in fp32, one unit (decoder layer, or embeddings+head) at a time, launched
// from autograd hooks as soon as a unit's gradients are complete so communication overlaps the
// rest of backward. See docs/training.md.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "roll/model/transformer.h"
#include "roll/train/flat_layout.h"
#include "roll/train/options.h"

namespace roll::comm {
class ProcessGroup;
}

namespace roll::train {

struct StepStats {
  int64_t step = 0;         // scheduler steps taken so far, this one included (global_step)
  double grad_norm = 0.0;   // total L2 norm before clipping, over all ranks
  double lr = 0.0;          // the learning rate this step used
  bool skipped = false;     // non-finite norm: parameters untouched, scheduler advanced
  int64_t micro_batches = 0;
};

// A rank's resumable state (checkpoint.h writes and reads it).
struct TrainState {
  int64_t global_step = 0;      // scheduler steps
  int64_t optimizer_steps = 0;  // updates applied (Adam's bias-correction count)
  int zero_stage = 0;
  int world_size = 1;
  int rank = 0;
  std::string layout_signature;
  model::NamedTensors tensors;  // "<unit>.exp_avg", "<unit>.exp_avg_sq", "<unit>.master", "rng.cpu"
};

class TrainStrategy {
 public:
  // Takes over the model's parameters: they become views into the strategy's flat buffers (stage
  // 3: empty until gathered). `group` null or of size 1: single process. Gradients are reduced on
  // `group`; parameters are gathered on a sibling group (same ranks, own store namespace) so the
  // two streams of collectives never interleave. Collective: every rank constructs together.
  TrainStrategy(std::shared_ptr<model::Transformer> model, TrainOptions options,
                std::shared_ptr<comm::ProcessGroup> group = nullptr);
  ~TrainStrategy();
  TrainStrategy(const TrainStrategy&) = delete;
  TrainStrategy& operator=(const TrainStrategy&) = delete;

  // Forward passes with the strategy's gradient checkpointing; ZeRO-3 gathers weights per layer.
  model::TokenLogProbs log_probs(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                 const at::Tensor& position_ids, bool with_entropy = false,
                                 int64_t chunk_tokens = 1024, const at::Tensor& needed = {});
  at::Tensor values(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& position_ids);
  // Full-vocabulary logits [N, vocab] (fp32) of the N positions where `positions` [B, T] (bool) is
  // set, in row-major order; the LM head runs on those rows only (logit distillation).
  at::Tensor logits_at(const at::Tensor& input_ids, const at::Tensor& attention_mask, const at::Tensor& position_ids,
                       const at::Tensor& positions);

  // Backward of one micro-batch loss, scaled the ROLL way by the caller (rl::loss_scale_factor):
  // the strategy divides by gradient_accumulation_steps and averages over data-parallel ranks.
  void backward(const at::Tensor& loss);
  // Finishes the reductions, clips to max_grad_norm, updates (unless the norm is non-finite),
  // advances the LR schedule and zeroes the gradients.
  StepStats step();
  // backward(micro_loss(i)) for i < num_micro_batches, then step().
  StepStats train_step(int64_t num_micro_batches, const std::function<at::Tensor(int64_t)>& micro_loss);

  // The full parameters in the model dtype, model order and HF names (ZeRO-3: gathered copies; a
  // collective call on every rank).
  model::NamedTensors full_parameters();
  // The reduced (DP-averaged) fp32 gradients accumulated so far in this step, full size, HF names
  // (finishes pending reductions; stages 2/3 gather the chunks). Collective; for tests and
  // diagnostics: step() still applies them.
  model::NamedTensors reduced_gradients();
  // Copies full weights (HF names) into the strategy's parameters and master weights.
  void load_full_parameters(const model::NamedTensors& weights);
  TrainState export_state() const;
  void import_state(const TrainState& state);  // errors name what does not match

  double current_lr() const;
  int64_t global_step() const;
  int rank() const;
  int world_size() const;
  const TrainOptions& options() const;
  const FlatLayout& layout() const;
  model::Transformer& model();
  std::string describe() const;  // one line: stage, ranks, backend, dtypes, checkpointing, notes

  struct Impl;
  Impl& internals() { return *impl_; }  // for train/*.cpp (checkpoints); opaque elsewhere

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::train
