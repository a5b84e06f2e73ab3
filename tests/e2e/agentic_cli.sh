#!/usr/bin/env bash
# E2E: `roll agentic` on the CPU FrozenLake config: separate env, infer
# and train worker processes.
#   A  4 steps with checkpoints at 2 and 3; the jsonl tracker holds val/FrozenLake/score/mean
#      (validation at steps 0 and 2) and env/FrozenLake/success every step; render_save_dir holds
#      every val episode as text.
#   B  resume from checkpoint-2: step 3's non-timing metrics equal A's within 1e-6 (the train
#      queue's episode ids come back from the checkpoint; sampling seeds follow the episodes).
#   C  StepEnvManager + adv_estimator gigpo (one sample per turn, state groups), 2 steps.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-agentic.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
py=/usr/bin/python3
# shellcheck source=tests/e2e/lib/agentic_gigpo_config.sh
source "$root/tests/e2e/lib/agentic_gigpo_config.sh"

"$roll" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null
common=(--config_path "$root/examples/cpu" --config_name agentic_frozen_lake --quiet-workers
        pretrain=output/models/tiny rollout_batch_size=8 train_env_manager.num_env_groups=2
        'train_env_manager.num_groups_partition=[2]' val_batch_size=4 val_env_manager.num_env_groups=4
        'val_env_manager.num_groups_partition=[4]')

echo "== A: 4 steps, checkpoints at 2 and 3, val renders"
"$roll" agentic "${common[@]}" output_dir=./out exp_name=a render_save_dir=./render > a.log 2>&1 \
  || { tail -40 a.log; exit 1; }
a_metrics="$(find . -path "*/a/*" -name metrics.jsonl | head -1)"
[[ -f "$a_metrics" ]] || { echo "no metrics.jsonl for run A"; find . -name metrics.jsonl; exit 1; }
test -f out/pipeline/checkpoint-2/pipeline/worker_state_pipeline.json
test -f out/actor_train/checkpoint-3/manifest.json
$py - "$a_metrics" out/pipeline/checkpoint-2/pipeline/worker_state_pipeline.json render <<'PY'
import glob, json, os, re, sys
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
# The checkpoint keeps the train queue: 3 steps x 1 episode per group were created.
state = json.load(open(sys.argv[2]))["kv"]["agentic_rollout_state"]
assert [g["next_episode"] for g in state["train_queue"]["groups"]] == [3, 3], state
# render_save_dir/<exp_name>/<time>/<step>/<env>_<tag>_<episode>_<score>.txt, one per val episode.
runs = glob.glob(os.path.join(sys.argv[3], "a", "*"))
assert len(runs) == 1, runs
for step in (0, 2):
    files = sorted(glob.glob(os.path.join(runs[0], str(step), "*.txt")))
    assert len(files) == 4, (step, files)
    for f in files:
        assert re.fullmatch(r"\d+_FrozenLake_\d+_-?\d+\.\d\.txt", os.path.basename(f)), f
        text = open(f).read()
        assert text.startswith("FrozenLake episode ") and "== turn 1\n" in text and "== final\n" in text, text
print("A: metrics, checkpoint state and renders ok")
PY
grep -q "pipeline complete!" a.log

echo "== B: resume from checkpoint-2"
"$roll" agentic "${common[@]}" output_dir=./out exp_name=a resume_from_checkpoint=./out/pipeline/checkpoint-2 \
  > b.log 2>&1 || { tail -40 b.log; exit 1; }
b_metrics="$(find . -path '*/a/*' -name metrics.jsonl ! -path "$a_metrics" | head -1)"
grep -q "continuing at step 3" b.log
$py "$root/tests/e2e/same_step_metrics.py" "$a_metrics" "$b_metrics" 3 env/FrozenLake/success critic/score/mean \
  actor/pg_loss

echo "== C: StepEnvManager + gigpo, 2 steps"
write_agentic_gigpo_config "$root" cfg
"$roll" agentic --config_path cfg --config_name agentic_gigpo --quiet-workers pretrain=output/models/tiny \
  rollout_batch_size=8 train_env_manager.num_env_groups=2 'train_env_manager.num_groups_partition=[2]' \
  val_batch_size=4 val_env_manager.num_env_groups=4 'val_env_manager.num_groups_partition=[4]' \
  max_steps=2 save_steps=10 eval_steps=0 output_dir=./outc exp_name=c > c.log 2>&1 || { tail -40 c.log; exit 1; }
c_metrics="$(find . -path '*/c/*' -name metrics.jsonl | head -1)"
$py - "$c_metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1], [r["step"] for r in rows]
for r in rows:
    m = r["metrics"]
    for k in ("critic/episode_rewards_norm/mean", "critic/step_rewards_norm/mean", "system/state_batch_size/mean",
              "actor/pg_loss", "env/FrozenLake/success"):
        assert k in m, (r["step"], k, sorted(m))
    # One sample per turn: at least as many samples as the 8 trajectories.
    assert m["system/batch_size"] >= 8, m["system/batch_size"]
print("C: gigpo metrics ok")
PY
grep -q "pipeline complete!" c.log
echo "agentic e2e: ok"
