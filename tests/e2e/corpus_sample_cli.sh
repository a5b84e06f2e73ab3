#!/usr/bin/env bash
# E2E: configs from ROLL's own example corpus that `roll validate` accepts get past worker
# start and through one step on CPU, scaled down with overrides only (tests/e2e/corpus_sample.py:
# a tiny model of the file's family, two-sample batches, devices packed onto a few CPU ranks,
# generated data for each reward domain; rlvr_config_async with its fp16 infer dtype, which
# rollcpp refuses, set to bf16; two LoRA configs). The corpus is read from ROLL_EXAMPLES_DIR (default: the
# roll-examples folder beside the checkout); without it the test is skipped.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
corpus="${ROLL_EXAMPLES_DIR:-$root/../shared/roll-examples}"
if [[ ! -d "$corpus/docs_examples" ]]; then
  echo "ROLL's example corpus not found at $corpus: skipped"
  exit 77
fi
work="$(mktemp -d /tmp/roll-e2e-corpus.XXXXXX)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/tests/e2e/corpus_sample.py" "$roll" "$corpus" "$work" \
  docs_examples/example_grpo \
  docs_examples/example_ppo \
  docs_examples/example_reinforce_pp \
  qwen2.5-7B-rlvr_megatron/rlvr_config \
  qwen2.5-7B-rlvr_megatron/rlvr_config_async@actor_infer.model_args.dtype=bf16 \
  qwen2.5-7B-rlvr_megatron/rlvr_config_8gpus_llm_as_judge \
  qwen2.5-7B-rlvr_megatron/rlvr_fsdp2_sp2 \
  qwen2.5-7B-rlvr-offpolicy/rlvr_config \
  qwen3-8B-rlvr_fsdp2/rlvr_config \
  qwen2.5-7B-sft_megatron/sft_config \
  qwen2.5-0.5B-agentic/agent_val_frozen_lake \
  qwen2.5-0.5B-agentic/agent_val_frozen_lake_async \
  qwen2.5-0.5B-agentic/agentic_val_sokoban_gigpo \
  qwen2.5-0.5B-agentic/agentic_val_sokoban_lora \
  qwen2.5-7B-rlvr_megatron/rlvr_lora_fsdp2
