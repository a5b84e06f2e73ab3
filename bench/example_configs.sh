#!/usr/bin/env bash
# Step time of the CPU example configs (examples/cpu) under the placements and dtypes a user can
# choose, interleaved (A B C A B C ...) in one run on one machine: the examples' committed settings
# against fp32 with separate train and infer slots (what they used before) and the other mix.
# Prints one JSON line per run: config, variant, round, the mean and min wall time of its steps after
# the first (time/step_wall), and the mean busy share of each cluster.
#
#   bench/example_configs.sh BUILD_DIR [ROUNDS] [STEPS] [CONFIGS]   (CONFIGS: default
#   "rlvr_arithmetic agentic_frozen_lake"; rlvr_math_code also works)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
roll="$(realpath "$1/src/roll/cli/roll")"
rounds="${2:-2}"
steps="${3:-5}"
configs="${4:-rlvr_arithmetic agentic_frozen_lake}"
py=/usr/bin/python3
work="$(mktemp -d /tmp/roll-bench-examples.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$roll" model init --preset tiny --seed 1 --out output/models/tiny > /dev/null
mkdir -p data
"$roll" data arithmetic --seed 1 --n 2000 --split train --out data/arith_train.jsonl > /dev/null
"$roll" data arithmetic --seed 1 --n 64 --split test --out data/arith_test.jsonl > /dev/null
"$roll" data code --seed 1 --n 400 --split train --out data/code_train.jsonl > /dev/null
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
flags="$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16)$' | tr '\n' ' ')"

separate=('actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))')
colocated=('actor_train.device_mapping=list(range(0,2))' 'actor_infer.device_mapping=list(range(0,2))')
dtype() { echo "actor_train.model_args.dtype=$1" "actor_infer.model_args.dtype=$1"; }

run() {  # run CONFIG PIPELINE VARIANT ROUND OVERRIDES...
  local config="$1" pipeline="$2" variant="$3" round="$4"
  shift 4
  local out="out-$config-$variant-$round"
  "$roll" "$pipeline" --config_path "$root/examples/cpu" --config_name "$config" --quiet-workers \
    pretrain=output/models/tiny max_steps="$steps" save_steps=1000 eval_steps=0 output_dir="$out" \
    logging_dir="$out/logs" "$@" > "$out.log" 2>&1 || { tail -20 "$out.log"; exit 1; }
  $py - "$(find "$out" -name metrics.jsonl | head -1)" "$config" "$variant" "$round" "$cpu" "$flags" <<'PY'
import json, sys
rows = [json.loads(l)["metrics"] for l in open(sys.argv[1])][1:]  # the first step warms up
walls = [r["time/step_wall"] for r in rows]
busy = {k.split("/", 2)[2]: round(sum(r.get(k, 0) for r in rows) / len(rows), 3)
        for k in rows[0] if k.startswith("system/busy/")}
print(json.dumps({"bench": "example_configs", "config": sys.argv[2], "variant": sys.argv[3], "round": int(sys.argv[4]),
                  "steps": len(rows), "step_wall_mean_s": round(sum(walls) / len(walls), 3),
                  "step_wall_min_s": round(min(walls), 3), "busy": busy, "cpu": sys.argv[5], "flags": sys.argv[6].strip()}))
PY
}

for round in $(seq 1 "$rounds"); do
  for config in $configs; do
    pipeline=rlvr
    [[ $config == agentic_* ]] && pipeline=agentic
    # shellcheck disable=SC2046  # dtype prints two words on purpose
    run "$config" "$pipeline" fp32-separate "$round" $(dtype fp32) "${separate[@]}"
    # shellcheck disable=SC2046
    run "$config" "$pipeline" auto-separate "$round" $(dtype auto) "${separate[@]}"
    # shellcheck disable=SC2046
    run "$config" "$pipeline" fp32-colocated "$round" $(dtype fp32) "${colocated[@]}"
    # shellcheck disable=SC2046
    run "$config" "$pipeline" auto-colocated "$round" $(dtype auto) "${colocated[@]}"
  done
done
