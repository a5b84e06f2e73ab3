#pragma once
// ROLL's DistillConfig (roll/pipeline/distill/distill_config.py): the student and teacher workers,
// the dataset's columns and the distillation loss's knobs (docs/distill.md).
#include <cstdint>
#include <optional>
#include <string>

#include "roll/config/worker_config.h"

namespace roll::config {

struct DistillConfig {
  WorkerConfig student;
  WorkerConfig teacher;
  std::optional<std::string> student_pretrain;
  std::optional<std::string> teacher_pretrain;
  std::string question_key = "question";
  std::string answer_key = "answer";
  int64_t logits_topk = 64;
  double distill_loss_weight = 0.5;
  double kd_temperature = 1.0;
  double teacher_temperature = 1.0;
  std::string kd_objective = "forward_kl";
  double adaptive_kl_alpha = 0.5;
  double skew_lambda = 0.1;
  bool distill_on_prompt = false;
  std::string logits_transfer_backend = "ipc+nccl";

  template <typename V>
  void visit(V& v) {
    v.nested("student", student);
    v.nested("teacher", teacher);
    v("student_pretrain", student_pretrain);
    v("teacher_pretrain", teacher_pretrain);
    v("question_key", question_key);
    v("answer_key", answer_key);
    v("logits_topk", logits_topk);
    v("distill_loss_weight", distill_loss_weight);
    v("kd_temperature", kd_temperature);
    v("teacher_temperature", teacher_temperature);
    v("kd_objective", kd_objective);
    v("adaptive_kl_alpha", adaptive_kl_alpha);
    v("skew_lambda", skew_lambda);
    v("distill_on_prompt", distill_on_prompt);
    v("logits_transfer_backend", logits_transfer_backend);
  }
};

}  // namespace roll::config
