#!/usr/bin/env bash
# E2E: asynchronous agentic training (async_generation_ratio, docs/agentic.md) with real worker
# processes on the CPU FrozenLake config (train on slot 0, infer on slot 1):
#   A  ratio 1, 4 steps: later steps train on episodes created a step earlier
#      (scheduler/off_policy_ratio 1), the pause before each model update is timed, validation runs;
#   B  StepEnvManager + gigpo at ratio 2, 4 steps: off-policy ratio within [0, 2];
#   C  an async run killed (SIGKILL to the driver) once step 2 has begun resumes from its last
#      checkpoint and finishes;
#   D  the same config colocated is refused naming actor_infer.device_mapping.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-agentic-async.XXXXXX)"
trap 'pkill -KILL -f "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
cd "$work"
py=/usr/bin/python3
# shellcheck source=tests/e2e/lib/agentic_gigpo_config.sh
source "$root/tests/e2e/lib/agentic_gigpo_config.sh"

"$roll" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null
base=(--config_path "$root/examples/cpu" --config_name agentic_frozen_lake
      pretrain=output/models/tiny rollout_batch_size=8 train_env_manager.num_env_groups=2
      'train_env_manager.num_groups_partition=[2]' val_batch_size=4 val_env_manager.num_env_groups=4
      'val_env_manager.num_groups_partition=[4]')
common=("${base[@]}" --quiet-workers)

check() {  # check METRICS STEPS MAX_RATIO
  $py - "$@" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
steps, ratio = int(sys.argv[2]), float(sys.argv[3])
assert [r["step"] for r in rows] == list(range(steps)), [r["step"] for r in rows]
for r in rows:
    m = r["metrics"]
    for k in ("scheduler/off_policy_ratio", "env/FrozenLake/success", "actor/pg_loss", "time/step_rollout"):
        assert k in m, (r["step"], k)
    assert 0.0 <= m["scheduler/off_policy_ratio"] <= ratio, (r["step"], m["scheduler/off_policy_ratio"])
    if r["step"] > 0:
        assert "time/step_stop_server" in m, r["step"]
assert rows[0]["metrics"]["scheduler/off_policy_ratio"] == 0.0
# The first step made `ratio` extra batches of episodes, generated while step 0 trained: step 1 takes them.
assert rows[1]["metrics"]["scheduler/off_policy_ratio"] >= 1.0, rows[1]["metrics"]["scheduler/off_policy_ratio"]
print("metrics ok:", [round(r["metrics"]["scheduler/off_policy_ratio"], 2) for r in rows])
PY
}

echo "== A: ratio 1, 4 steps"
"$roll" agentic "${common[@]}" async_generation_ratio=1 output_dir=./out_a exp_name=a > a.log 2>&1 || { tail -40 a.log; exit 1; }
check "$(find . -path "*/a/*" -name metrics.jsonl | head -1)" 4 1
grep -q "pipeline complete!" a.log
for s in 0 2; do grep -q "\"val/FrozenLake/score/mean\"" "$(find . -path "*/a/*" -name metrics.jsonl | head -1)"; done

echo "== B: StepEnvManager + gigpo, ratio 2"
write_agentic_gigpo_config "$root" cfg
"$roll" agentic --config_path cfg --config_name agentic_gigpo --quiet-workers "${base[@]:4}" async_generation_ratio=2 \
  eval_steps=0 output_dir=./out_b exp_name=b > b.log 2>&1 || { tail -40 b.log; exit 1; }
check "$(find . -path "*/b/*" -name metrics.jsonl | head -1)" 4 2

echo "== C: killed during step 2, resumed from checkpoint-1"
"$roll" agentic "${common[@]}" async_generation_ratio=1 save_steps=1 eval_steps=0 output_dir=./out_c exp_name=c > c1.log 2>&1 &
driver=$!
for _ in $(seq 600); do
  grep -q "pipeline step 2 start" c1.log 2>/dev/null && break
  kill -0 "$driver" 2>/dev/null || { tail -30 c1.log; echo "the run ended before step 2"; exit 1; }
  sleep 0.2
done
kill -KILL "$driver"
wait "$driver" 2>/dev/null || true
pkill -KILL -f "out_c" 2>/dev/null || true  # its workers, orphaned by the kill
sleep 1
test -f out_c/pipeline/checkpoint-1/pipeline/worker_state_pipeline.json
c1_metrics="$(find . -path "*/c/*" -name metrics.jsonl | head -1)"
"$roll" agentic "${common[@]}" async_generation_ratio=1 save_steps=1 eval_steps=0 output_dir=./out_c exp_name=c \
  resume_from_checkpoint=./out_c/pipeline/checkpoint-1 > c2.log 2>&1 || { tail -40 c2.log; exit 1; }
grep -q "continuing at step 2" c2.log
grep -q "pipeline complete!" c2.log
$py - "$(find . -path "*/c/*" -name metrics.jsonl ! -path "$c1_metrics" | head -1)" <<'PY'
import json, sys
rows = {json.loads(l)["step"]: json.loads(l)["metrics"] for l in open(sys.argv[1])}
assert {2, 3} <= set(rows), sorted(rows)
print("C: resumed at step 2 and finished")
PY

echo "== D: colocated async is refused"
if "$roll" validate "${base[@]}" async_generation_ratio=1 'actor_infer.device_mapping=list(range(0,1))' > d.log 2>&1; then
  echo "colocated async validated"; cat d.log; exit 1
fi
grep -q "actor_infer.device_mapping" d.log || { cat d.log; exit 1; }
echo "agentic async e2e ok"
