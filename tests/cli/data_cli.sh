#!/usr/bin/env bash
# Integration test: `roll data arithmetic|code|expert` writes seeded, reproducible JSONL; bad options fail.
set -euo pipefail
roll="$1"
fail() { echo "FAIL: $*"; exit 1; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT

"$roll" data arithmetic --seed 3 --n 50 --split train --digits 3 --out "$out/a1.jsonl" 2>/dev/null || fail "arithmetic"
"$roll" data arithmetic --seed 3 --n 50 --split train --digits 3 --out "$out/a2.jsonl" 2>/dev/null || fail "arithmetic again"
cmp -s "$out/a1.jsonl" "$out/a2.jsonl" || fail "same seed gave different rows"
[ "$(wc -l <"$out/a1.jsonl")" = 50 ] || fail "expected 50 rows"
grep -q '"domain":"math_rule"' "$out/a1.jsonl" || fail "arithmetic domain"
grep -q 'Put your final answer within \\\\boxed{}.' "$out/a1.jsonl" || fail "boxed instruction"

"$roll" data code --seed 3 --n 20 --split test --out "$out/c.jsonl" 2>/dev/null || fail "code"
[ "$(wc -l <"$out/c.jsonl")" = 20 ] || fail "expected 20 code rows"
grep -q '"case_type":"assert"' "$out/c.jsonl" || fail "code case_type"
grep -q '"domain":"code_sandbox"' "$out/c.jsonl" || fail "code domain"

# Expert conversations in an agentic config's env prompts (the demo's SFT data).
root="$(cd "$(dirname "$0")/../.." && pwd)"
"$roll" data expert --config_path "$root/examples/demo" --config_name frozen_lake_gigpo --seed 4 --n 30 --noise 0 \
  --out "$out/e1.jsonl" 2>"$out/e.txt" || fail "expert: $(cat "$out/e.txt")"
grep -q ': 30 FrozenLake episodes, 30 reach the goal' "$out/e.txt" || fail "noiseless expert: $(cat "$out/e.txt")"
# The demo's env is step-wise (StepEnvManager): a row per turn, each the turn's own prompt.
[ "$(grep -c '"step":0,' "$out/e1.jsonl")" = 30 ] || fail "expected 30 first turns"
[ "$(wc -l <"$out/e1.jsonl")" -gt 30 ] || fail "expected a row per turn"
grep -q '"content":"Turn 2:\\n' "$out/e1.jsonl" || fail "no second-turn prompt"
"$roll" data expert --config_path "$root/examples/demo" --config_name frozen_lake_gigpo --seed 4 --n 30 --noise 0 \
  --out "$out/e2.jsonl" 2>/dev/null || fail "expert again"
cmp -s "$out/e1.jsonl" "$out/e2.jsonl" || fail "same expert seed gave different rows"
grep -q '"role":"assistant","content":"<answer>\(Left\|Down\|Right\|Up\)</answer>"' "$out/e1.jsonl" || fail "answers"
grep -q '"role":"system","content":"You play FrozenLake."' "$out/e1.jsonl" || fail "the config's system prompt is not in the rows"
set +e
"$roll" data expert --config_path "$root/examples/demo" --config_name frozen_lake_gigpo --tag Nope --n 1 \
  --out "$out/x.jsonl" 2>"$out/err.txt"
rc=$?
set -e
[ "$rc" != 0 ] || fail "an unknown --tag was accepted"
grep -q 'custom_envs.Nope' "$out/err.txt" || fail "unknown tag error: $(cat "$out/err.txt")"

set +e
"$roll" data arithmetic --n 500 --digits 1 --out "$out/x.jsonl" 2>"$out/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "too many one-digit problems: exit $rc, expected 1"
grep -q 'distinct train problems' "$out/err.txt" || fail "error message: $(cat "$out/err.txt")"
set +e
"$roll" data code --n 1 --split dev --out "$out/x.jsonl" 2>/dev/null
rc=$?
set -e
[ "$rc" != 0 ] || fail "--split dev accepted"
echo "ok"
