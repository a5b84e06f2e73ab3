#!/usr/bin/env bash
# E2E: resuming `roll rlvr` at the edges (the arithmetic CPU config, 8 prompts, 4 a step: an epoch
# is 2 steps), against one uninterrupted run A of 4 steps with a checkpoint after steps 1-3 (ROLL
# saves none at step 0):
#   S0     resume_from_checkpoint=true where no checkpoint exists yet (a run stopped in step 0):
#          it starts from step 0, with a warning, and steps 0-3 equal A's;
#   EPOCH  from checkpoint-1, exactly at the end of the first epoch, into another output_dir (the
#          clusters' checkpoints are read beside the named one): steps 2-3 (the second epoch's
#          prompts, in its own shuffle) equal A's, none skipped or repeated;
#   LAST   from checkpoint-3, after the last step: nothing is left to run, the run says so and
#          ends cleanly without training;
#   OTHER  another exp_name resuming A's checkpoint: refused at once, naming both;
#   CHANGED  a changed seed and learning rate: refused at once naming both keys and values; a
#          raised max_steps (a key a resume may change, docs/compat.md "Resume"): step 4 runs.
# A run resumes its own experiment, so the resumed runs are exp_name a too.
# "Equal": every non-timing metric within 1e-6 (same_step_metrics.py).
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-resume.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"
mkdir -p data
py=/usr/bin/python3

"$roll" data arithmetic --seed 3 --n 8 --split train --out data/arith_train.jsonl >/dev/null 2>&1
"$roll" data arithmetic --seed 3 --n 4 --split test --out data/arith_test.jsonl >/dev/null 2>&1
"$roll" model init --preset tiny --vocab 1024 --seed 5 --out output/models/tiny >/dev/null 2>&1

common=(--config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers
        pretrain=output/models/tiny generate_opt_level=0 rollout_batch_size=4 num_return_sequences_in_group=2
        max_steps=4 save_steps=1 eval_steps=0
        actor_train.training_args.learning_rate=0.01 actor_train.training_args.lr_scheduler_type=constant)

metrics_of() { find "$1" -name metrics.jsonl | head -1; }  # metrics_of OUTPUT_DIR

echo "== A: 4 steps, a checkpoint after each"
"$roll" rlvr "${common[@]}" output_dir=./out exp_name=a > a.log 2>&1 || { tail -40 a.log; exit 1; }
a_metrics="$(metrics_of ./out)"
for s in 1 2 3; do test -f "out/pipeline/checkpoint-$s/pipeline/worker_state_pipeline.json"; done
$py - "$a_metrics" <<'PY'
import json, sys
# The prompts drawn: 4 a step from 8 rows, so steps 0-1 are epoch 0 and steps 2-3 epoch 1.
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1, 2, 3], [r["step"] for r in rows]
PY

echo "== S0: resume_from_checkpoint=true with no checkpoint yet"
"$roll" rlvr "${common[@]}" output_dir=./out0 exp_name=s0 resume_from_checkpoint=true > s0.log 2>&1 \
  || { tail -40 s0.log; exit 1; }
grep -q "no complete checkpoint under ./out0/pipeline yet; starting from step 0" s0.log || { grep -i resum s0.log; exit 1; }
for s in 0 1 2 3; do
  $py "$root/tests/e2e/same_step_metrics.py" "$a_metrics" "$(metrics_of ./out0)" "$s" token/prompt_length/mean
done

echo "== EPOCH: resume from checkpoint-1, at the end of the first epoch"
"$roll" rlvr "${common[@]}" output_dir=./out_epoch exp_name=a resume_from_checkpoint=./out/pipeline/checkpoint-1 \
  > epoch.log 2>&1 || { tail -40 epoch.log; exit 1; }
test -f out_epoch/pipeline/checkpoint-3/pipeline/worker_state_pipeline.json  # written under its own output_dir
grep -q "continuing at step 2" epoch.log || { grep -i resum epoch.log; exit 1; }
for s in 2 3; do
  $py "$root/tests/e2e/same_step_metrics.py" "$a_metrics" "$(metrics_of ./out_epoch)" "$s" token/prompt_length/mean
done

echo "== LAST: resume from checkpoint-3 with max_steps=4"
"$roll" rlvr "${common[@]}" output_dir=./out exp_name=a resume_from_checkpoint=./out/pipeline/checkpoint-3 > last.log 2>&1 \
  || { tail -40 last.log; exit 1; }
grep -q "continuing at step 4" last.log || { grep -i resum last.log; exit 1; }
grep -q "nothing left to run" last.log || { echo "no word that every step had run"; tail -20 last.log; exit 1; }
if grep -q "pipeline step 4 start" last.log; then echo "a step past max_steps ran"; exit 1; fi

echo "== OTHER: another exp_name resuming a's checkpoint is refused before any worker starts"
if "$roll" rlvr "${common[@]}" output_dir=./out exp_name=other resume_from_checkpoint=./out/pipeline/checkpoint-2 \
  > other.log 2>&1; then
  echo "exp_name 'other' resumed exp_name 'a''s checkpoint"; exit 1
fi
grep -q "was written by exp_name 'a', and this run's exp_name is 'other'" other.log || { tail -5 other.log; exit 1; }
if grep -q "starting .* clusters" other.log; then echo "workers started before the refusal"; exit 1; fi
echo "== CHANGED: a config that differs from the checkpoint's run"
if "$roll" rlvr "${common[@]}" output_dir=./out exp_name=a resume_from_checkpoint=./out/pipeline/checkpoint-2 \
  seed=7 actor_train.training_args.learning_rate=0.02 > changed.log 2>&1; then
  echo "a changed seed and learning rate were resumed"; exit 1
fi
grep -q "seed: 42 -> 7" changed.log || { tail -8 changed.log; exit 1; }
grep -q "actor_train.training_args.learning_rate: 0.01 -> 0.02" changed.log || { tail -8 changed.log; exit 1; }
if grep -q "starting .* clusters" changed.log; then echo "workers started before the refusal"; exit 1; fi
"$roll" rlvr "${common[@]}" output_dir=./out exp_name=a resume_from_checkpoint=./out/pipeline/checkpoint-3 max_steps=5 \
  > more.log 2>&1 || { tail -40 more.log; exit 1; }
grep -q "resume: max_steps changed from 4 to 5" more.log || { grep -i resum more.log; exit 1; }
grep -q "pipeline step 4 start" more.log || { echo "step 4 did not run"; tail -20 more.log; exit 1; }
echo "resume edges: ok"
