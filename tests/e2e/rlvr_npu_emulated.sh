#!/usr/bin/env bash
# E2E: the seed's Example 2 (Qwen3-8B RLVR on a 16-NPU A3 node: train on 0-7 with DeepSpeed
# ZeRO-3, vLLM inference on 8-11, reference on 12-15, 8 CPU math_rule reward workers) under
# npu-emulated, scaled by overrides only (tiny model, small batch and lengths, our data files,
# 2 steps); devices, strategies and platform rules untouched. Workers must see
# ASCEND_RT_VISIBLE_DEVICES (checked in unit.runtime_cluster); here the run completes 2 steps.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-ex2.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$roll" data arithmetic --seed 2 --n 200 --split train --out train.jsonl >/dev/null
"$roll" data arithmetic --seed 2 --n 8 --split test --out test.jsonl >/dev/null
"$roll" model init --preset tiny --out tiny >/dev/null
"$roll" rlvr --config_path "$root/examples/ascend_examples" --config_name qwen3_8b_rlvr_deepspeed \
  --platform npu-emulated --devices-per-node 16 --quiet-workers pretrain=tiny reward_pretrain=tiny \
  rollout_batch_size=8 num_return_sequences_in_group=2 prompt_length=128 response_length=32 \
  'actor_train.data_args.file_name=[train.jsonl]' 'validation.data_args.file_name=[test.jsonl]' \
  max_steps=2 output_dir=./out track_with=jsonl > run.log 2>&1 || { tail -40 run.log; exit 1; }
grep -q "starting 4 clusters (24 worker processes)" run.log || { grep "starting" run.log; exit 1; }
grep -q "pipeline step 1 finished" run.log
grep -q "pipeline complete!" run.log
echo "seed Example 2 (npu-emulated): 2 steps ok"
