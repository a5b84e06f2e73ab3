#!/usr/bin/env bash
# Long e2e (label `long`: run by hand or with the benchmarks, ~5 min on 2 cores): the seed's agentic
# Example 1 config under npu-emulated with only the issue's scaling overrides (tiny model, small
# batches and env fleets; devices 0-3 train / 4-7 infer+reference, DeepSpeed ZeRO-3 untouched), plus
# max_steps=2 and a jsonl tracker in a scratch folder, completes 2 steps.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-npu.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$roll" model init --preset tiny --out tiny >/dev/null
"$roll" agentic --config_path "$root/examples/ascend_examples" --config_name agentic_frozen_lake_npu \
  --platform npu-emulated --quiet-workers pretrain=tiny reward_pretrain=tiny \
  train_env_manager.num_env_groups=4 train_env_manager.group_size=4 'train_env_manager.num_groups_partition=[4]' \
  train_env_manager.max_env_num_per_worker=8 val_env_manager.num_env_groups=8 \
  'val_env_manager.num_groups_partition=[2,2,2,2]' val_env_manager.max_env_num_per_worker=8 \
  rollout_batch_size=16 val_batch_size=8 sequence_length=1024 actor_train.training_args.gradient_accumulation_steps=2 \
  max_steps=2 output_dir=./out track_with=jsonl > run.log 2>&1 || { tail -40 run.log; exit 1; }
grep -q "pipeline step 1 finished" run.log
grep -q "pipeline complete!" run.log
echo "npu-emulated agentic seed config: 2 steps ok"
