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
py=/usr/bin/python3
work="$(mktemp -d /tmp/roll-bench-async.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$roll" model init --preset tiny --seed 1 --out output/models/tiny > /dev/null
mkdir -p data
"$roll" data arithmetic --seed 1 --n 2000 --split train --out data/arith_train.jsonl > /dev/null
"$roll" data arithmetic --seed 1 --n 64 --split test --out data/arith_test.jsonl > /dev/null
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
flags="$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16)$' | tr '\n' ' ')"
separate=('actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))')

run() {  # run VARIANT ROUND OVERRIDES... -> prints the JSON line
  local variant="$1" round="$2"
  shift 2
  local out="out-$variant-$round"
  "$roll" rlvr --config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers \
    pretrain=output/models/tiny max_steps="$steps" save_steps=1000 eval_steps=0 output_dir="$out" \
    logging_dir="$out/logs" "${extra[@]}" "$@" > "$out.log" 2>&1 || { tail -20 "$out.log" >&2; exit 1; }
  BENCH_OVERRIDES="${extra[*]}" $py - "$(find "$out" -name metrics.jsonl | head -1)" "$variant" "$round" "$cpu" "$flags" "$work/sync-$round.json" <<'PY'
import json, os, sys
path, variant, rnd, cpu, flags, sync_file = sys.argv[1:7]
rows = [json.loads(l)["metrics"] for l in open(path)][1:]  # the first step warms up
mean = lambda k: sum(r.get(k, 0.0) for r in rows) / len(rows)
wall = mean("time/step_wall")
out = {"bench": "rlvr_async", "variant": variant, "overrides": os.environ.get("BENCH_OVERRIDES", ""), "round": int(rnd), "steps": len(rows),
       "step_wall_mean_s": round(wall, 3), "cpu": cpu, "flags": flags.strip()}
if variant == "sync-separate":
    gen = mean("time/step_generate")
    rest = wall - gen - mean("time/step_model_update")
    out.update(generate_s=round(gen, 3), rest_s=round(rest, 3),
               ideal_speedup=round((gen + rest) / max(gen, rest), 3))
    json.dump({"wall": wall, "ideal": (gen + rest) / max(gen, rest)}, open(sync_file, "w"))
else:
    out["off_policy_ratio"] = round(mean("math_rule/scheduler/off_policy_ratio"), 3)
    if os.path.exists(sync_file):
        s = json.load(open(sync_file))
        out["speedup_vs_sync_separate"] = round(s["wall"] / wall, 3)
        out["ideal_speedup"] = round(s["ideal"], 3)
        out["share_of_ideal"] = round((s["wall"] / wall) / s["ideal"], 3)
print(json.dumps(out))
PY
}

for round in $(seq 1 "$rounds"); do
  run sync-separate "$round" "${separate[@]}"
  run async1-separate "$round" "${separate[@]}" async_generation_ratio=1
  run async2-separate "$round" "${separate[@]}" async_generation_ratio=2
  run sync-colocated "$round"
done
