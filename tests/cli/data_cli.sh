#!/usr/bin/env bash
# Integration test: `roll data arithmetic|code` writes seeded, reproducible JSONL; bad options fail.
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
