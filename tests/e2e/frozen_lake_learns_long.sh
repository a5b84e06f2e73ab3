#!/usr/bin/env bash
# E2E (long): RL post-training makes a small model better at FrozenLake (issue "The main job").
# The demo's recipe (scripts/lib/demo_learn.sh), shortened, with fixed seeds (~3-3.5 min here):
#   model init (the demo's 1.1M qwen2, init std 0.05) -> BFS expert data (noise 0.1) -> 200 SFT
#   steps -> greedy success on 64 held-out maps -> 24 GiGPO steps (separate infer and train
#   workers) -> greedy success on the same 64 maps; asserts RL - SFT >= 8 points, that RL kept
#   the answers valid, and at most 240 s. The samples are shorter than the demo's (no system
#   prompt, chatml, bare answers: tests/e2e/configs/frozen_lake_learn_rl.yaml says why).
# ROLL_LEARN_SEED (default 1) moves every seed at once (model S, expert data 10+S, validation
# conversations 20+S, pipelines 7+S): docs/demo.md ("Session 8") lists the 5 seeds this was run on.
# ROLL_LEARN_KEEP=DIR keeps the run there instead of a temporary directory.
# ROLL_LEARN_SFT_ARGS / ROLL_LEARN_RL_ARGS add overrides to the SFT / RL run, for experiments.
set -euo pipefail
roll="$(realpath "$1")"  # absolute: the script works in its own directory
root="$(cd "$(dirname "$0")/../.." && pwd)"
seed="${ROLL_LEARN_SEED:-1}"
if [[ -n "${ROLL_LEARN_KEEP:-}" ]]; then
  work="$ROLL_LEARN_KEEP"; rm -rf "$work"; mkdir -p "$work"
else
  work="$(mktemp -d /tmp/roll-e2e-learn.XXXXXX)"; trap 'rm -rf "$work"' EXIT
fi
cd "$work"
py=/usr/bin/python3
configs="$root/tests/e2e/configs"
t0=$SECONDS
phase() { echo "== $1 ($((SECONDS - t0)) s)"; }
last_checkpoint() { ls -d "$1"/checkpoint-* | sort -t- -k2 -n | tail -1; }  # by step number, not by name

phase "model init and expert data, seed $seed"
"$roll" model init --preset tiny --hidden-size 128 --layers 4 --intermediate-size 512 --heads 8 --kv-heads 4 \
  --vocab 512 --rope-theta 100 --init-std 0.05 --seed "$seed" --out model >/dev/null 2>&1
expert=(data expert --config_path "$configs" --config_name frozen_lake_learn_rl)
"$roll" "${expert[@]}" --seed $((seed + 10)) --n 8000 --noise 0.1 --out train.jsonl >/dev/null
"$roll" "${expert[@]}" --seed $((seed + 20)) --n 64 --noise 0 --out val.jsonl >/dev/null

phase "SFT"
"$roll" sft --config_path "$configs" --config_name frozen_lake_learn_sft --quiet-workers seed=$((7 + seed)) \
  pretrain=model output_dir=sft logging_dir=logs "sft_train.data_args.file_name=[train.jsonl]" \
  "validation.data_args.file_name=[val.jsonl]" ${ROLL_LEARN_SFT_ARGS:-} > sft.log 2>&1 || { tail -30 sft.log; exit 1; }
sft_ckpt="$(last_checkpoint sft/sft_train)"
test -f "$sft_ckpt/config.json"

rl=(agentic --config_path "$configs" --config_name frozen_lake_learn_rl --quiet-workers seed=$((7 + seed)))
evaluate() {  # evaluate CHECKPOINT NAME: greedy success on the config's 64 validation maps
  "$roll" "${rl[@]}" --eval-only pretrain="$1" output_dir="eval-$2" logging_dir="eval-$2/logs" > "eval-$2.log" 2>&1 \
    || { tail -30 "eval-$2.log"; exit 1; }
}
phase "greedy evaluation of the SFT checkpoint"
evaluate "$sft_ckpt" sft
phase "GiGPO"
"$roll" "${rl[@]}" pretrain="$sft_ckpt" output_dir=rl logging_dir=logs ${ROLL_LEARN_RL_ARGS:-} > rl.log 2>&1 \
  || { tail -30 rl.log; exit 1; }
rl_ckpt="$(last_checkpoint rl/actor_train)"
phase "greedy evaluation of $rl_ckpt"
evaluate "$rl_ckpt" rl
phase "done"

$py - "$seed" $((SECONDS - t0)) <<'PY'
import glob, json, sys
def val_metrics(name):
    files = glob.glob(f"eval-{name}/**/metrics.jsonl", recursive=True)
    assert len(files) == 1, (name, files)
    return json.loads(open(files[0]).readline())["metrics"]
sft, rl = val_metrics("sft"), val_metrics("rl")
success = "eval/FrozenLake/success"
gain, wall = rl[success] - sft[success], int(sys.argv[2])
def rounded(m, key): return round(m[f"val/env/FrozenLake/{key}"], 3)
print(json.dumps({"test": "frozen_lake_learns", "seed": int(sys.argv[1]), "maps": 64,
                  "sft_success": sft[success], "rl_success": rl[success], "gain_points": round(100 * gain, 2),
                  "sft_valid": rounded(sft, "action_is_valid"), "rl_valid": rounded(rl, "action_is_valid"),
                  "sft_effective": rounded(sft, "action_is_effective"), "rl_effective": rounded(rl, "action_is_effective"),
                  "wall_s": wall}))
# RL must not have broken the answer format (the SFT start may still write some invalid answers).
assert rl["val/env/FrozenLake/action_is_valid"] > 0.9, rl
assert gain >= 0.08, f"RL - SFT = {100 * gain:.1f} points < 8"
assert wall <= 240, f"the test took {wall} s, more than the issue's 4 minutes"
PY
