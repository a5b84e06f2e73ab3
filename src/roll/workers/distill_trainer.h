#pragma once
// The training side of ROLL's distill StudentWorker (roll/pipeline/distill/distill_worker.py,
// docs/distill.md), as a plain class the student worker hosts. One instance per data-parallel rank;
// every rank makes the same calls (train_step, val_step and checkpoints are collective).
//
// The batch is an SFT batch (collate_sft: labels[:, t] is the trained token t+1, else -100) plus the
// teacher's answer at the same positions (teacher_log_probs, teacher_indices, teacher_inf_mask; the
// teacher role's teacher_forward). At every trained position the student's full-vocabulary logits
// give the cross-entropy of the label (ROLL's student loss) and, gathered at the teacher's top-k
// ids, the kd_objective divergence (rl/distill_loss.h); the micro-batch loss is
// ((1 − distill_loss_weight)·CE + distill_loss_weight·KD) summed over its positions and divided by
// the trained positions of the whole mini-batch on all ranks. Micro-batches of
// per_device_train_batch_size rows in batch order, gradient_accumulation_steps per optimizer step.
//
// Metrics (ROLL's names): train/loss@sum, train/train_student_loss@sum,
// train/train_distill_loss@sum (each the step's token mean once the ranks' values are summed),
// student/grad_norm, student/lr; val_step: student/val_loss@sum and student/val_distill_loss@sum.
#include <cstdint>
#include <memory>
#include <string>

#include "roll/config/schema.h"
#include "roll/core/batch.h"

namespace roll::comm {
class ProcessGroup;
}
namespace roll::train {
class TrainStrategy;
}

namespace roll::workers {

class DistillTrainer {
 public:
  DistillTrainer(const config::PipelineConfig& pipeline, const config::WorkerConfig& worker,
                 const std::string& model_dir, int rank, int world_size, std::shared_ptr<comm::ProcessGroup> group);
  ~DistillTrainer();
  DistillTrainer(const DistillTrainer&) = delete;
  DistillTrainer& operator=(const DistillTrainer&) = delete;

  Batch train_step(const Batch& batch);
  Batch val_step(const Batch& batch);

  std::string save_checkpoint(const std::string& root, int64_t step);
  void load_checkpoint(const std::string& dir);

  const std::string& name() const;  // student unless the worker config names it
  train::TrainStrategy& strategy();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace roll::workers
