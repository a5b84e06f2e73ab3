#!/usr/bin/python3
"""Expected values for tests/unit/rl_dpo_loss_test.cpp: ROLL's DPO loss (roll/pipeline/dpo/actor_worker.py)
written out again in float64 numpy, from the formula rather than from rollcpp's code.

With h = (policy_chosen - policy_rejected) - (ref_chosen - ref_rejected) per pair:
    sigmoid / cDPO:  -logsigmoid(beta*h) * (1 - label_smoothing) - logsigmoid(-beta*h) * label_smoothing
    IPO:             (h - 1 / (2*beta)) ** 2
    chosen_rewards   = beta * (policy_chosen - ref_chosen)
    rejected_rewards = beta * (policy_rejected - ref_rejected)
    loss = mean(losses), acc = mean(chosen_rewards > rejected_rewards)
Run with Debian's python3 (numpy):

    /usr/bin/python3 tests/oracles/dpo_loss.py IN.json OUT.json

IN:  {"policy_chosen": [...], "policy_rejected": [...], "ref_chosen": [...], "ref_rejected": [...],
      "beta": float, "label_smoothing": float, "ipo": bool}
OUT: {"losses": [...], "chosen_rewards": [...], "rejected_rewards": [...], "loss": float, "acc": float}
"""
import json
import sys

import numpy as np


def logsigmoid(x):
    # log(1 / (1 + exp(-x))) = -log(1 + exp(-x)); logaddexp never forms exp of a large argument, so this
    # stays finite and keeps full relative precision where sigmoid(x) rounds to 1 or underflows to 0.
    return -np.logaddexp(0.0, -x)


def dpo_loss(pc, pr, rc, rr, beta, label_smoothing, ipo):
    h = (pc - pr) - (rc - rr)
    if ipo:
        losses = (h - 1.0 / (2.0 * beta)) ** 2
    else:
        losses = -logsigmoid(beta * h) * (1.0 - label_smoothing) - logsigmoid(-beta * h) * label_smoothing
    chosen_rewards = beta * (pc - rc)
    rejected_rewards = beta * (pr - rr)
    return losses, chosen_rewards, rejected_rewards


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: dpo_loss.py IN.json OUT.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        inp = json.load(f)
    pc, pr, rc, rr = (np.asarray(inp[k], dtype=np.float64)
                      for k in ("policy_chosen", "policy_rejected", "ref_chosen", "ref_rejected"))
    if not (pc.ndim == 1 and pc.shape == pr.shape == rc.shape == rr.shape):
        sys.exit(f"dpo_loss.py: the four inputs must be vectors of one length, got "
                 f"{pc.shape} {pr.shape} {rc.shape} {rr.shape}")
    losses, chosen, rejected = dpo_loss(pc, pr, rc, rr, float(inp["beta"]), float(inp["label_smoothing"]),
                                        bool(inp["ipo"]))
    out = {
        "losses": losses.tolist(),
        "chosen_rewards": chosen.tolist(),
        "rejected_rewards": rejected.tolist(),
        "loss": float(np.mean(losses)),
        "acc": float(np.mean(chosen > rejected)),
    }
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(out, f)  # floats as repr: the shortest text that reads back to the same double


if __name__ == "__main__":
    main()
