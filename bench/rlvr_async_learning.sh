#!/usr/bin/env bash
# Does asynchronous generation learn as well as synchronous? The demo's arithmetic GRPO
# (examples/demo/arithmetic_grpo.yaml: 31 steps from the SFT warm start, greedy accuracy on the 54
# held-out problems at steps 0, 10, 20, 30), actor_train and actor_infer on separate slots, at
# async_generation_ratio 0 and 1 for each seed (interleaved: sync, async, next seed). Prints one
# JSON line per run (accuracy before and after, the gain, the mean step wall time after the first
# step), then a summary line: the mean gains and their ratio (async / sync).
#
#   bench/rlvr_async_learning.sh BUILD_DIR [SEEDS]   (default "1 2 3")
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
roll="$(realpath "$1/src/roll/cli/roll")"
seeds="${2:-1 2 3}"
py=/usr/bin/python3
work="$(mktemp -d /tmp/roll-bench-async-learn.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
flags="$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_bf16|amx_bf16)$' | tr '\n' ' ')"
cfg=(--config_path "$root/examples/demo")
d=output/demo/data
mkdir -p "$d"
# The warm start, as scripts/demo --learn builds it (scripts/lib/demo_learn.sh, demo_arithmetic).
"$roll" model init --preset tiny --hidden-size 128 --layers 4 --intermediate-size 512 --heads 4 --kv-heads 2 \
  --vocab 1024 --seed 1 --out output/demo/models/arithmetic-init > /dev/null
"$roll" data arithmetic --digits 1 --seed 1 --n 246 --split train --out $d/arithmetic_train.jsonl > /dev/null
"$roll" data arithmetic --digits 1 --seed 1 --n 54 --split test --out $d/arithmetic_test.jsonl > /dev/null
"$roll" data arithmetic --digits 1 --seed 1 --n 246 --split train --with-answer --out $d/arithmetic_sft_train.jsonl > /dev/null
"$roll" data arithmetic --digits 1 --seed 1 --n 54 --split test --with-answer --out $d/arithmetic_sft_test.jsonl > /dev/null
"$roll" sft "${cfg[@]}" --config_name arithmetic_sft --quiet-workers > sft.log 2>&1 || { tail -20 sft.log; exit 1; }

for seed in $seeds; do
  for ratio in 0 1; do
    out="out-$seed-$ratio"
    "$roll" rlvr "${cfg[@]}" --config_name arithmetic_grpo --quiet-workers seed="$seed" async_generation_ratio="$ratio" \
      output_dir="$out" logging_dir="$out/logs" save_steps=1000 > "$out.log" 2>&1 || { tail -20 "$out.log"; exit 1; }
    $py - "$(find "$out" -name metrics.jsonl | head -1)" "$seed" "$ratio" "$cpu" "$flags" <<'PY' | tee -a runs.jsonl
import json, sys
path, seed, ratio, cpu, flags = sys.argv[1:6]
rows = {json.loads(l)["step"]: json.loads(l)["metrics"] for l in open(path)}
acc = {s: m["val_correct/arithmetic/mean"] for s, m in rows.items() if "val_correct/arithmetic/mean" in m}
first, last = min(acc), max(acc)
walls = [m["time/step_wall"] for s, m in sorted(rows.items()) if s > 0]
print(json.dumps({"bench": "rlvr_async_learning", "seed": int(seed), "async_generation_ratio": float(ratio),
                  "acc_before": acc[first], "acc_after": acc[last], "gain": round(acc[last] - acc[first], 4),
                  "eval_steps": sorted(acc), "step_wall_mean_s": round(sum(walls) / len(walls), 3),
                  "cpu": cpu, "flags": flags.strip()}))
PY
  done
done
$py - runs.jsonl <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
gain = {r: [x["gain"] for x in runs if x["async_generation_ratio"] == r] for r in (0.0, 1.0)}
mean = {r: sum(v) / len(v) for r, v in gain.items()}
print(json.dumps({"bench": "rlvr_async_learning", "summary": True, "mean_gain_sync": round(mean[0.0], 4),
                  "mean_gain_async1": round(mean[1.0], 4),
                  "async_over_sync": round(mean[1.0] / mean[0.0], 3) if mean[0.0] else None}))
PY
