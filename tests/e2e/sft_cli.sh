#!/usr/bin/env bash
# End-to-end: `roll sft` on examples/cpu/sft_arithmetic.yaml (a tiny model, two data-parallel
# workers, arithmetic answers as ROLL's instruction/output columns) trains 12 steps: the training
# and validation losses go down, checkpoints are written, and a run resumed from checkpoint-8
# reproduces the uninterrupted run's last steps exactly.
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
for split in train test; do
  n=64; [ "$split" = test ] && n=16
  "$roll" data arithmetic --seed 1 --n "$n" --split "$split" --out "data/arith_$split.jsonl" >/dev/null 2>&1 \
    || fail "data arithmetic $split"
  "$py" -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"instruction": r["messages"][0]["content"], "output": "\\boxed{%s}" % r["ground_truth"]}))' \
    <"data/arith_$split.jsonl" >"data/sft_arith_$split.jsonl"
done

run() {  # run LOG [overrides...]
  local log="$1"; shift
  "$roll" sft --config_path "$root/examples/cpu" --config_name sft_arithmetic --quiet-workers "$@" >"$log" 2>&1 \
    || { tail -40 "$log"; fail "roll sft $* exited non-zero"; }
}
run first.log
out=output/sft-arithmetic
metrics=$(ls "$out"/sft-arithmetic-cpu/*/metrics.jsonl)
[ "$(wc -l <"$metrics")" = 12 ] || fail "expected 12 logged steps, got $(wc -l <"$metrics")"
"$py" - "$metrics" <<'PY' || fail "the losses did not go down (see above)"
import json, sys
steps = [json.loads(l)["metrics"] for l in open(sys.argv[1])]
loss = [s["sft_train/loss"] for s in steps]
val = {int(s["system/step"]): s["sft_train/val_loss"] for s in steps if "sft_train/val_loss" in s}
print("train loss", " ".join(f"{x:.3f}" for x in loss), "| val loss", val)
assert sorted(val) == [0, 4, 8], val
assert sum(loss[-3:]) / 3 < sum(loss[:3]) / 3 - 1.0, "training loss"
assert val[8] < val[0] - 1.0, "validation loss"
assert all("sft_train/grad_norm" in s and s["sft_train/lr"] > 0 for s in steps)
PY
check_checkpoints "$out" sft_train 4 8 11

# Resume from checkpoint-8: steps 9-11 again, with the same losses.
mv "$out/sft-arithmetic-cpu" first-run-metrics
run resumed.log "resume_from_checkpoint=$out/pipeline/checkpoint-8"
grep -q 'continuing at step 9' resumed.log || fail "resume did not continue at step 9"
same_losses first-run-metrics/*/metrics.jsonl "$out"/sft-arithmetic-cpu/*/metrics.jsonl sft_train/loss 9 10 11
echo "ok"
