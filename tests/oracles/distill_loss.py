#!/usr/bin/python3
"""Expected values for tests/unit/rl_distill_loss_test.cpp: the loss maths of ROLL's logit distillation
(roll/pipeline/distill/various_divergence.py and strategy.op_compute_topk_probs_and_indices) written out
again in float64 numpy, one token at a time, from the formulas rather than from rollcpp's code.

Teacher, per token: z = logits / kd_temperature / teacher_temperature; keep the k largest z (k = 0: all V),
log p = log_softmax over the kept entries, inf_mask = the kept z is +-inf.
Student, per token: s = student logits at the teacher's kept indices / kd_temperature, log q = log_softmax(s)
over the kept entries. An entry whose s is +-inf or whose teacher inf_mask is set is left out of every sum
below (it still takes part in both softmaxes). With m the mixture named for each objective:
    forward_kl         sum p (log p - log q)
    reverse_kl         sum q (log q - log p)
    skewed_forward_kl  m = lam p + (1 - lam) q;  sum p (log p - log m)
    skewed_reverse_kl  m = (1 - lam) p + lam q;  sum q (log q - log m)
    js_divergence      m = (p + q) / 2;  1/2 sum [p (log(p+1e-9) - log(m+1e-9)) + q (log(q+1e-9) - log(m+1e-9))]
    adaptive_kl        sort p ascending, q along; gap = |p - q|; tail = cumsum(sorted p) <= alpha (over all
                       kept entries, the left-out ones included); g_head = sum gap over non-tail,
                       g_tail = sum gap over tail; (g_head fkl + g_tail rkl) / (g_head + g_tail), and
                       (fkl + rkl) / 2 where g_head + g_tail = 0 (p equal to q: ROLL's 0/0 would be NaN).
token_mean = sum over tokens with label_mask != 0 of the divergence, / num_tokens.
grad (when asked): d token_mean / d student_logits by central differences, h = 1e-5, with adaptive_kl's
g_head and g_tail held at their values at the input (ROLL detaches them).

Run with Debian's python3 (numpy):

    /usr/bin/python3 tests/oracles/distill_loss.py IN.json OUT.json

IN:  {"shape": [B, T, V], "teacher_logits": [B*T*V], "student_logits": [B*T*V], "k": int,
      "kd_temperature": float, "teacher_temperature": float, "adaptive_kl_alpha": float,
      "skew_lambda": float, "label_mask": [B*T], "num_tokens": float, "objectives": [str], "grad": bool}
OUT: {"teacher_log_probs": [B*T*K], "teacher_indices": [B*T*K], "teacher_inf_mask": [B*T*K] (K = k, or V
      when k = 0), "divergence": {objective: [B*T]}, "token_mean": {objective: float},
      "grad": {objective: [B*T*V]} (only when asked)}
Numbers that are not finite travel as the strings "inf", "-inf", "nan" both ways (JSON has no literal for
them); everything is flattened row-major.
"""
import json
import sys

import numpy as np

OBJECTIVES = ("forward_kl", "reverse_kl", "adaptive_kl", "skewed_forward_kl", "skewed_reverse_kl",
              "js_divergence")
JS_EPS = 1e-9


def read_numbers(values):
    return np.array([float(v) for v in values], dtype=np.float64)  # float("-inf") reads the strings back


def write_numbers(values):
    return [float(v) if np.isfinite(v) else str(float(v)) for v in np.asarray(values, dtype=np.float64).ravel()]


def log_softmax(x):
    # Shift by the largest finite entry; -inf entries come out as -inf (exp gives exactly 0 for them).
    finite = x[np.isfinite(x)]
    shift = finite.max() if finite.size else 0.0
    y = x - shift
    return y - np.log(np.sum(np.exp(y)))


def teacher_row(z_row, k):
    """(kept indices, log p over them, inf mask) for one token's scaled teacher logits."""
    if k == 0:
        idx = np.arange(z_row.size)
    else:
        # Largest first; a stable sort keeps the lowest index among equal values (only -inf ties occur in
        # the test data, and the student is -inf at every one of those, so the choice changes nothing).
        idx = np.argsort(-z_row, kind="stable")[:k]
    kept = z_row[idx]
    return idx, log_softmax(kept), np.isinf(kept)


def divergence_parts(s_kept, logp, teacher_inf, kd_t):
    s = s_kept / kd_t
    logq = log_softmax(s)
    q = np.exp(logq)
    p = np.exp(logp)
    keep = ~(np.isinf(s) | teacher_inf)
    return p, q, logp, logq, keep


