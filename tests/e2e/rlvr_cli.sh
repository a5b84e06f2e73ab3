#!/usr/bin/env bash
# E2E: `roll rlvr` with real worker processes on the math + code CPU config:
#   A  separate train/infer devices, 4 steps, checkpoints at 2 and 3, the metrics of docs/pipelines.md;
#   B  resume from checkpoint-2 (as exp_name a, whose checkpoint it is): step 3's non-timing metrics equal A's within 1e-6 (actor/train_infer_*: 1e-4);
#   C  train and infer colocated on the same devices (shared-memory weight sync), 2 steps;
#   D  the arithmetic config at generate_opt_level 1 (streaming, additional prompts) with a query
#      filter and DAPO's overlong penalty, 2 steps: scheduler/query_filter_count, the per-domain
#      scheduler counts and the penalty against the response lengths;
#   E  a query filter that drops every prompt of a 12-row domain (the tiny model scores 0): the
#      step fails after one pass over the rows with the error naming the filter key.
#   F  the batch-level train-infer correction (old log-probs recomputed, IS weights and a token
#      filter): 2 steps report actor/train_infer_* and actor/is_weight_clipfrac.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-rlvr.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p data
py=/usr/bin/python3

"$roll" data arithmetic --seed 3 --n 300 --split train --out data/arith_train.jsonl >/dev/null
"$roll" data code --seed 3 --n 100 --split train --out data/code_train.jsonl >/dev/null
"$roll" data arithmetic --seed 3 --n 12 --split train --out data/arith_small.jsonl >/dev/null
"$roll" data arithmetic --seed 3 --n 8 --split test --out data/arith_test.jsonl >/dev/null
"$roll" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null

common=(--config_path "$root/examples/cpu" --config_name rlvr_math_code --quiet-workers
        pretrain=output/models/tiny generate_opt_level=0 rollout_batch_size=4 num_return_sequences_in_group=2
        actor_train.training_args.weight_decay=0.5 actor_train.training_args.learning_rate=0.01)
# A and B: train and infer on separate slots (the config colocates them; C runs that)
separate=('actor_train.device_mapping=list(range(0,1))' 'actor_infer.device_mapping=list(range(1,2))')

