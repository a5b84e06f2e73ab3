#!/usr/bin/env bash
# E2E: `roll agentic` on the CPU FrozenLake config (issue "Agentic pipeline"): separate env, infer
# and train worker processes, 4 steps with checkpoints at 2 and 3; the jsonl tracker holds
# val/FrozenLake/score/mean (validation at steps 0 and 2) and env/FrozenLake/success every step.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-agentic.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

"$roll" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null
"$roll" agentic --config_path "$root/examples/cpu" --config_name agentic_frozen_lake --quiet-workers \
  pretrain=output/models/tiny output_dir=./out rollout_batch_size=8 train_env_manager.num_env_groups=2 \
  'train_env_manager.num_groups_partition=[2]' val_batch_size=4 val_env_manager.num_env_groups=4 \
  'val_env_manager.num_groups_partition=[4]' > run.log 2>&1 || { tail -40 run.log; exit 1; }
metrics="$(find . -name metrics.jsonl | head -1)"
[[ -f "$metrics" ]] || { echo "no metrics.jsonl"; exit 1; }
test -f out/pipeline/checkpoint-2/pipeline/worker_state_pipeline.json
test -f out/actor_train/checkpoint-3/manifest.json
/usr/bin/python3 - "$metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1, 2, 3], [r["step"] for r in rows]
for r in rows:
    m = r["metrics"]
    for k in ("env/FrozenLake/success", "critic/score/mean", "actor/pg_loss", "actor_train/grad_norm",
              "time/step_rollout", "time/step_train", "tokens/response_length/mean", "system/tps"):
        assert k in m, (r["step"], k)
    assert 0.0 <= m["env/FrozenLake/success"] <= 1.0
for s in (0, 2):
    assert "val/FrozenLake/score/mean" in rows[s]["metrics"], sorted(rows[s]["metrics"])
print("agentic e2e: ok")
PY
grep -q "pipeline complete!" run.log