def adaptive_weights(p, q, alpha):
    order = np.argsort(p, kind="stable")
    ps, qs = p[order], q[order]
    gap = np.abs(ps - qs)
    tail = np.cumsum(ps) <= alpha
    g_head = float(np.sum(gap[~tail]))
    g_tail = float(np.sum(gap[tail]))
    total = g_head + g_tail
    if total == 0.0:
        return 0.5, 0.5
    return g_head / total, g_tail / total


def token_divergence(objective, s_kept, logp, teacher_inf, kd_t, alpha, lam, weights=None):
    p, q, logp, logq, keep = divergence_parts(s_kept, logp, teacher_inf, kd_t)
    pk, qk, lpk, lqk = p[keep], q[keep], logp[keep], logq[keep]
    if objective == "forward_kl":
        return float(np.sum(pk * (lpk - lqk)))
    if objective == "reverse_kl":
        return float(np.sum(qk * (lqk - lpk)))
    if objective == "skewed_forward_kl":
        m = lam * pk + (1.0 - lam) * qk
        return float(np.sum(pk * (lpk - np.log(m))))
    if objective == "skewed_reverse_kl":
        m = (1.0 - lam) * pk + lam * qk
        return float(np.sum(qk * (lqk - np.log(m))))
    if objective == "js_divergence":
        m = (pk + qk) / 2.0
        lm = np.log(m + JS_EPS)
        return float(0.5 * np.sum(pk * (np.log(pk + JS_EPS) - lm) + qk * (np.log(qk + JS_EPS) - lm)))
    if objective == "adaptive_kl":
        w_head, w_tail = weights if weights is not None else adaptive_weights(p, q, alpha)
        fkl = token_divergence("forward_kl", s_kept, logp, teacher_inf, kd_t, alpha, lam)
        rkl = token_divergence("reverse_kl", s_kept, logp, teacher_inf, kd_t, alpha, lam)
        return w_head * fkl + w_tail * rkl
    raise SystemExit(f"distill_loss.py: unknown objective {objective!r}")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: distill_loss.py IN.json OUT.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        inp = json.load(f)
    b, t, v = (int(n) for n in inp["shape"])
    teacher = read_numbers(inp["teacher_logits"]).reshape(b * t, v)
    student = read_numbers(inp["student_logits"]).reshape(b * t, v)
    k = int(inp["k"])
    kd_t, teacher_t = float(inp["kd_temperature"]), float(inp["teacher_temperature"])
    alpha, lam = float(inp["adaptive_kl_alpha"]), float(inp["skew_lambda"])
    label_mask = read_numbers(inp["label_mask"]).reshape(b * t) != 0
    num_tokens = float(inp["num_tokens"])
    if not 0 <= k <= v:
        sys.exit(f"distill_loss.py: k = {k} outside [0, {v}]")

    rows = [teacher_row(teacher[i] / kd_t / teacher_t, k) for i in range(b * t)]
    out = {
        "teacher_log_probs": write_numbers(np.concatenate([r[1] for r in rows])),
        "teacher_indices": [int(j) for r in rows for j in r[0]],
        "teacher_inf_mask": [bool(x) for r in rows for x in r[2]],
        "divergence": {},
        "token_mean": {},
    }
    if inp.get("grad"):
        out["grad"] = {}

    def loss_of(objective, student_logits, weights):
        return sum(token_divergence(objective, student_logits[i][rows[i][0]], rows[i][1], rows[i][2], kd_t, alpha,
                                    lam, weights[i])
                   for i in range(b * t) if label_mask[i]) / num_tokens

    for objective in inp["objectives"]:
        div = [token_divergence(objective, student[i][rows[i][0]], rows[i][1], rows[i][2], kd_t, alpha, lam)
               for i in range(b * t)]
        out["divergence"][objective] = write_numbers(div)
        out["token_mean"][objective] = float(sum(d for d, m in zip(div, label_mask) if m) / num_tokens)
        if inp.get("grad"):
            # adaptive_kl's weights are detached in ROLL: hold them at the unperturbed input's values.
            weights = []
            for i in range(b * t):
                p, q, _, _, _ = divergence_parts(student[i][rows[i][0]], rows[i][1], rows[i][2], kd_t)
                weights.append(adaptive_weights(p, q, alpha))
            h = 1e-5
            grad = np.zeros_like(student)
            for i in range(b * t):
                for j in range(v):
                    if not np.isfinite(student[i, j]):
                        continue  # -inf + h is -inf: the loss cannot move with this logit
                    up, down = student.copy(), student.copy()
                    up[i, j] += h
                    down[i, j] -= h
                    grad[i, j] = (loss_of(objective, up, weights) - loss_of(objective, down, weights)) / (2 * h)
            out["grad"][objective] = write_numbers(grad)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)  # floats as repr: the shortest text that reads back to the same double


if __name__ == "__main__":
    main()
