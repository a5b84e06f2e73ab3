#!/usr/bin/env bash
# The FrozenLake learning run shared by `scripts/demo` (its main job) and the e2e learning test
# (tests/e2e/frozen_lake_learns_long.sh):
#   model init (1.1M qwen2, vocab 512, init std 0.05) -> BFS expert data (8000 episodes, noise 0.1)
#   -> `roll sft` (examples/demo/frozen_lake_learn_sft.yaml) -> greedy success on 64 held-out maps
#   -> `roll agentic` step-wise GiGPO (examples/demo/frozen_lake_learn_rl.yaml) -> the same greedy
#   evaluation of the last RL checkpoint.
# Prints one line per phase and, last, one JSON line:
#   {"test": "frozen_lake_learns", "seed", "maps", "sft_success", "rl_success", "gain_points",
#    "sft_valid", "rl_valid", "sft_effective", "rl_effective", "wall_s", "rl_run"}
#
#   scripts/lib/frozen_lake_learn.sh ROLL WORKDIR
#
# Environment: ROLL_LEARN_SEED (default 1) moves every seed at once (model S, expert data 10+S,
#   held-out maps 20+S, pipelines 7+S); ROLL_LEARN_SFT_ARGS / ROLL_LEARN_RL_ARGS add overrides to
#   the SFT / RL run. WORKDIR is emptied first.
set -euo pipefail
roll="$(realpath "$1")"  # absolute: the script works in WORKDIR
work="$2"
root="$(cd "$(dirname "$0")/../.." && pwd)"
seed="${ROLL_LEARN_SEED:-1}"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
py=/usr/bin/python3
configs="$root/examples/demo"
t0=$SECONDS
phase() { echo "== $1 ($((SECONDS - t0)) s)"; }
last_checkpoint() { ls -d "$1"/checkpoint-* | sort -t- -k2 -n | tail -1; }  # by step number, not by name

phase "model init and expert data, seed $seed"
"$roll" model init --preset tiny --hidden-size 128 --layers 4 --intermediate-size 512 --heads 8 --kv-heads 4 \
  --vocab 512 --rope-theta 100 --init-std 0.05 --seed "$seed" --out model >/dev/null 2>&1
expert=(data expert --config_path "$configs" --config_name frozen_lake_learn_rl)
"$roll" "${expert[@]}" --seed $((seed + 10)) --n 8000 --noise 0.1 --out train.jsonl 2>&1 >/dev/null  # its summary line
"$roll" "${expert[@]}" --seed $((seed + 20)) --n 64 --noise 0 --out val.jsonl 2>&1 >/dev/null

phase "SFT"
# shellcheck disable=SC2086  # the override lists are lists of words
"$roll" sft --config_path "$configs" --config_name frozen_lake_learn_sft --quiet-workers seed=$((7 + seed)) \
  pretrain=model output_dir=sft logging_dir=logs "sft_train.data_args.file_name=[train.jsonl]" \
  "validation.data_args.file_name=[val.jsonl]" ${ROLL_LEARN_SFT_ARGS:-} > sft.log 2>&1 || { tail -30 sft.log; exit 1; }
sft_ckpt="$(last_checkpoint sft/sft_train)"
test -f "$sft_ckpt/config.json"

rl=(agentic --config_path "$configs" --config_name frozen_lake_learn_rl --quiet-workers seed=$((7 + seed)))
evaluate() {  # evaluate CHECKPOINT NAME: greedy success on the config's 64 held-out maps
  "$roll" "${rl[@]}" --eval-only pretrain="$1" output_dir="eval-$2" logging_dir="eval-$2/logs" > "eval-$2.log" 2>&1 \
    || { tail -30 "eval-$2.log"; exit 1; }
}
phase "greedy evaluation of the SFT checkpoint"
evaluate "$sft_ckpt" sft
phase "GiGPO"
# shellcheck disable=SC2086
"$roll" "${rl[@]}" pretrain="$sft_ckpt" output_dir=rl logging_dir=rl/logs ${ROLL_LEARN_RL_ARGS:-} > rl.log 2>&1 \
  || { tail -30 rl.log; exit 1; }
rl_ckpt="$(last_checkpoint rl/actor_train)"
phase "greedy evaluation of $rl_ckpt"
evaluate "$rl_ckpt" rl
phase "done"

$py - "$seed" $((SECONDS - t0)) "$work" <<'PY'
import glob, json, os, sys
def val_metrics(name):
    files = glob.glob(f"eval-{name}/**/metrics.jsonl", recursive=True)
    assert len(files) == 1, (name, files)
    return json.loads(open(files[0]).readline())["metrics"]
sft, rl = val_metrics("sft"), val_metrics("rl")
success = "eval/FrozenLake/success"
runs = glob.glob("rl/**/metrics.jsonl", recursive=True)  # the jsonl tracker writes under output_dir
def rounded(m, key): return round(m[f"val/env/FrozenLake/{key}"], 3)
print(json.dumps({"test": "frozen_lake_learns", "seed": int(sys.argv[1]), "maps": 64,
                  "sft_success": sft[success], "rl_success": rl[success],
                  "gain_points": round(100 * (rl[success] - sft[success]), 2),
                  "sft_valid": rounded(sft, "action_is_valid"), "rl_valid": rounded(rl, "action_is_valid"),
                  "sft_effective": rounded(sft, "action_is_effective"), "rl_effective": rounded(rl, "action_is_effective"),
                  "wall_s": int(sys.argv[2]),
                  "rl_run": os.path.join(sys.argv[3], os.path.dirname(runs[0])) if runs else None}))
PY
