#!/usr/bin/env bash
# End-to-end: `roll distill` on examples/cpu/distill_arithmetic.yaml. The teacher is a tiny model
# the SFT example trained on the arithmetic rows (`roll sft`, 12 steps); a fresh tiny student
# (another seed) is distilled from its top-64 distributions for 12 steps by two data-parallel
# workers beside a two-rank teacher: the student's divergence to the teacher on held-out rows
# (student/val_distill_loss, forward KL) falls by at least half, ROLL's metric names are logged,
# checkpoints are written, and a run resumed from checkpoint-8 reproduces steps 9-11 exactly.
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
for split in train test; do
  n=128; [ "$split" = test ] && n=16
  "$roll" data arithmetic --seed 1 --n "$n" --split "$split" --out "data/arith_$split.jsonl" >/dev/null 2>&1 \
    || fail "data arithmetic $split"
  "$py" -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"instruction": r["messages"][0]["content"], "output": "\\boxed{%s}" % r["ground_truth"]}))' \
    <"data/arith_$split.jsonl" >"data/sft_arith_$split.jsonl"
  "$roll" data distill --seed 1 --n "$n" --split "$split" --out "data/distill_$split.jsonl" >/dev/null 2>&1 \
    || fail "data distill $split"
done
"$roll" model init --preset tiny --seed 9 --out output/models/tiny >/dev/null 2>&1 || fail "model init (teacher)"
"$roll" model init --preset tiny --seed 5 --out output/models/student >/dev/null 2>&1 || fail "model init (student)"
"$roll" sft --config_path "$root/examples/cpu" --config_name sft_arithmetic --quiet-workers >sft.log 2>&1 \
  || { tail -20 sft.log; fail "roll sft (the teacher)"; }
teacher=output/sft-arithmetic/sft_train/checkpoint-11

run() {  # run LOG [overrides...]
  local log="$1"; shift
  "$roll" distill --config_path "$root/examples/cpu" --config_name distill_arithmetic --quiet-workers \
    "teacher_pretrain=$teacher" "$@" >"$log" 2>&1 || { tail -40 "$log"; fail "roll distill $* exited non-zero"; }
}
run first.log
out=output/distill-arithmetic
metrics=$(ls "$out"/distill-arithmetic-cpu/*/metrics.jsonl)
[ "$(wc -l <"$metrics")" = 12 ] || fail "expected 12 logged steps, got $(wc -l <"$metrics")"
"$py" - "$metrics" <<'PY' || fail "the student did not move toward the teacher (see above)"
import json, sys
steps = [json.loads(l)["metrics"] for l in open(sys.argv[1])]
val = {int(s["system/step"]): s for s in steps if "student/val_distill_loss" in s}
print("train distill loss", " ".join(f'{s["train/train_distill_loss"]:.4f}' for s in steps),
      "| val distill loss", {k: round(v["student/val_distill_loss"], 4) for k, v in val.items()})
assert sorted(val) == [0, 4, 8], sorted(val)
assert val[8]["student/val_distill_loss"] <= 0.5 * val[0]["student/val_distill_loss"], "held-out KL to the teacher"
for s in steps:
    for k in ("train/loss", "train/train_student_loss", "train/train_distill_loss", "student/grad_norm",
              "student/lr", "train/teacher_forward", "train/student_train_step", "train/step_train"):
        assert k in s, k
PY
check_checkpoints "$out" student 4 8 11

# Resume from checkpoint-8: steps 9-11 again, with the same losses.
mv "$out/distill-arithmetic-cpu" first-run-metrics
run resumed.log "resume_from_checkpoint=$out/pipeline/checkpoint-8"
grep -q 'continuing at step 9' resumed.log || fail "resume did not continue at step 9"
same_losses first-run-metrics/*/metrics.jsonl "$out"/distill-arithmetic-cpu/*/metrics.jsonl train/loss 9 10 11
echo "ok"
