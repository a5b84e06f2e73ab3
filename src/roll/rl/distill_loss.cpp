#include "roll/rl/distill_loss.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <cmath>
#include <tuple>
#include <utility>

#include "roll/core/error.h"

namespace roll::rl {
namespace {

constexpr std::pair<std::string_view, DistillObjective> kObjectives[] = {
    {"forward_kl", DistillObjective::forward_kl},
    {"reverse_kl", DistillObjective::reverse_kl},
    {"adaptive_kl", DistillObjective::adaptive_kl},
    {"skewed_forward_kl", DistillObjective::skewed_forward_kl},
    {"skewed_reverse_kl", DistillObjective::skewed_reverse_kl},
    {"js_divergence", DistillObjective::js_divergence},
};

// ROLL's js_divergence adds this inside each of its three logs.
constexpr double kJsEpsilon = 1e-9;

// Both sides compute in their logits' dtype promoted to at least float32 (bf16/fp16 -> float, double stays).
at::ScalarType compute_dtype(const at::Tensor& logits) {
  return at::promote_types(logits.scalar_type(), at::kFloat);
}

void check_temperature(const char* key, double value) {
  if (!(value > 0) || !std::isfinite(value))
    throw ConfigError(key, fmt::format("{}: must be a finite number > 0, got {}", key, value));
}

void check_logits(const at::Tensor& logits, const char* fn, const char* name) {
  if (!logits.defined() || logits.dim() < 1 || !logits.is_floating_point())
    throw Error(fmt::format("{}: {} must be a floating tensor [..., vocab], got {}", fn, name,
                            logits.defined() ? fmt::format("{} {}", c10::toString(logits.scalar_type()),
                                                           c10::str(logits.sizes()))
                                             : std::string("an undefined tensor")));
}

}  // namespace

DistillObjective parse_distill_objective(std::string_view name) {
  for (const auto& [n, o] : kObjectives)
    if (n == name) return o;
  throw ConfigError("kd_objective",
                    fmt::format("kd_objective: '{}' is not known; use forward_kl, reverse_kl, adaptive_kl, "
                                "skewed_forward_kl, skewed_reverse_kl or js_divergence",
                                name));
}

std::string_view to_string(DistillObjective objective) {
  for (const auto& [n, o] : kObjectives)
    if (o == objective) return n;
  return "?";
}

TeacherTopK teacher_topk(const at::Tensor& teacher_logits, int64_t k, double kd_temperature,
                         double teacher_temperature) {
  check_logits(teacher_logits, "teacher_topk", "teacher_logits");
  check_temperature("kd_temperature", kd_temperature);
  check_temperature("teacher_temperature", teacher_temperature);
  const int64_t vocab = teacher_logits.size(-1);
  if (k < 0 || k > vocab)
    throw ConfigError("logits_topk", fmt::format("logits_topk: must be in [0, {}] (the teacher's vocabulary size; "
                                                 "0 keeps the whole vocabulary), got {}",
                                                 vocab, k));
  // Two divisions, in ROLL's order; detached: the teacher is not trained.
  const at::Tensor z =
      teacher_logits.detach().to(compute_dtype(teacher_logits)) / kd_temperature / teacher_temperature;
  TeacherTopK out;
  at::Tensor kept = z;
  if (k > 0) std::tie(kept, out.indices) = at::topk(z, k, /*dim=*/-1);
  out.log_probs = at::log_softmax(kept, -1);
  out.inf_mask = kept.isinf();
  return out;
}

at::Tensor distill_divergence(const at::Tensor& student_logits, const TeacherTopK& teacher, double kd_temperature,
                              DistillObjective objective, double adaptive_kl_alpha, double skew_lambda) {
  check_logits(student_logits, "distill_divergence", "student_logits");
  check_temperature("kd_temperature", kd_temperature);
  const bool skewed =
      objective == DistillObjective::skewed_forward_kl || objective == DistillObjective::skewed_reverse_kl;
  if (skewed && !(skew_lambda >= 0 && skew_lambda <= 1))
    throw ConfigError("skew_lambda", fmt::format("skew_lambda: must be in [0, 1], got {}", skew_lambda));
  if (objective == DistillObjective::adaptive_kl && !std::isfinite(adaptive_kl_alpha))
    throw ConfigError("adaptive_kl_alpha",
                      fmt::format("adaptive_kl_alpha: must be a finite number, got {}", adaptive_kl_alpha));

  const at::Tensor& lp = teacher.log_probs;
  const int64_t dim = student_logits.dim();
  const bool shapes_ok = lp.defined() && teacher.inf_mask.defined() && lp.dim() == dim &&
                         student_logits.sizes().slice(0, dim - 1).equals(lp.sizes().slice(0, dim - 1)) &&
                         teacher.inf_mask.sizes().equals(lp.sizes()) &&
                         (!teacher.indices.defined() || teacher.indices.sizes().equals(lp.sizes()));
  if (!shapes_ok)
    throw Error(fmt::format(
        "distill_divergence: student_logits [..., V] and the teacher's log_probs, inf_mask and indices [..., K] "
        "must share their leading shape, got student {} and teacher {} {} {}",
        c10::str(student_logits.sizes()), lp.defined() ? c10::str(lp.sizes()) : "(undefined)",
        teacher.inf_mask.defined() ? c10::str(teacher.inf_mask.sizes()) : "(undefined)",
        teacher.indices.defined() ? c10::str(teacher.indices.sizes()) : "(none: whole vocabulary)"));
  if (!teacher.indices.defined() && student_logits.size(-1) != lp.size(-1))
    throw Error(fmt::format("distill_divergence: the teacher kept its whole vocabulary ({} entries, logits_topk = 0) "
                            "but the student's has {}",
                            lp.size(-1), student_logits.size(-1)));

  // s: the student's logits at the teacher's kept ids, then scaled (ROLL gathers, then divides).
  at::Tensor s = student_logits;
  if (teacher.indices.defined())
    s = at::gather(student_logits, -1, teacher.indices.to(student_logits.device(), at::kLong));
  const at::ScalarType dtype = compute_dtype(student_logits);
  s = s.to(dtype) / kd_temperature;

  const at::Tensor log_p = lp.detach().to(s.device(), dtype);
  const at::Tensor left_out = s.isinf() | teacher.inf_mask.to(s.device(), at::kBool);
  const at::Tensor log_q = at::log_softmax(s, -1);
  const at::Tensor q = log_q.exp();
  const at::Tensor p = log_p.exp();
  const at::Tensor zero = at::zeros({}, log_q.options());
  const at::Tensor one = at::ones({}, log_q.options());
  // The logs with the left-out entries set to 0 (and the mixtures to 1 before their log): no ±inf meets a
  // product, so neither the value nor the backward pass forms 0·inf. The entries are dropped anyway.
  const at::Tensor lq = at::where(left_out, zero, log_q);
  const at::Tensor lpk = at::where(left_out, zero, log_p);
  auto sum_kept = [&](const at::Tensor& terms) { return at::where(left_out, zero, terms).sum(-1); };
  auto forward_kl = [&] { return sum_kept(p * (lpk - lq)); };
  auto reverse_kl = [&] { return sum_kept(q * (lq - lpk)); };

  switch (objective) {
    case DistillObjective::forward_kl:
      return forward_kl();
    case DistillObjective::reverse_kl:
      return reverse_kl();
    case DistillObjective::skewed_forward_kl: {
      const at::Tensor m = skew_lambda * p + (1.0 - skew_lambda) * q;
      return sum_kept(p * (lpk - at::where(left_out, one, m).log()));
    }
    case DistillObjective::skewed_reverse_kl: {
      const at::Tensor m = (1.0 - skew_lambda) * p + skew_lambda * q;
      return sum_kept(q * (lq - at::where(left_out, one, m).log()));
    }
    case DistillObjective::js_divergence: {
      // Every log here takes an argument ≥ 1e-9, so no masking is needed before them.
      const at::Tensor log_m = ((p + q) / 2 + kJsEpsilon).log();
      return sum_kept((p * ((p + kJsEpsilon).log() - log_m) + q * ((q + kJsEpsilon).log() - log_m)) / 2);
    }
    case DistillObjective::adaptive_kl: {
      // The weights see every kept entry (ROLL masks nothing here) and no gradient.
      const auto [p_sorted, order] = at::sort(p, /*dim=*/-1);  // ascending
      const at::Tensor gap = (p_sorted - q.detach().gather(-1, order)).abs();
      const at::Tensor tail = p_sorted.cumsum(-1) <= adaptive_kl_alpha;
      const at::Tensor g_head = at::where(tail, zero, gap).sum(-1);
      const at::Tensor g_tail = at::where(tail, gap, zero).sum(-1);
      const at::Tensor total = g_head + g_tail;
      // total = 0 only where q equals p entry by entry: both KLs are 0 there, and ½, ½ keeps it so (ROLL: NaN).
      const at::Tensor half = at::full({}, 0.5, total.options());
      const at::Tensor w_head = at::where(total > 0, g_head / total, half);
      const at::Tensor w_tail = at::where(total > 0, g_tail / total, half);
      return w_head * forward_kl() + w_tail * reverse_kl();
    }
  }
  throw Error("distill_divergence: unknown DistillObjective");
}

at::Tensor distill_divergence(const at::Tensor& student_logits, const TeacherTopK& teacher, double kd_temperature,
                              std::string_view objective, double adaptive_kl_alpha, double skew_lambda) {
  return distill_divergence(student_logits, teacher, kd_temperature, parse_distill_objective(objective),
                            adaptive_kl_alpha, skew_lambda);
}

at::Tensor distill_token_mean(const at::Tensor& divergence, const at::Tensor& label_mask, double num_tokens) {
  if (!divergence.defined() || !label_mask.defined() || !divergence.sizes().equals(label_mask.sizes()))
    throw Error(fmt::format("distill_token_mean: divergence and label_mask must have one shape, got {} and {}",
                            divergence.defined() ? c10::str(divergence.sizes()) : "(undefined)",
                            label_mask.defined() ? c10::str(label_mask.sizes()) : "(undefined)"));
  if (!(num_tokens > 0) || !std::isfinite(num_tokens))
    throw Error(fmt::format("distill_token_mean: num_tokens must be a finite number > 0, got {}", num_tokens));
  const at::Tensor counted = label_mask.to(divergence.device()) != 0;
  return at::where(counted, divergence, at::zeros({}, divergence.options())).sum() / num_tokens;
}

}  // namespace roll::rl
