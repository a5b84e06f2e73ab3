#include "roll/rl/opd_penalty.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "roll/core/error.h"
#include "roll/rl/check.h"

namespace roll::rl {

at::Tensor opd_kl_penalty(const at::Tensor& student_log_probs, const std::vector<OpdTeacherScores>& teachers,
                          const at::Tensor& mask, KlType type, std::vector<double>* kl_means) {
  detail::check_dims(student_log_probs, "student_log_probs", {-1, -1});
  detail::check_same_shape(mask, "mask", student_log_probs, "student_log_probs");
  const at::Tensor student = student_log_probs.detach().to(at::kFloat);
  const at::Tensor m = mask.to(at::kFloat);
  at::Tensor total = at::zeros_like(student);
  for (const auto& t : teachers) {
    detail::check_same_shape(t.log_probs, "teacher log_probs", student, "student_log_probs");
    if (t.rows.dim() != 1 || t.rows.size(0) != student.size(0))
      throw Error("opd_kl_penalty: a teacher's row mask must be [B] with B = " + std::to_string(student.size(0)));
    const at::Tensor rows = t.rows.to(at::kFloat).unsqueeze(1);
    // Rows the teacher does not score hold no log-probs of its own: zero them before the KL so that
    // a k3 estimate of them cannot reach the sum.
    const at::Tensor teacher = at::where(rows > 0, t.log_probs.detach().to(at::kFloat), student);
    const at::Tensor routed = m * rows;
    const at::Tensor kl = compute_approx_kl(student, teacher, routed, type);
    total = total + t.kl_coef * kl;
    if (kl_means) kl_means->push_back(kl.sum().item<double>() / std::max(1.0, routed.sum().item<double>()));
  }
  return total;
}

}  // namespace roll::rl
