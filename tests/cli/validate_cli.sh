#!/usr/bin/env bash
# Integration test: the real `roll validate` on the seed configs and on bad input.
set -euo pipefail
roll="$1"
cd "$(dirname "$0")/../.."
fail() { echo "FAIL: $*"; exit 1; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

# Seed Example 1 on 8 NPUs: train 0-3, infer 4-7, reference listed but not started.
"$roll" validate --config_path examples/ascend_examples --config_name agentic_frozen_lake_npu \
  --platform npu --devices-per-node 8 -q >"$out/a.txt" 2>"$out/a.err" || fail "seed agentic config rejected: $(cat "$out/a.err")"
grep -qE '^  actor_train +deepspeed_train +workers 4 +devices 0-3' "$out/a.txt" || fail "actor_train placement"
grep -qE '^  actor_infer +vllm +workers 4 +devices 4-7' "$out/a.txt" || fail "actor_infer placement"
grep -qE '^  reference .*devices 4-7 .*\[not started\]' "$out/a.txt" || fail "reference not marked as not started"
grep -q 'ASCEND_RT_VISIBLE_DEVICES=4' "$out/a.txt" || fail "visibility variable"

# Colocated on npu: refused, naming the overlapping ids; exit code 1.
set +e
"$roll" validate --config_path examples/ascend_examples --config_name agentic_frozen_lake_npu --platform npu \
  'actor_infer.device_mapping=list(range(0,4))' >"$out/b.txt" 2>"$out/b.err"
rc=$?
set -e
[ "$rc" = 1 ] || fail "colocated npu config: exit $rc, expected 1"
grep -q "share device ids 0-3" "$out/b.err" || fail "overlap not named: $(cat "$out/b.err")"

# Seed Example 2 on 16 NPUs with the max_model_len warning.
"$roll" validate --config_path examples/ascend_examples --config_name qwen3_8b_rlvr_deepspeed --platform npu \
  --devices-per-node 16 -q >"$out/c.txt" 2>"$out/c.err" || fail "seed rlvr config rejected"
grep -qE '^  reward-math_rule +cpu +workers 8' "$out/c.txt" || fail "math_rule workers"
grep -q 'max_model_len (8000) is below sequence_length (10240)' "$out/c.err" || fail "max_model_len warning"

# The resolved config is printed as YAML with derived values.
"$roll" validate --config_path examples/ascend_examples --config_name qwen3_8b_rlvr_deepspeed --platform npu \
  >"$out/d.txt" 2>/dev/null
grep -q '^sequence_length: 10240' "$out/d.txt" || fail "derived sequence_length not printed"
grep -q '^exp_name: "Qwen3-8B-RLVR-ppo"' "$out/d.txt" || fail "interpolated exp_name not printed"

# Usage errors exit non-zero (CLI11), config errors 1, a missing file names it.
set +e
"$roll" validate >/dev/null 2>&1; rc=$?
[ "$rc" != 0 ] || fail "missing --config_name accepted"
"$roll" validate --config_path examples --config_name nope >/dev/null 2>"$out/e.err"; rc=$?
set -e
[ "$rc" = 1 ] || fail "missing config exit $rc"
grep -q 'nope.yaml' "$out/e.err" || fail "missing config not named"
echo "validate_cli: 1 passed, 0 failed"
