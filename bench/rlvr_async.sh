#!/usr/bin/env bash
# Asynchronous RLVR beside synchronous (docs/pipelines.md "Asynchronous generation"): the CPU
# arithmetic config (examples/cpu/rlvr_arithmetic) with actor_train and actor_infer on separate
# slots at async_generation_ratio 0, 1 and 2, and the config as committed (synchronous, colocated on
# both slots), interleaved (sync async1 async2 colocated, twice by default) on one machine, same seed.
# Prints one JSON line per run: the mean step wall time after the first step, the sync run's own
# phase times (generate; log-probs + advantages + train), and for async runs the speed-up over the
# same round's separate sync run beside the ideal overlap bound (generate + rest) / max(generate, rest).
#
#   bench/rlvr_async.sh BUILD_DIR [ROUNDS] [STEPS] [OVERRIDE...]   (overrides for every run, e.g.
#   response_length=128 for a generation-heavier step)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
roll="$(realpath "$1/src/roll/cli/roll")"
rounds="${2:-2}"
steps="${3:-8}"
extra=("${@:4}")
work="$(mktemp -d /tmp/roll-bench-async.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$roll" model init --preset tiny --seed 1 --out output/models/tiny > /dev/null
mkdir -p data
"$roll" data arithmetic --seed 1 --n 2000 --split train --out data/arith_train.jsonl > /dev/null
"$roll" data arithmetic --seed 1 --n 64 --split test --out data/arith_test.jsonl > /dev/null
separate=('actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))')

run() {  # run VARIANT ROUND OVERRIDES... -> prints the JSON line
  local variant="$1" round="$2"
  shift 2
  local out="out-$variant-$round"
  "$roll" rlvr --config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers \
    pretrain=output/models/tiny max_steps="$steps" save_steps=1000 eval_steps=0 output_dir="$out" \
    logging_dir="$out/logs" "${extra[@]}" "$@" > "$out.log" 2>&1 || { tail -20 "$out.log" >&2; exit 1; }
  BENCH_OVERRIDES="${extra[*]:-}" "$root/bench/overlap_summary.py" "$(find "$out" -name metrics.jsonl | head -1)" rlvr_async \
    "$variant" "$round" "$work/sync-$round.json" time/step_generate off_policy_ratio=math_rule/scheduler/off_policy_ratio
}

for round in $(seq 1 "$rounds"); do
  run sync-separate "$round" "${separate[@]}"
  run async1-separate "$round" "${separate[@]}" async_generation_ratio=1
  run async2-separate "$round" "${separate[@]}" async_generation_ratio=2
  run sync-colocated "$round"
done
