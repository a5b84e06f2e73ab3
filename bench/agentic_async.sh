#!/usr/bin/env bash
# Asynchronous agentic training beside synchronous (docs/agentic.md "Asynchronous training"): the
# RL phase of the FrozenLake learning job (examples/demo/frozen_lake_learn_rl.yaml, step-wise
# GiGPO) from one SFT warm start (scripts/lib/frozen_lake_learn.sh's first phases), with
# actor_train on slot 0 and actor_infer on slot 1 at async_generation_ratio 0, 1 and 2, and the
# config as committed (train on both slots, infer sharing slot 1; synchronous), interleaved, twice
# by default. Prints one JSON line per run: the mean step wall time after the first step, the sync
# run's own phase times (rollout; the rest) and the ideal overlap bound (rollout + rest) /
# max(rollout, rest), and for async runs the speed-up over the same round's separate sync run.
#
#   bench/agentic_async.sh BUILD_DIR [ROUNDS] [STEPS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
roll="$(realpath "$1/src/roll/cli/roll")"
rounds="${2:-2}"
steps="${3:-12}"
work="$(mktemp -d /tmp/roll-bench-agentic-async.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
configs="$root/examples/demo"
# The warm start, as scripts/lib/frozen_lake_learn.sh builds it for seed 1.
"$roll" model init --preset tiny --hidden-size 128 --layers 4 --intermediate-size 512 --heads 8 --kv-heads 4 \
  --vocab 512 --rope-theta 100 --init-std 0.05 --seed 1 --out model > /dev/null 2>&1
"$roll" data expert --config_path "$configs" --config_name frozen_lake_learn_rl --seed 11 --n 8000 --noise 0.1 \
  --out train.jsonl > /dev/null 2>&1
"$roll" sft --config_path "$configs" --config_name frozen_lake_learn_sft --quiet-workers seed=8 pretrain=model \
  output_dir=sft logging_dir=logs "sft_train.data_args.file_name=[train.jsonl]" \
  "validation.data_args.file_name=[train.jsonl]" eval_steps=1000 > sft.log 2>&1 || { tail -20 sft.log; exit 1; }
sft_ckpt="$(ls -d sft/sft_train/checkpoint-* | sort -t- -k2 -n | tail -1)"
separate=('actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))')

run() {  # run VARIANT ROUND OVERRIDES...
  local variant="$1" round="$2"
  shift 2
  local out="out-$variant-$round"
  "$roll" agentic --config_path "$configs" --config_name frozen_lake_learn_rl --quiet-workers seed=8 \
    pretrain="$sft_ckpt" max_steps="$steps" save_steps=1000 output_dir="$out" logging_dir="$out/logs" "$@" \
    > "$out.log" 2>&1 || { tail -20 "$out.log" >&2; exit 1; }
  BENCH_OVERRIDES="${extra[*]:-}" "$root/bench/overlap_summary.py" "$(find "$out" -name metrics.jsonl | head -1)" agentic_async \
    "$variant" "$round" "$work/sync-$round.json" time/step_rollout off_policy_ratio=scheduler/off_policy_ratio train_success=env/FrozenLake/success
}

for round in $(seq 1 "$rounds"); do
  run sync-separate "$round" "${separate[@]}"
  run async1-separate "$round" "${separate[@]}" async_generation_ratio=1
  run async2-separate "$round" "${separate[@]}" async_generation_ratio=2
  run sync-committed "$round"
done
