#!/usr/bin/env bash
# E2E: `roll validate`'s memory plan against what runs use (docs/memory.md).
#   A  the tiny model, train and infer colocated (bf16 where the CPU has it): 3 RLVR steps; every
#      cluster's measured peak resident set within 25% of the plan;
#   B  the small model on separate slots, fp32, gradient checkpointing: the same;
#   C  a node of 1 GB overflows: the plan says so, and each piece of advice it prints loads back
#      into `roll validate` (the overrides are the plan's own output).
# Prompts are kept at the data's longest (prompt_length 28) and the tiny random models answer with
# the full response_length, so the runs reach the lengths the plan assumes.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-memory.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p data
py=/usr/bin/python3

"$roll" data arithmetic --seed 3 --n 300 --split train --out data/arith_train.jsonl >/dev/null
"$roll" data arithmetic --seed 3 --n 16 --split test --out data/arith_test.jsonl >/dev/null
"$roll" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null 2>&1
"$roll" model init --preset small --seed 5 --out output/models/small >/dev/null 2>&1

common=(--config_path "$root/examples/cpu" --config_name rlvr_arithmetic max_steps=3 prompt_length=28)

run() {  # name, overrides...
  local name="$1"; shift
  echo "== $name"
  "$roll" rlvr "${common[@]}" "$@" --quiet-workers output_dir="./out_$name" exp_name="$name" > "$name.log" 2>&1 \
    || { tail -30 "$name.log"; exit 1; }
  "$roll" validate "${common[@]}" "$@" --json > "$name.plan.json" 2> "$name.validate.log" \
    || { cat "$name.validate.log"; exit 1; }
  $py "$root/tests/e2e/memory_plan_compare.py" "$(find "out_$name" -name metrics.jsonl | head -1)" "$name.plan.json" 0.25
}

run a pretrain=output/models/tiny
run b pretrain=output/models/small 'actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))' \
  actor_train.model_args.disable_gradient_checkpointing=false actor_train.model_args.dtype=fp32 actor_infer.model_args.dtype=fp32

echo "== C: overflow and advice"
c=("${common[@]}" pretrain=output/models/small)
"$roll" validate "${c[@]}" -q --device-memory-gb 1 > c.out 2> c.err
grep -q "^memory: OVERFLOW" c.out || { cat c.out; exit 1; }
grep -q "warning: the memory plan overflows a device" c.err || { cat c.err; exit 1; }
"$roll" validate "${c[@]}" --device-memory-gb 1 --json > c.json
$py - c.json > c.advice <<'PY'
import json, sys
plan = json.load(open(sys.argv[1]))["memory"]
assert not plan["fits"] and plan["advice"], plan["advice"]
for a in plan["advice"]:
    print("\t".join(a["overrides"]))
PY
while IFS=$'\t' read -r -a overrides; do
  "$roll" validate "${c[@]}" "${overrides[@]}" --device-memory-gb 1 -q > /dev/null 2>&1 \
    || { echo "advice does not load back: ${overrides[*]}"; exit 1; }
done < c.advice
echo "memory plan e2e: ok"
