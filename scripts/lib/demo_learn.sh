# The learning part of scripts/demo (docs/demo.md): SFT warm start -> greedy eval ->
# RL -> greedy eval, for FrozenLake (roll agentic, GiGPO) and arithmetic (roll rlvr, GRPO), in $demo.
# Sourced by scripts/demo; needs $rollabs (the roll binary), $demo (an empty folder), $ROLL_ROOT.
# Writes $demo/phases.tsv: phase, wall seconds; $demo/results.tsv: task, metric, before, after, steps.

demo_examples="$ROLL_ROOT/examples/demo"

# run_phase NAME CMD...: runs CMD with its output in $demo/NAME.log, records the wall time.
run_phase() {
  local name="$1" start
  shift
  start="$(now)"
  log "$name: $*"
  "$@" >"$demo/$name.log" 2>&1 || { tail -30 "$demo/$name.log"; die "$name failed (log: $demo/$name.log)"; }
  printf '%s\t%s\n' "$name" "$(elapsed "$start")" >>"$demo/phases.tsv"
}

# eval_metric DIR KEY: the value of KEY in the (newest) metrics.jsonl under the eval run's DIR.
eval_metric() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import glob, json, sys
files = sorted(glob.glob(f"{sys.argv[1]}/**/metrics.jsonl", recursive=True))
if not files:
    sys.exit(f"no metrics.jsonl under {sys.argv[1]}")
value = json.loads(open(files[-1]).readline())["metrics"][sys.argv[2]]
print(f"{value:.4f}")
PY
}

# last_checkpoint DIR: the highest-numbered checkpoint-N folder in DIR.
last_checkpoint() {
  local dir="$1"
  find "$dir" -maxdepth 1 -type d -name 'checkpoint-*' | awk -F- '{ print $NF "\t" $0 }' | sort -n | tail -1 | cut -f2
}

# rl_between_evals P PIPELINE CONFIG SFT_DIR RL_DIR TASK METRIC: greedy eval of SFT_DIR's last
# checkpoint, RL from it (`roll PIPELINE` with examples/demo/CONFIG: GRPO or GiGPO), greedy eval of
# RL_DIR's last checkpoint; phases P-eval-sft, P-rl, P-eval-rl; one line of results.tsv.
rl_between_evals() {
  local p="$1" pipeline="$2" config="$3" sft_dir="$4" rl_dir="$5" task="$6" metric="$7" sft rl
  local cfg=(--config_path "$demo_examples" --config_name "$config" --quiet-workers)
  sft="$(last_checkpoint "$sft_dir")"
  run_phase "$p-eval-sft" "$rollabs" "$pipeline" "${cfg[@]}" --eval-only pretrain="$sft" output_dir="output/demo/$p-eval-sft"
  run_phase "$p-rl" "$rollabs" "$pipeline" "${cfg[@]}" pretrain="$sft"
  rl="$(last_checkpoint "$rl_dir")"
  run_phase "$p-eval-rl" "$rollabs" "$pipeline" "${cfg[@]}" --eval-only pretrain="$rl" output_dir="output/demo/$p-eval-rl"
  printf '%s\t%s\t%s\t%s\t%s\n' "$task" "$metric" "$(eval_metric "output/demo/$p-eval-sft" "$metric")" \
    "$(eval_metric "output/demo/$p-eval-rl" "$metric")" "${rl##*-}" >>"$demo/results.tsv"
}

demo_frozen_lake() {
  local cfg=(--config_path "$demo_examples")
  # 8 heads of 16 and RoPE base 100: docs/journal.md (FrozenLake, step-wise) says why.
  run_phase fl-init "$rollabs" model init --preset tiny --hidden-size 128 --layers 4 --intermediate-size 512 \
    --heads 8 --kv-heads 4 --vocab 512 --rope-theta 100 --seed 1 --out output/demo/models/frozen-lake-init
  run_phase fl-data sh -c "'$rollabs' data expert ${cfg[*]} --config_name frozen_lake_gigpo --seed 1 --n 8000 \
      --noise 0.1 --out output/demo/data/frozen_lake_sft_train.jsonl &&
    '$rollabs' data expert ${cfg[*]} --config_name frozen_lake_gigpo --seed 2 --n 64 --noise 0 \
      --out output/demo/data/frozen_lake_sft_val.jsonl"
  run_phase fl-sft "$rollabs" sft "${cfg[@]}" --config_name frozen_lake_sft --quiet-workers
  rl_between_evals fl agentic frozen_lake_gigpo output/demo/frozen-lake-sft/sft_train \
    output/demo/frozen-lake-gigpo/actor_train FrozenLake eval/FrozenLake/success
}

demo_arithmetic() {
  local cfg=(--config_path "$demo_examples")
  run_phase ar-init "$rollabs" model init --preset tiny --hidden-size 128 --layers 4 --intermediate-size 512 \
    --heads 4 --kv-heads 2 --vocab 1024 --seed 1 --out output/demo/models/arithmetic-init
  local d=output/demo/data
  run_phase ar-data sh -c "'$rollabs' data arithmetic --digits 1 --seed 1 --n 246 --split train --out $d/arithmetic_train.jsonl &&
    '$rollabs' data arithmetic --digits 1 --seed 1 --n 54 --split test --out $d/arithmetic_test.jsonl &&
    '$rollabs' data arithmetic --digits 1 --seed 1 --n 246 --split train --with-answer --out $d/arithmetic_sft_train.jsonl &&
    '$rollabs' data arithmetic --digits 1 --seed 1 --n 54 --split test --with-answer --out $d/arithmetic_sft_test.jsonl"
  run_phase ar-sft "$rollabs" sft "${cfg[@]}" --config_name arithmetic_sft --quiet-workers
  rl_between_evals ar rlvr arithmetic_grpo output/demo/arithmetic-sft/sft_train \
    output/demo/arithmetic-grpo/actor_train arithmetic eval/arithmetic/accuracy
}

demo_print_results() {
  /usr/bin/python3 - "$demo" <<'PY'
import sys
demo = sys.argv[1]
print(f"\n{'task':<12} {'metric':<30} {'SFT (before)':>12} {'RL (after)':>12} {'RL steps':>9}")
for line in open(f"{demo}/results.tsv"):
    task, metric, before, after, steps = line.rstrip("\n").split("\t")
    print(f"{task:<12} {metric:<30} {float(before):>12.3f} {float(after):>12.3f} {int(steps) + 1:>9}")
print(f"\n{'phase':<16} {'wall s':>8}")
total = 0.0
for line in open(f"{demo}/phases.tsv"):
    name, secs = line.split("\t")
    total += float(secs)
    print(f"{name:<16} {float(secs):>8.1f}")
print(f"{'total':<16} {total:>8.1f}")
PY
}
