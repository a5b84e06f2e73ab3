#!/usr/bin/env bash
# End-to-end: `roll dpo` on examples/cpu/dpo_preference.yaml (a tiny model trained by two
# data-parallel workers against a frozen reference, on synthetic preference pairs from
# `roll data preference`) runs 8 steps: the held-out preference accuracy (val/actor/acc) rises by
# at least 20 points and the held-out DPO loss falls from log 2, ROLL's metric names are logged,
# checkpoints are written, and a run resumed from checkpoint-4 reproduces steps 5-7 exactly.
set -euo pipefail
roll="$(realpath "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
# shellcheck source=tests/e2e/lib/trainer_checks.sh
source "$root/tests/e2e/lib/trainer_checks.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cd "$work"

mkdir -p data output/models
"$roll" model init --preset tiny --out output/models/tiny >/dev/null 2>&1 || fail "model init"
"$roll" data preference --seed 1 --n 256 --split train --out data/pref_train.jsonl >/dev/null 2>&1 || fail "data train"
"$roll" data preference --seed 1 --n 32 --split test --out data/pref_test.jsonl >/dev/null 2>&1 || fail "data test"

run() {  # run LOG [overrides...]
  local log="$1"; shift
  "$roll" dpo --config_path "$root/examples/cpu" --config_name dpo_preference --quiet-workers "$@" >"$log" 2>&1 \
    || { tail -40 "$log"; fail "roll dpo $* exited non-zero"; }
}
run first.log
out=output/dpo-preference
metrics=$(ls "$out"/dpo-preference-cpu/*/metrics.jsonl)
[ "$(wc -l <"$metrics")" = 8 ] || fail "expected 8 logged steps, got $(wc -l <"$metrics")"
"$py" - "$metrics" <<'PY' || fail "DPO did not learn the preference (see above)"
import json, math, sys
steps = [json.loads(l)["metrics"] for l in open(sys.argv[1])]
val = {int(s["system/step"]): s for s in steps if "val/actor/acc" in s}
print("train loss", " ".join(f'{s["actor/loss"]:.3f}' for s in steps),
      "| val acc", {k: round(v["val/actor/acc"], 3) for k, v in val.items()},
      "| val loss", {k: round(v["val/actor/loss"], 4) for k, v in val.items()})
assert sorted(val) == [0, 4], sorted(val)
# At step 0 the policy is the reference: every pair's margin is ~0, the loss log 2.
assert abs(val[0]["val/actor/loss"] - math.log(2)) < 1e-3, val[0]["val/actor/loss"]
assert val[4]["val/actor/acc"] >= val[0]["val/actor/acc"] + 0.20, "held-out preference accuracy"
assert val[4]["val/actor/loss"] < val[0]["val/actor/loss"] - 0.05, "held-out DPO loss"
for s in steps:
    for k in ("actor/loss", "actor/acc", "actor/chosen_reward", "actor/reject_reward", "actor/lr",
              "actor_train/grad_norm", "time/cal_ref_log_probs", "time/actor_train"):
        assert k in s, k
assert steps[-1]["actor/chosen_reward"] > steps[-1]["actor/reject_reward"]
PY
check_checkpoints "$out" actor_train 4 7

# Resume from checkpoint-4: steps 5-7 again, with the same losses.
mv "$out/dpo-preference-cpu" first-run-metrics
run resumed.log "resume_from_checkpoint=$out/pipeline/checkpoint-4"
grep -q 'continuing at step 5' resumed.log || fail "resume did not continue at step 5"
same_losses first-run-metrics/*/metrics.jsonl "$out"/dpo-preference-cpu/*/metrics.jsonl actor/loss 5 6 7
echo "ok"
