#!/usr/bin/env bash
# E2E (long chaos): 50 SIGKILLs at random moments into RLVR (driver, actor_train, actor_infer,
# reference, both reward workers, the math verifier, the code sandbox) and agentic FrozenLake
# (driver, actor_train, actor_infer, env workers), a SIGSTOPped worker in each, and a full disk
# under output_dir (a 160 MB tmpfs, room for one checkpoint; root only). Checks as chaos_cli.sh (tests/e2e/chaos.py).
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-chaos-long.XXXXXX)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/tests/e2e/chaos.py" "$roll" "$work" --kills "${ROLL_CHAOS_KILLS:-50}" --seed 11 \
  --scenarios rlvr,agentic --stop --full-disk
