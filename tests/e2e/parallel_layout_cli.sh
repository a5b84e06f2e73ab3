#!/usr/bin/env bash
# E2E: a Megatron tensor-parallel layout runs as data parallel with ROLL's global batch
# (docs/config.md "Parallel layouts"). The same RLVR step 0 on the arithmetic CPU config:
#   A  megatron_train, tensor_model_parallel_size 1, one train device, GA 4;
#   B  megatron_train, tensor_model_parallel_size 2, two train devices: two data-parallel ranks
#      (ZeRO-3), GA folded 4 -> 2, so the same 8 samples per optimizer step.
# Generation runs on the same third device in both with the same seed, so both train on the same
# samples; step 0's metrics must agree. The tiny random model scores 0 (advantages 0), so an
# entropy term gives the step a gradient to compare. Tolerance 1e-5 x max(1, |value|): B
# all-reduces gradients that A accumulates, fp32 sums of 8 samples' per-token terms of order 1e-2..1
# in another order (~1e-7 each); the gradient norm (~4e-4) is a small difference of such terms, so
# its error is bounded against their scale, not its own (seen: 3e-5 relative, 1.1e-8 absolute).
# Losses and advantages are computed on the same micro-batches. Per-rank layout metrics (global_seqlen/*, memory) and timings differ by design.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-layout.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p data
"$roll" data arithmetic --seed 3 --n 64 --split train --out data/arith_train.jsonl >/dev/null
"$roll" data arithmetic --seed 3 --n 4 --split test --out data/arith_test.jsonl >/dev/null
"$roll" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null

common=(--config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers
        pretrain=output/models/tiny num_gpus_per_node=3 max_steps=1 save_steps=10 eval_steps=10
        rollout_batch_size=4 num_return_sequences_in_group=2 entropy_loss_coef=0.1
        actor_train.strategy_args.strategy_name=megatron_train
        actor_train.training_args.per_device_train_batch_size=2
        actor_train.training_args.gradient_accumulation_steps=4
        'actor_infer.device_mapping=list(range(2,3))')

echo "== A: TP 1 on one device"
"$roll" rlvr "${common[@]}" output_dir=./a exp_name=a 'actor_train.device_mapping=list(range(0,1))' \
  'actor_train.strategy_args.strategy_config={tensor_model_parallel_size: 1}' > a.log 2>&1 || { tail -40 a.log; exit 1; }
echo "== B: TP 2 on two devices"
"$roll" rlvr "${common[@]}" output_dir=./b exp_name=b 'actor_train.device_mapping=list(range(0,2))' \
  'actor_train.strategy_args.strategy_config={tensor_model_parallel_size: 2}' > b.log 2>&1 || { tail -40 b.log; exit 1; }
grep -q "tensor_model_parallel_size = 2" b.log || { echo "B: no layout warning"; grep -i warn b.log | head; exit 1; }
grep -q "gradient_accumulation_steps 4 -> 2" b.log || { echo "B: GA not folded"; exit 1; }

/usr/bin/python3 - "$(find a -name metrics.jsonl | head -1)" "$(find b -name metrics.jsonl | head -1)" <<'PY'
import json, sys
a = {json.loads(l)["step"]: json.loads(l)["metrics"] for l in open(sys.argv[1])}[0]
b = {json.loads(l)["step"]: json.loads(l)["metrics"] for l in open(sys.argv[2])}[0]
skip = ("time/", "system/", "global_seqlen/", "memory/")
bad, compared = [], 0
for k, v in a.items():
    if k.startswith(skip) or "memory" in k or not isinstance(v, (int, float)) or isinstance(v, bool):
        continue
    w = b.get(k)
    compared += 1
    if w is None or not abs(v - w) <= 1e-5 * max(1.0, abs(v)):
        bad.append((k, v, w))
assert not bad, bad[:10]
assert a["actor_train/grad_norm"] > 0, a["actor_train/grad_norm"]
for k in ("actor/pg_loss", "actor_train/grad_norm", "critic/score/mean", "critic/advantages/mean"):
    assert k in a, k
print("TP 2 and TP 1: step 0 agrees on %d metrics (grad_norm %.9g vs %.9g)" % (compared, a["actor_train/grad_norm"], b["actor_train/grad_norm"]))
PY
