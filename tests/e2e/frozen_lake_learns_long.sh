#!/usr/bin/env bash
# E2E (long): RL post-training makes a small model better at FrozenLake, the main job of
# `scripts/demo`: scripts/lib/frozen_lake_learn.sh (expert SFT -> greedy success on 64 held-out
# maps -> step-wise GiGPO -> the same evaluation), then the bar the demo promises: RL - SFT >= 10
# points, final greedy success >= 0.60, RL kept the answers valid, at most 6 minutes.
# ROLL_LEARN_SEED (default 1) moves every seed at once; ROLL_LEARN_KEEP=DIR keeps the run there
# instead of a temporary directory; ROLL_LEARN_SFT_ARGS / ROLL_LEARN_RL_ARGS add overrides to the
# SFT / RL run, for experiments. Prints the run's JSON result line.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
log="$(mktemp /tmp/roll-e2e-learn-log.XXXXXX)"
if [[ -n "${ROLL_LEARN_KEEP:-}" ]]; then
  work="$ROLL_LEARN_KEEP"; trap 'rm -f "$log"' EXIT
else
  work="$(mktemp -d /tmp/roll-e2e-learn.XXXXXX)"; trap 'rm -rf "$work" "$log"' EXIT
fi
# The run's lines go to the terminal as they come; its last line is the JSON result.
"$root/scripts/lib/frozen_lake_learn.sh" "$1" "$work" 2>&1 | tee "$log"
result="$(tail -n 1 "$log")"
/usr/bin/python3 - "$result" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
gain = r["rl_success"] - r["sft_success"]
# RL must not have broken the answer format (the SFT start may still write some invalid answers).
assert r["rl_valid"] > 0.9, r
assert gain >= 0.10 - 1e-9, f"RL - SFT = {100 * gain:.1f} points < 10"
assert r["rl_success"] >= 0.60 - 1e-9, f"final greedy success {r['rl_success']:.3f} < 0.60"
assert r["wall_s"] <= 360, f"the run took {r['wall_s']} s, more than 6 minutes"
PY
