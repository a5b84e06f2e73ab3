#!/usr/bin/env bash
# E2E (short chaos): two SIGKILLs in the later steps of a 3-step RLVR math + code run (0.45-0.8 of
# the uninterrupted run's wall time, after its checkpoint-1 as a rule; start-up and the workers'
# shutdown take the rest, and a kill once the driver is stopping its workers is not counted): the
# math verifier helper (replaced: the run finishes with the uninterrupted run's
# metrics) and actor_infer (the run ends within seconds naming it, leaves no process and no
# half-written checkpoint, and resumes from its newest checkpoint to the uninterrupted run's
# metrics). tests/e2e/chaos.py does the work; chaos_long.sh is the 50-kill variant over every
# process kind at any moment.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-chaos.XXXXXX)"
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/tests/e2e/chaos.py" "$roll" "$work" --kills 2 --seed 7 --scenarios rlvr \
  --kinds math_verifier,actor_infer --window 0.45,0.8