echo "== A: 4 steps, separate devices"
"$roll" rlvr "${common[@]}" "${separate[@]}" output_dir=./out exp_name=a > a.log 2>&1 || { tail -40 a.log; exit 1; }
a_metrics="$(find . -path "*/a/*" -name metrics.jsonl | head -1)"
[[ -f "$a_metrics" ]] || { echo "no metrics.jsonl for run A"; find . -name metrics.jsonl; exit 1; }
test -f out/pipeline/checkpoint-2/pipeline/worker_state_pipeline.json
test -f out/actor_train/checkpoint-2/manifest.json
grep -q "model update: 0 infer rank(s) by broadcast, 1 by shared memory (0 computing from it)" a.log

$py - "$a_metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1, 2, 3], [r["step"] for r in rows]
need = ["time/step_generate", "time/step_train", "critic/score/mean", "math_rule/critic/advantage_clip_frac",
        "actor/pg_loss", "actor_train/grad_norm", "token/response_length/mean", "system/tps"]
for r in rows:
    missing = [k for k in need if k not in r["metrics"]]
    assert not missing, (r["step"], missing)
for s in (0, 2):
    assert "val_correct/arithmetic/mean" in rows[s]["metrics"], rows[s]["metrics"].keys()
# No reference and no recomputed old policy: there is no KL to report (it read 10, the k3 clamp
# against zero log-probs, before).
for r in rows:
    assert r["metrics"]["actor/kl_loss"] == 0.0, (r["step"], r["metrics"]["actor/kl_loss"])
# batch_balance before the actor's train step: the balanced per-rank token sums never spread wider
# than the unbalanced blocks' (one rank here: both are the batch's token count).
for r in rows:
    g = {k.rsplit("/", 1)[1]: v for k, v in r["metrics"].items() if k.startswith("global_seqlen/actor_train/")}
    assert set(g) >= {"min", "max", "minmax_diff", "balanced_min", "balanced_max", "mean"}, (r["step"], g)
    assert g["min"] <= g["balanced_min"] <= g["balanced_max"] <= g["max"], (r["step"], g)
# The step profile (docs/tracking.md, "Step profile"): the phases and the overhead add up to the step's wall time, and
# every cluster's busy share is a share.
for r in rows:
    m = r["metrics"]
    phases = ["time/step_model_update", "time/val_step", "time/step_generate", "time/ref_log_probs_values",
              "time/compute_advantage", "time/step_train", "time/step_checkpoint", "time/step_overhead"]
    total = sum(m.get(k, 0.0) for k in phases)
    assert abs(total - m["time/step_wall"]) <= 1e-6 * max(1.0, m["time/step_wall"]), (r["step"], total, m["time/step_wall"])
    for c in ("actor_train", "actor_infer", "reward-math_rule"):
        assert 0.0 <= m["system/busy/" + c] <= 1.0, (r["step"], c, m.get("system/busy/" + c))
    assert m["system/busy/actor_train"] > 0.0, r["step"]
print("A: metrics ok")
PY
grep -Eq "pipeline step 1 finished \([0-9.]+ s: .*train [0-9.]+ \([0-9]+%\).*overhead .*; busy .*actor_train [0-9]+%" a.log \
  || { echo "no step profile line in a.log"; grep "finished" a.log; exit 1; }

echo "== B: resume from checkpoint-2"
"$roll" rlvr "${common[@]}" "${separate[@]}" output_dir=./out exp_name=a resume_from_checkpoint=./out/pipeline/checkpoint-2 > b.log 2>&1 \
  || { tail -40 b.log; exit 1; }
b_metrics="$(find . -path '*/a/*' -name metrics.jsonl ! -path "$a_metrics" | head -1)"
grep -q "continuing at step 3" b.log
$py "$root/tests/e2e/same_step_metrics.py" "$a_metrics" "$b_metrics" 3

echo "== C: the config's colocated train and infer, dynamic batching in training and in the old log-probs, 2 steps"
"$roll" rlvr "${common[@]}" output_dir=./outc exp_name=c max_steps=2 save_steps=10 \
  enable_old_logprobs_recompute=true actor_train.use_dynamic_batching_in_train=true \
  actor_train.max_tokens_per_microbatch_in_train=448 actor_train.use_dynamic_batching_in_infer=true \
  actor_train.max_tokens_per_microbatch_in_infer=448 > c.log 2>&1 \
  || { tail -40 c.log; exit 1; }
grep -q "model update: 0 infer rank(s) by broadcast, 2 by shared memory (2 computing from it)" c.log
c_metrics="$(find . -path "*/c/*" -name metrics.jsonl | head -1)"
$py - "$c_metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    m = r["metrics"]
    for call in ("train_step", "compute_log_probs"):
        p = "dynamic_batching/actor_train/%s/" % call
        # Summed over the 2 ranks: the real tokens of the batch, and no more tokens run than before.
        assert m[p + "valid_tokens"] > 0, (call, m.get(p + "valid_tokens"))
        assert m[p + "actual_tokens"] <= m[p + "actual_tokens_origin"], (call, m)
print("C: dynamic batching metrics ok")
PY

streaming=(--config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers
           pretrain=output/models/tiny generate_opt_level=1 rollout_batch_size=4 num_return_sequences_in_group=2
           max_steps=2 save_steps=10 eval_steps=10 response_length=16
           rewards.math_rule.query_filter_config.type=mean_filter)

echo "== D: generate_opt_level 1 with a query filter, additional prompts and the overlong penalty, 2 steps"
"$roll" rlvr "${streaming[@]}" output_dir=./outd exp_name=d is_use_additional_prompts=true \
  max_additional_running_prompts=2 rewards.math_rule.query_filter_config.filter_args.threshold_up=0.5 \
  overlong_reward.enable=true overlong_reward.buffer_len=16 overlong_reward.penalty_factor=0.5 > d.log 2>&1 \
  || { tail -40 d.log; exit 1; }
grep -q "query filter mean_filter(threshold_down=-1, threshold_up=0.5)" d.log
d_metrics="$(find . -path "*/d/*" -name metrics.jsonl | head -1)"
$py - "$d_metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1], [r["step"] for r in rows]
for r in rows:
    m = r["metrics"]
    # The tiny random model scores 0, so no prompt reaches the upper threshold: nothing is filtered,
    # 4 prompts are collected, and at most 2 additional ones ran beside them.
    assert m["scheduler/query_filter_count"] == 0, m
    assert m["math_rule/scheduler/collect_query_count"] == 4, m
    assert 4 <= m["math_rule/scheduler/query_use_count"] <= 4 + 2 + 2, m
    assert m["math_rule/scheduler/aborted_query_count"] == m["math_rule/scheduler/query_use_count"] - 4, m
    assert m["system/batch_size"] == 8, m
    # DAPO's penalty with the buffer as long as the 16-token budget: 0.5 * clamp((16 - 16 - L) / 16,
    # -1, 0) = -L / 32 per response, so the mean is the mean length / 32 (fp32 sums of 8 values).
    want = -m["token/response_length/mean"] / 32
    assert abs(m["math_rule/critic/overlong_penalty_mean"] - want) <= 1e-5, (m["math_rule/critic/overlong_penalty_mean"], want)
    if m["token/response_length/min"] > 0:
        assert m["math_rule/critic/overlong_penalized_ratio"] == 1.0, m
print("D: opt level 1 and the overlong penalty ok")
PY

echo "== E: a filter no prompt passes"
if "$roll" rlvr "${streaming[@]}" output_dir=./oute exp_name=e max_steps=1 \
     'actor_train.data_args.file_name=[data/arith_small.jsonl]' \
     rewards.math_rule.query_filter_config.filter_args.threshold_down=0 > e.log 2>&1; then
  echo "E: the run should have failed"; tail -20 e.log; exit 1
fi
grep -q "only 0 of 4 prompts passed the query filter rewards.math_rule.query_filter_config" e.log \
  || { tail -20 e.log; exit 1; }
grep -q "after 12 prompts drawn in the step" e.log || { tail -20 e.log; exit 1; }
echo "== F: the batch-level train-infer correction"
"$roll" rlvr "${common[@]}" "${separate[@]}" output_dir=./outf exp_name=f max_steps=2 save_steps=10 eval_steps=0 \
  enable_old_logprobs_recompute=true train_infer_correction.is_weight.enabled=true \
  actor_train.model_args.dtype=fp32 actor_infer.model_args.dtype=fp32 \
  '+train_infer_correction.filters=[{enabled: true, agg_type: token}]' > f.log 2>&1 || { tail -40 f.log; exit 1; }
$py - "$(find . -path "*/f/*" -name metrics.jsonl | head -1)" <<'PY'
import json, sys
rows = [json.loads(l)["metrics"] for l in open(sys.argv[1])]
assert len(rows) == 2, len(rows)
for m in rows:
    # fp32 engine and trainer on the same weights: ratios within fp32 rounding of 1, nothing clipped or filtered.
    assert abs(m["actor/train_infer_ratio_token_mean"] - 1) < 1e-3, m["actor/train_infer_ratio_token_mean"]
    assert m["actor/is_weight_clipfrac"] <= 0.05 and m["actor/train_infer_token_ratio_mask_mean"] >= 0.95, m
print("F: train-infer correction ok")
PY
echo "rlvr e2e: ok"
