#!/usr/bin/python3
"""Expected values for tests/unit/rl_opd_penalty_test.cpp: on-policy distillation's per-token penalty and the
advantages built from it (ROLL's roll/utils/functionals.py compute_advantage with OPD teachers), written out
again in float64 numpy from the formulas rather than from rollcpp's code.

The penalty is computed the way ROLL does it, by indexing each teacher's rows out of the batch (rollcpp
multiplies by a row mask instead, so the two sides do not share a formulation):
    for each teacher i, idx = the rows routed to it:
        kld_i = zeros [B, T];  kld_i[idx] = approx_kl(student[idx], teacher_i[idx], mask[idx], kl_penalty)
    penalty = sum_i kl_coef_i * kld_i
with d = student - teacher and approx_kl(...) = d (kl), |d| (abs), d^2 / 2 (mse),
clip(exp(-d) + d - 1, -10, 10) (k3), each times the mask. A teacher's log-probs off its rows are never read.

    pure OPD:   A = -penalty
    mixed:      G_t = R_t + gamma * G_{t+1} over R = token_level_rewards * mask (reinforce);  raw = G;  A = G - penalty
then, in both, A = masked_whiten(A, mask) when whiten_advantages (masked mean, unbiased masked variance,
(A - mean) / sqrt(var + 1e-8)), and A = A * mask.
Run with Debian's python3 (numpy):

    /usr/bin/python3 tests/oracles/opd_penalty.py IN.json OUT.json

IN:  {"student": [[B x T]], "mask": [[B x T]], "teachers": [{"log_probs": [[B x T]], "rows": [B bools],
      "kl_coef": float}], "kl_penalty": "kl" | "abs" | "mse" | "k3", "token_level_rewards": [[B x T]],
      "gamma": float, "whiten_advantages": bool}
OUT: {"penalty": [[B x T]], "pure_advantages": [[B x T]], "mixed_advantages": [[B x T]],
      "mixed_raw_advantages": [[B x T]]}
"""
import json
import sys

import numpy as np

KL_PENALTIES = ("kl", "abs", "mse", "k3")


def approx_kl(log_probs, log_probs_base, mask, kl_penalty):
    if kl_penalty == "kl":
        kld = log_probs - log_probs_base
    elif kl_penalty == "abs":
        kld = np.abs(log_probs - log_probs_base)
    elif kl_penalty == "mse":
        kld = 0.5 * np.square(log_probs - log_probs_base)
    else:  # k3: Schulman's unbiased, non-negative estimator of KL(student || teacher), clipped as ROLL does
        log_ratio = log_probs_base - log_probs
        kld = np.clip(np.exp(log_ratio) - log_ratio - 1.0, -10.0, 10.0)
    return kld * mask


def opd_penalty(student, mask, teachers, kl_penalty):
    total = np.zeros_like(student)
    for t in teachers:
        idx = np.flatnonzero(t["rows"])
        kld = np.zeros_like(student)
        # An empty idx (a teacher no row is routed to) selects [0, T] slices and leaves kld at zero.
        kld[idx] = approx_kl(student[idx], t["log_probs"][idx], mask[idx], kl_penalty)
        total = total + t["kl_coef"] * kld
    return total


def masked_mean(x, mask):
    return np.sum(x * mask) / (np.sum(mask) + 1e-8)


def masked_whiten(x, mask):
    n = np.sum(mask)
    if n < 2:  # the unbiased variance divides by n - 1 (ROLL's masked_var raises here)
        sys.exit(f"opd_penalty.py: whitening needs at least two mask tokens, got {n}")
    mean = masked_mean(x, mask)
    var = masked_mean(np.square(x - mean), mask) * (n / (n - 1.0))
    return (x - mean) / np.sqrt(var + 1e-8)


def reinforce_return(rewards, gamma):
    returns = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] + gamma * running
        returns[:, t] = running
    return returns


def finish(advantages, mask, whiten):
    if whiten:
        advantages = masked_whiten(advantages, mask)
    return advantages * mask


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: opd_penalty.py IN.json OUT.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        inp = json.load(f)
    student = np.asarray(inp["student"], dtype=np.float64)
    mask = np.asarray(inp["mask"], dtype=np.float64)
    rewards = np.asarray(inp["token_level_rewards"], dtype=np.float64)
    if not (student.ndim == 2 and student.shape == mask.shape == rewards.shape):
        sys.exit(f"opd_penalty.py: student, mask and token_level_rewards must be [B, T] of one shape, got "
                 f"{student.shape} {mask.shape} {rewards.shape}")
    kl_penalty = inp["kl_penalty"]
    if kl_penalty not in KL_PENALTIES:
        sys.exit(f"opd_penalty.py: kl_penalty must be one of {KL_PENALTIES}, got {kl_penalty!r}")
    teachers = []
    for i, t in enumerate(inp["teachers"]):
        log_probs = np.asarray(t["log_probs"], dtype=np.float64)
        rows = np.asarray(t["rows"], dtype=bool)
        if log_probs.shape != student.shape or rows.shape != (student.shape[0],):
            sys.exit(f"opd_penalty.py: teacher {i} has log_probs {log_probs.shape} and rows {rows.shape}; "
                     f"want {student.shape} and ({student.shape[0]},)")
        teachers.append({"log_probs": log_probs, "rows": rows, "kl_coef": float(t["kl_coef"])})
    whiten = bool(inp["whiten_advantages"])

    penalty = opd_penalty(student, mask, teachers, kl_penalty)
    pure = finish(-penalty, mask, whiten)
    raw = reinforce_return(rewards * mask, float(inp["gamma"]))
    mixed = finish(raw - penalty, mask, whiten)
    out = {
        "penalty": penalty.tolist(),
        "pure_advantages": pure.tolist(),
        "mixed_advantages": mixed.tolist(),
        "mixed_raw_advantages": raw.tolist(),
    }
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)  # floats as repr: the shortest text that reads back to the same double


if __name__ == "__main__":
    main()
