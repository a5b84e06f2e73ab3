# Checks the SFT, DPO and distillation e2e tests share; source after defining `py` and `fail`.

# check_checkpoints OUT ROLE STEP...: each step's checkpoint of ROLE (weights, config, manifest and
# both data-parallel ranks' training state) and the pipeline's state.
check_checkpoints() {
  local out="$1" role="$2" step f; shift 2
  for step in "$@"; do
    for f in model.safetensors config.json manifest.json train_state/rank-00000-of-00002.safetensors \
             train_state/rank-00001-of-00002.safetensors; do
      [ -f "$out/$role/checkpoint-$step/$f" ] || fail "checkpoint-$step lacks $f"
    done
    [ -f "$out/pipeline/checkpoint-$step/pipeline/worker_state_pipeline.json" ] || fail "pipeline state of step $step"
  done
}

# same_losses FIRST.jsonl RESUMED.jsonl KEY STEP...: the resumed run's KEY at each STEP equals the
# first run's bit for bit (same machine, rows and shapes after the resume: the same fp32 sums).
same_losses() {
  "$py" - "$@" <<'PY' || fail "resumed losses differ"
import json, sys
first_path, resumed_path, key, steps = sys.argv[1], sys.argv[2], sys.argv[3], [int(s) for s in sys.argv[4:]]
def losses(path):
    return {json.loads(l)["step"]: json.loads(l)["metrics"][key] for l in open(path)}
first, resumed = losses(first_path), losses(resumed_path)
for step in steps:
    assert resumed[step] == first[step], (step, resumed[step], first[step])
PY
}
