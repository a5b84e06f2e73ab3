#pragma once
// On-policy distillation's per-token penalty (docs/opd.md, ROLL's compute_advantage): the
// student's KL to each teacher on the rows routed to that teacher, weighted by the teacher's
// opd_kl_coef and summed. Pure OPD uses its negation as the advantages; use_opd subtracts it from
// the RL advantages (rl/advantage.h, opd_penalty).
#include <ATen/core/Tensor.h>

#include <vector>

#include "roll/rl/kl.h"

namespace roll::rl {

struct OpdTeacherScores {
  at::Tensor log_probs;  // [B, T]: the teacher's log-probs of the sampled tokens (anything on rows it does not score)
  at::Tensor rows;       // [B] bool: the rows routed to this teacher
  double kl_coef = 1.0;
};

// Σ_i coef_i · rows_i · KL_type(student, teacher_i) · mask, [B, T] fp32. `student_log_probs` are the
// old log-probs when they are recomputed, else the inference engine's. `kl_means` (optional)
// receives each teacher's unweighted KL averaged over the mask's tokens of its rows (0 without any).
at::Tensor opd_kl_penalty(const at::Tensor& student_log_probs, const std::vector<OpdTeacherScores>& teachers,
                          const at::Tensor& mask, KlType type, std::vector<double>* kl_means = nullptr);

}  // namespace roll::rl
