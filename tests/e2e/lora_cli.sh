#!/usr/bin/env bash
# E2E: LoRA (model_args.lora_target) through the CLI.
#   A  `roll rlvr` on the arithmetic CPU config (actor_train and actor_infer colocated: the
#      shared-memory sync) with adapters on q/v/up (rank 8) and a reference (use_kl_loss, no
#      reference cluster: actor_train with its adapters off), fp32, 3 steps with an entropy bonus so
#      that a random model has a gradient, old log-probs from the first pass (so that the trainer
#      reports its agreement with the engine): the KL to the base grows from 0, the engine's log-probs
#      match the trainer's after every adapter sync, and checkpoint-2 holds a PEFT adapter and no
#      full model; the two train ranks shard the adapters (ZeRO-3). A also trains the tied
#      embedding and LM head whole (additional_target: PEFT's modules_to_save), which the engine
#      takes from each sync into an untied head. Then the same on separate devices (one train rank,
#      the broadcast sync), adapters only.
#   B  `roll lora merge` of that checkpoint; evaluating the merged model and the adapter directory
#      itself gives the same validation metrics.
#   C  `roll sft` with all-linear adapters writes a PEFT checkpoint too.
set -euo pipefail
roll="$(realpath "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-lora.XXXXXX)"
trap '[[ -n "${ROLL_KEEP:-}" ]] || rm -rf "$work"' EXIT
cd "$work"
py=/usr/bin/python3

mkdir -p data
"$roll" data arithmetic --seed 3 --n 64 --split train --out data/arith_train.jsonl >/dev/null 2>&1
"$roll" data arithmetic --seed 3 --n 8 --split test --out data/arith_test.jsonl >/dev/null 2>&1
"$roll" model init --preset tiny --vocab 1024 --seed 5 --out output/models/tiny >/dev/null
lora=(+actor_train.model_args.lora_target=q_proj,v_proj,up_proj +actor_train.model_args.lora_rank=8
      +actor_infer.model_args.lora_target=q_proj,v_proj,up_proj +actor_infer.model_args.lora_rank=8
      actor_train.model_args.dtype=fp32 actor_infer.model_args.dtype=fp32)
common=(--config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers
        pretrain=output/models/tiny rollout_batch_size=4 num_return_sequences_in_group=2)
train=(max_steps=3 save_steps=2 eval_steps=0 use_kl_loss=true kl_loss_coef=0.01 entropy_loss_coef=0.1
       actor_train.training_args.learning_rate=5e-3 actor_train.training_args.lr_scheduler_type=constant)

check_run() {  # check_run METRICS CHECKPOINT [SAVED_MODULES,...]
  $py - "$1" "$2" "${3:-}" <<'PY'
import json, struct, sys
saved = [m for m in sys.argv[3].split(",") if m]
rows = [json.loads(l)["metrics"] for l in open(sys.argv[1])]
assert len(rows) == 3, len(rows)
kl = [m["actor/kl_loss"] for m in rows]
# Adapters start as a no-op (B = 0): the policy starts at the base, then training moves it away.
assert kl[0] < 1e-6 and kl[-1] > 1e-6, kl
# After each sync the engine samples with base + scale * B A: its log-probs are the trainer's, to
# fp32 rounding (an engine without the adapters would be off by the KL above, ~1e-2 a token).
tik = [(m["actor/train_infer_ratio_token_min"], m["actor/train_infer_ratio_token_max"]) for m in rows]
assert all(1 - 1e-4 < lo <= hi < 1 + 1e-4 for lo, hi in tik), tik
cfg = json.load(open(sys.argv[2] + "/adapter_config.json"))
assert cfg["peft_type"] == "LORA" and cfg["r"] == 8 and cfg["lora_alpha"] == 16, cfg
assert sorted(cfg["target_modules"]) == ["q_proj", "up_proj", "v_proj"], cfg
with open(sys.argv[2] + "/adapter_model.safetensors", "rb") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    names = [k for k in json.loads(f.read(n)) if k != "__metadata__"]
assert (cfg["modules_to_save"] or []) == saved, cfg
assert len(names) == 2 * 3 * 2 + len(saved), names  # 2 layers x 3 modules x (A, B), the saved modules
assert all(k.startswith("base_model.model.model.layers.") or k[len("base_model.model."):-len(".weight")] in saved
           for k in names), names
print("KL to the base", [f"{x:.2e}" for x in kl], "train/infer token ratio", tik)
PY
}

