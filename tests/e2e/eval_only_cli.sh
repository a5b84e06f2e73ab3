#!/usr/bin/env bash
# E2E: `roll agentic|rlvr --eval-only` (the learning demo's before/after evaluation): the workers
# start, the model at `pretrain` is validated once, the val metrics and their eval/ names are
# logged as step 0, nothing is trained or checkpointed. A small-vocabulary model (`--vocab`)
# keeps it quick. A config without validation is refused naming the key.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-eval.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cd "$work"

"$roll" model init --preset tiny --vocab 1024 --seed 5 --out output/models/tiny >/dev/null
"$roll" agentic --config_path "$root/examples/cpu" --config_name agentic_frozen_lake --quiet-workers --eval-only \
  pretrain=output/models/tiny output_dir=./agentic val_batch_size=8 val_env_manager.num_env_groups=8 \
  'val_env_manager.num_groups_partition=[8]' > agentic.log 2>&1 || { tail -40 agentic.log; exit 1; }
grep -q "evaluation complete!" agentic.log

mkdir -p data
"$roll" data arithmetic --seed 1 --n 64 --split train --out data/arith_train.jsonl 2>/dev/null
"$roll" data arithmetic --seed 1 --n 8 --split test --out data/arith_test.jsonl 2>/dev/null
"$roll" rlvr --config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers --eval-only \
  pretrain=output/models/tiny output_dir=./rlvr > rlvr.log 2>&1 || { tail -40 rlvr.log; exit 1; }
grep -q "evaluation complete!" rlvr.log

/usr/bin/python3 - <<'PY'
import glob, json, os
def rows(d):
    files = glob.glob(f"{d}/**/metrics.jsonl", recursive=True)
    assert len(files) == 1, files
    return [json.loads(l) for l in open(files[0])]
a = rows("agentic")
assert [r["step"] for r in a] == [0], a
m = a[0]["metrics"]
assert m["eval/FrozenLake/success"] == m["val/env/FrozenLake/success"], m
assert 0.0 <= m["eval/FrozenLake/success"] <= 1.0
assert m["eval/FrozenLake/score"] == m["val/FrozenLake/score/mean"], m
assert not any(k.startswith("actor/") for k in m), sorted(m)  # nothing trained
r = rows("rlvr")
assert [x["step"] for x in r] == [0], r
m = r[0]["metrics"]
assert m["eval/arithmetic/accuracy"] == m["val_correct/arithmetic/mean"], sorted(m)
for d in ("agentic", "rlvr"):
    assert not glob.glob(f"{d}/**/checkpoint-*", recursive=True), d
print("eval-only e2e: ok")
PY

# No validation to run: a clear error naming the key.
set +e
"$roll" rlvr --config_path "$root/examples/cpu" --config_name rlvr_arithmetic --quiet-workers --eval-only \
  pretrain=output/models/tiny output_dir=./none '~validation' > none.log 2>&1
rc=$?
set -e
[ "$rc" != 0 ] || { echo "eval-only without validation succeeded"; exit 1; }
grep -q "validation" none.log || { tail -20 none.log; exit 1; }
