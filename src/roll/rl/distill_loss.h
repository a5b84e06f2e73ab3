#pragma once
// The loss maths of ROLL's logit distillation (roll/pipeline/distill/various_divergence.py and
// strategy.op_compute_topk_probs_and_indices), as plain functions over tensors; the groundwork of the
// distillation pipeline, which rollcpp does not have yet.
//
// Teacher (teacher_topk), per token: z = logits / kd_temperature / teacher_temperature; with k > 0 keep the
// k largest z (top-k over the vocabulary), with k = 0 keep all V; then
//   log p     = log_softmax over the kept entries
//   inf_mask  = the kept z is ±inf
// Student (distill_divergence), per token: s = the student logits at the teacher's kept indices /
// kd_temperature (the teacher temperature is the teacher's alone), log q = log_softmax(s) over the kept
// entries, p = exp(log p). An entry whose s is ±inf or whose teacher inf_mask is set is left out of every
// sum below (it still takes part in both softmaxes, so dropping it can make a "KL" negative, as in ROLL).
// Sums run over the kept entries; there is no T² rescale:
//   forward_kl          Σ p (log p − log q)
//   reverse_kl          Σ q (log q − log p)
//   skewed_forward_kl   m = λp + (1−λ)q:  Σ p (log p − log m)                            (λ = skew_lambda)
//   skewed_reverse_kl   m = (1−λ)p + λq:  Σ q (log q − log m)
//   js_divergence       m = (p + q)/2:  ½ Σ [p (log(p+ε) − log(m+ε)) + q (log(q+ε) − log(m+ε))], ε = 1e-9
//                       (ROLL's ε inside the logs, kept: its first-order effects cancel, (p+q)/m = 2,
//                       but it moves the value where p or q is near or below ε and keeps the logs finite)
//   adaptive_kl         sort p ascending per token and q along with it; gap = |p − q|;
//                       tail = cumsum(sorted p) ≤ adaptive_kl_alpha; g_head = Σ gap over the non-tail
//                       entries, g_tail = Σ gap over the tail ones (all kept entries, none left out; both
//                       detached); (g_head·forward_kl + g_tail·reverse_kl) / (g_head + g_tail).
//                       Where g_head + g_tail = 0 (q equal to p entry by entry) ROLL's 0/0 gives NaN; here
//                       the weights are ½ and ½ there, so the token's value is 0 (both KLs are 0).
// Masked entries are zeroed before any log or product that could meet an infinity, so the gradient stays
// finite where ROLL's masked_fill after the fact would pass 0·inf = NaN back (a -inf teacher or student
// logit in reverse_kl, for one); the values are ROLL's.
//
// Precision: both sides compute in their logits' dtype promoted to at least float32 (ROLL: float32 with
// bf16 logits); the logits are cast before the temperature division (ROLL divides in the logits' dtype).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string_view>

namespace roll::rl {

enum class DistillObjective {
  forward_kl,
  reverse_kl,
  adaptive_kl,
  skewed_forward_kl,
  skewed_reverse_kl,
  js_divergence,
};

// "forward_kl", "reverse_kl", "adaptive_kl", "skewed_forward_kl", "skewed_reverse_kl" or "js_divergence";
// anything else: roll::ConfigError on key "kd_objective" listing the six.
DistillObjective parse_distill_objective(std::string_view name);
std::string_view to_string(DistillObjective objective);

// The teacher's side of one micro-batch, as ROLL's teacher worker sends it to the student (detached).
struct TeacherTopK {
  at::Tensor log_probs;  // [..., K] floating (≥ float32): log_softmax over the kept entries
  at::Tensor indices;    // [..., K] int64 vocabulary ids; undefined when k = 0 (K = V, entry j is id j)
  at::Tensor inf_mask;   // [..., K] bool: the kept scaled logit is ±inf
};

// teacher_logits [..., V] (typically [B, T, V]); k = ROLL's logits_topk, 0 for the whole vocabulary.
// ConfigError on key "logits_topk" (k < 0 or k > V), "kd_temperature" or "teacher_temperature" (not > 0);
// roll::Error for a 0-dimensional or undefined tensor. The result carries no gradient whatever the input's.
TeacherTopK teacher_topk(const at::Tensor& teacher_logits, int64_t k, double kd_temperature,
                         double teacher_temperature);

// Per-token divergence [...] (typically [B, T]) of student_logits [..., V] from `teacher`; differentiable in
// student_logits only. The leading shapes must agree, and with k = 0 so must V (roll::Error otherwise);
// teacher.indices must be ids below the student's V. ConfigError on key "kd_objective" (unknown name),
// "kd_temperature" (not > 0), "skew_lambda" (outside [0, 1], skewed objectives only) or
// "adaptive_kl_alpha" (not finite, adaptive_kl only).
at::Tensor distill_divergence(const at::Tensor& student_logits, const TeacherTopK& teacher, double kd_temperature,
                              DistillObjective objective, double adaptive_kl_alpha, double skew_lambda);
at::Tensor distill_divergence(const at::Tensor& student_logits, const TeacherTopK& teacher, double kd_temperature,
                              std::string_view objective, double adaptive_kl_alpha, double skew_lambda);

// ROLL's token-mean reduction: Σ divergence over the tokens whose label_mask is nonzero, / num_tokens (the
// batch's valid-token count, possibly across ranks). Masked-out tokens are skipped, not multiplied by 0, so
// a NaN there (a padding row) cannot leak in. Shapes must agree and num_tokens be > 0 (roll::Error).
at::Tensor distill_token_mean(const at::Tensor& divergence, const at::Tensor& label_mask, double num_tokens);

}  // namespace roll::rl