echo "== A: 3 LoRA steps with a reference from the base, colocated, 2 ZeRO-3 ranks"
"$roll" rlvr "${common[@]}" "${lora[@]}" "${train[@]}" output_dir=./out exp_name=a \
  +actor_train.model_args.additional_target=embed_tokens,lm_head \
  +actor_train.strategy_args.strategy_config.zero_optimization.stage=3 > a.log 2>&1 \
  || { tail -40 a.log; exit 1; }
grep -q "LoRA: no reference cluster" a.log || { echo "no word that the reference comes from actor_train"; exit 1; }
grep -q "by shared memory (0 computing from it)" a.log || { grep "model update" a.log; exit 1; }
ckpt=out/actor_train/checkpoint-2
test -f "$ckpt/adapter_model.safetensors" && test -f "$ckpt/adapter_config.json" && test ! -e "$ckpt/model.safetensors"
check_run "$(find . -path "*/a/*" -name metrics.jsonl | head -1)" "$ckpt" model.embed_tokens,lm_head

echo "== A2: the same on separate devices"
"$roll" rlvr "${common[@]}" "${lora[@]}" "${train[@]}" output_dir=./out2 exp_name=a2 \
  'actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))' > a2.log 2>&1 \
  || { tail -40 a2.log; exit 1; }
check_run "$(find . -path "*/a2/*" -name metrics.jsonl | head -1)" out2/actor_train/checkpoint-2

echo "== B: merge, and evaluate merged and adapter directories"
"$roll" lora merge --adapter "$ckpt" --out merged > merge.log 2>&1 || { cat merge.log; exit 1; }
test -f merged/model.safetensors && test -f merged/tokenizer.json
for d in merged "$ckpt"; do
  name="$(basename "$d")"
  "$roll" rlvr "${common[@]}" --eval-only pretrain="$d" output_dir="./eval-$name" actor_infer.model_args.dtype=fp32 \
    > "eval-$name.log" 2>&1 || { tail -40 "eval-$name.log"; exit 1; }
done
$py - <<'PY'
import glob, json
def val(d):
    files = glob.glob(f"{d}/**/metrics.jsonl", recursive=True)
    assert len(files) == 1, files
    return json.loads(open(files[0]).readline())["metrics"]
a, b = val("eval-merged"), val("eval-checkpoint-2")
keys = [k for k in a if k.startswith(("eval/", "val"))]
assert keys and all(a[k] == b[k] for k in keys), {k: (a[k], b.get(k)) for k in keys if a[k] != b.get(k)}
print("B: merged and adapter directories evaluate alike:", len(keys), "val metrics")
PY

echo "== C: roll sft with all-linear adapters"
"$roll" data arithmetic --seed 1 --n 32 --split train --out data/arith.jsonl >/dev/null 2>&1
$py -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    print(json.dumps({"instruction": r["messages"][0]["content"], "output": "\\boxed{%s}" % r["ground_truth"]}))' \
  < data/arith.jsonl > data/sft.jsonl
"$roll" sft --config_path "$root/examples/cpu" --config_name sft_arithmetic --quiet-workers \
  pretrain=output/models/tiny output_dir=./sft max_steps=2 save_steps=2 \
  '+sft_train.model_args.lora_target=all-linear' '+sft_train.model_args.lora_rank=4' \
  'sft_train.data_args.file_name=[data/sft.jsonl]' 'validation.data_args.file_name=[data/sft.jsonl]' > sft.log 2>&1 || { tail -40 sft.log; exit 1; }
sft_ckpt="$(find sft -type d -name checkpoint-2 | head -1)"
test -n "$sft_ckpt" && test -f "$sft_ckpt/adapter_config.json" && test ! -e "$sft_ckpt/model.safetensors"
echo "lora e2e: ok"
