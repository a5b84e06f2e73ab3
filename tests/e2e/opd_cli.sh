#!/usr/bin/env bash
# End-to-end: `roll opd` (on-policy distillation) with real worker processes.
#   A  one teacher (examples/cpu/opd_arithmetic.yaml): 3 steps; the student's samples are scored
#      by the teacher on every row (opd/teacher/rows, opd/teacher/kl), checkpoints are written;
#      resumed from checkpoint-1, step 2's metrics equal A's.
#   B  two teachers routed by tag (examples/cpu/opd_math_code.yaml): each scores the rows of its
#      domain only, together every row once; resumed from checkpoint-1, step 2 again equal.
set -euo pipefail
roll="$(realpath "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
py=/usr/bin/python3
fail() { echo "FAIL: $*"; exit 1; }
work=$(mktemp -d /tmp/roll-e2e-opd.XXXXXX); trap 'rm -rf "$work"' EXIT
cd "$work"

mkdir -p data output/models
"$roll" data arithmetic --seed 3 --n 300 --split train --out data/arith_train.jsonl >/dev/null
"$roll" data code --seed 3 --n 100 --split train --out data/code_train.jsonl >/dev/null
"$roll" data arithmetic --seed 3 --n 8 --split test --out data/arith_test.jsonl >/dev/null
"$roll" model init --preset tiny --seed 5 --out output/models/student >/dev/null 2>&1
for t in teacher:9 teacher_math:9 teacher_code:11; do
  "$roll" model init --preset tiny --seed "${t#*:}" --out "output/models/${t%%:*}" >/dev/null 2>&1
done

# Level-0 generation on one infer rank: a resumed step samples the same tokens (docs/pipelines.md).
small=(--quiet-workers rollout_batch_size=4 num_return_sequences_in_group=2 response_length=16 max_steps=3
       save_steps=1 eval_steps=100 generate_opt_level=0
       'student_train.device_mapping=list(range(0,1))' 'student_infer.device_mapping=list(range(1,2))')

run() {  # run CONFIG LOG [overrides...]
  local config="$1" log="$2"; shift 2
  "$roll" opd --config_path "$root/examples/cpu" --config_name "$config" "${small[@]}" "$@" >"$log" 2>&1 \
    || { tail -40 "$log"; fail "roll opd $config $* exited non-zero"; }
}

check() {  # check METRICS TEACHER_CLUSTER...
  "$py" - "$@" <<'PY' || fail "OPD metrics of $1 (see above)"
import json, math, sys
path, teachers = sys.argv[1], sys.argv[2:]
steps = [json.loads(l)["metrics"] for l in open(path)]
assert len(steps) == 3, len(steps)
for m in steps:
    rows = [m["opd/%s/rows" % t] for t in teachers]
    # rollout_batch_size 4 x 2 samples: every row is scored by exactly one teacher.
    assert sum(rows) == 8 and all(r > 0 for r in rows), rows
    for t in teachers:
        kl = m["opd/%s/kl" % t]
        assert math.isfinite(kl) and kl != 0, (t, kl)  # two differently seeded models disagree
        assert 0.0 < m["system/busy/" + t] <= 1.0, (t, m.get("system/busy/" + t))
    for k in ("actor/pg_loss", "actor_train/grad_norm", "critic/score/mean", "time/ref_log_probs_values"):
        assert k in m, k
print("teachers", {t: [round(m["opd/%s/kl" % t], 4) for m in steps] for t in teachers})
PY
}

echo "== A: one teacher"
run opd_arithmetic a.log 'teacher.device_mapping=list(range(0,1))'
a_metrics=$(ls output/opd-arithmetic/opd-arithmetic-cpu/*/metrics.jsonl)
check "$a_metrics" teacher
[ -f output/opd-arithmetic/pipeline/checkpoint-1/pipeline/worker_state_pipeline.json ] || fail "no pipeline checkpoint-1"
[ -f output/opd-arithmetic/actor_train/checkpoint-2/manifest.json ] || fail "no actor_train checkpoint-2"
mv output/opd-arithmetic/opd-arithmetic-cpu a-metrics
run opd_arithmetic a_resumed.log 'teacher.device_mapping=list(range(0,1))' \
  resume_from_checkpoint=output/opd-arithmetic/pipeline/checkpoint-1
grep -q 'continuing at step 2' a_resumed.log || fail "A: the resume did not continue at step 2"
"$py" "$root/tests/e2e/same_step_metrics.py" a-metrics/*/metrics.jsonl \
  output/opd-arithmetic/opd-arithmetic-cpu/*/metrics.jsonl 2 opd/teacher/kl actor/pg_loss

echo "== B: two teachers routed by tag"
routed=('teacher.teacher_math.device_mapping=list(range(0,1))' 'teacher.teacher_code.device_mapping=list(range(1,2))')
run opd_math_code b.log "${routed[@]}"
b_metrics=$(ls output/opd-math-code/opd-math-code-cpu/*/metrics.jsonl)
check "$b_metrics" teacher-teacher_math teacher-teacher_code
mv output/opd-math-code/opd-math-code-cpu b-metrics
run opd_math_code b_resumed.log "${routed[@]}" resume_from_checkpoint=output/opd-math-code/pipeline/checkpoint-1
grep -q 'continuing at step 2' b_resumed.log || fail "B: the resume did not continue at step 2"
"$py" "$root/tests/e2e/same_step_metrics.py" b-metrics/*/metrics.jsonl \
  output/opd-math-code/opd-math-code-cpu/*/metrics.jsonl 2 opd/teacher-teacher_math/kl opd/teacher-teacher_code/kl
echo "ok"
