#!/usr/bin/env bash
# E2E: asynchronous RLVR (async_generation_ratio, docs/pipelines.md "Asynchronous generation") with
# real worker processes on the arithmetic CPU config, actor_train and actor_infer on separate slots:
#   A  ratio 1, 4 steps, checkpoints at 2: later steps train on prompts that started a step
#      earlier (<d>/scheduler/off_policy_ratio > 0, tokens older than the weights), the pause before
#      each model update is timed, validation runs while generation is paused;
#   B  resume from checkpoint-2: step 3 runs from the checkpoint's weights and dataset position;
#   C  ratio 2 with a query filter and additional prompts, 3 steps;
#   D  the same config colocated (train and infer on the same slots) is refused naming the key.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-rlvr-async.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p data
py=/usr/bin/python3

"$roll" data arithmetic --seed 3 --n 300 --split train --out data/arith_train.jsonl >/dev/null
"$roll" data arithmetic --seed 3 --n 8 --split test --out data/arith_test.jsonl >/dev/null
"$roll" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null

common=(--config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers
        pretrain=output/models/tiny rollout_batch_size=4 num_return_sequences_in_group=2 response_length=24
        'actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))')

echo "== A: ratio 1, 4 steps"
"$roll" rlvr "${common[@]}" async_generation_ratio=1 output_dir=./out exp_name=a > a.log 2>&1 || { tail -40 a.log; exit 1; }
grep -q "RLVR generation: asynchronous, async_generation_ratio 1" a.log || { echo "no async line"; grep "RLVR generation" a.log; exit 1; }
a_metrics="$(find . -path "*/a/*" -name metrics.jsonl | head -1)"
$py - "$a_metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1, 2, 3], [r["step"] for r in rows]
for r in rows:
    m = r["metrics"]
    for k in ("math_rule/scheduler/off_policy_ratio", "math_rule/scheduler/collect_query_count",
              "math_rule/scheduler/partial_rollout_count", "math_rule/scheduler/buffered_query_count",
              "rollout/token_version_lag/mean", "time/step_stop_server", "actor/pg_loss"):
        assert k in m, (r["step"], k)
    assert m["math_rule/scheduler/collect_query_count"] == 4, m["math_rule/scheduler/collect_query_count"]
    assert 0.0 <= m["math_rule/scheduler/off_policy_ratio"] <= 1.0, m["math_rule/scheduler/off_policy_ratio"]
    assert m["rollout/token_version_lag/max"] <= 1.0 + 1e-9, m["rollout/token_version_lag/max"]
assert rows[0]["metrics"]["math_rule/scheduler/off_policy_ratio"] == 0.0
# Step 0's ratio-1 budget generated a second batch while step 0 trained: step 1 trains on it.
assert rows[1]["metrics"]["math_rule/scheduler/off_policy_ratio"] > 0.0, rows[1]["metrics"]
assert any(r["metrics"]["rollout/token_version_lag/mean"] > 0 for r in rows[1:])
for s in (0, 2):
    assert "val_correct/arithmetic/mean" in rows[s]["metrics"]
print("A: async metrics ok")
PY
test -f out/pipeline/checkpoint-2/pipeline/worker_state_pipeline.json

echo "== B: resume from checkpoint-2"
"$roll" rlvr "${common[@]}" async_generation_ratio=1 output_dir=./out exp_name=a \
  resume_from_checkpoint=./out/pipeline/checkpoint-2 > b.log 2>&1 || { tail -40 b.log; exit 1; }
b_metrics="$(find . -path '*/a/*' -name metrics.jsonl ! -path "$a_metrics" | head -1)"
grep -q "continuing at step 3" b.log
$py - "$b_metrics" <<'PY'
import json, sys
b = {json.loads(l)["step"]: json.loads(l)["metrics"] for l in open(sys.argv[1])}
assert 3 in b, sorted(b)
m = b[3]
# The resumed run starts like a first asynchronous step: its prompts start in step 3.
assert m["math_rule/scheduler/off_policy_ratio"] == 0.0, m
# It drew its prompts after the checkpoint's dataset position (none replayed).
assert m["math_rule/scheduler/query_use_count"] >= 4, m
print("B: resumed ok")
PY

echo "== C: ratio 2, a query filter and additional prompts, 3 steps"
"$roll" rlvr "${common[@]}" async_generation_ratio=2 max_steps=3 save_steps=1000 eval_steps=0 output_dir=./out_c exp_name=c \
  is_use_additional_prompts=true max_additional_running_prompts=2 \
  rewards.math_rule.query_filter_config.type=mean_filter \
  rewards.math_rule.query_filter_config.filter_args.threshold_up=0.5 > c.log 2>&1 \
  || { tail -40 c.log; exit 1; }
c_metrics="$(find . -path '*/c/*' -name metrics.jsonl | head -1)"
$py - "$c_metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1, 2]
for r in rows:
    m = r["metrics"]
    assert m["math_rule/scheduler/collect_query_count"] == 4
    assert 0.0 <= m["math_rule/scheduler/off_policy_ratio"] <= 2.0
    assert m["rollout/token_version_lag/max"] <= 2.0 + 1e-9
assert max(r["metrics"]["math_rule/scheduler/off_policy_ratio"] for r in rows) > 0.0
print("C: ratio 2 ok")
PY

echo "== D: colocated async is refused"
validate_args=()
for a in "${common[@]}"; do [[ $a == --quiet-workers ]] || validate_args+=("$a"); done
if "$roll" validate "${validate_args[@]}" async_generation_ratio=1 'actor_infer.device_mapping=list(range(0,1))' > d.log 2>&1; then
  echo "colocated async validated"; cat d.log; exit 1
fi
grep -q "actor_infer.device_mapping" d.log || { cat d.log; exit 1; }
grep -q "devices of its own" d.log || { cat d.log; exit 1; }
echo "rlvr async e2e ok"
