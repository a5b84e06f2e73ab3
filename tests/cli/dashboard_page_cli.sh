#!/usr/bin/env bash
# Integration test: the live run dashboard page (src/roll/monitor/dashboard_page.html) against a mock of
# the driver's JSON API (tests/cli/lib/dashboard_mock.py), opened in headless Chromium by
# tests/e2e/lib/dashboard_check.py. The page lists every worker, shows the finished steps advancing, draws
# the pipeline's default charts, shows the watchdog's stall, puts no server string in as HTML and logs no
# console error; against an API that answers HTTP 500 and broken JSON it says so in #error.
# The roll argument is not used: the page is tested on its own, the C++ server by the e2e tests.
set -euo pipefail
fail() { echo "FAIL: $*"; exit 1; }
py=/usr/bin/python3  # Debian's python3 (the one scripts/setup installs)
page=src/roll/monitor/dashboard_page.html
check=tests/e2e/lib/dashboard_check.py
[ -f "$page" ] || fail "run from the repository root (no $page)"

command -v chromium >/dev/null 2>&1 ||
  fail "chromium is not installed: this test opens the dashboard in headless Chromium (scripts/setup installs Debian's chromium)"

out=$(mktemp -d)
mock_pid=
cleanup() {
  if [ -n "$mock_pid" ]; then kill "$mock_pid" 2>/dev/null || true; wait "$mock_pid" 2>/dev/null || true; fi
  rm -rf "$out"
}
trap cleanup EXIT

# The page is self-contained: no external URL (the driver may run where nothing outside is reachable).
! grep -qiE 'https?://|src=|@import' "$page" || fail "$page loads something from elsewhere: $(grep -inE 'https?://|src=|@import' "$page")"
[ "$(wc -c <"$page")" -lt 26000 ] || fail "$page is $(wc -c <"$page") bytes (keep it under ~25 KB)"

# start_mock [--broken]: starts the mock on a free port; sets mock_pid and url.
start_mock() {
  rm -f "$out/port"
  "$py" tests/cli/lib/dashboard_mock.py "$page" "$out/port" "$@" 2>"$out/mock.err" &
  mock_pid=$!
  for _ in $(seq 50); do [ -s "$out/port" ] && break; sleep 0.1; done
  [ -s "$out/port" ] || fail "the mock server did not start: $(cat "$out/mock.err")"
  url="http://127.0.0.1:$(cat "$out/port")/"
}
stop_mock() { kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true; mock_pid=; }

# check NAME: runs the checker on $url into $out/NAME.json within what is left of 55 s for the script.
check() {
  local left=$((55 - SECONDS))
  [ "$left" -gt 5 ] || fail "out of time before the $1 check"
  timeout "$left" "$py" "$check" "$url" --wait-ms 4000 >"$out/$1.json" 2>"$out/$1.err" ||
    fail "dashboard_check.py ($1): $(cat "$out/$1.err")"
}

start_mock
check first
check second
"$py" - "$out/first.json" "$out/second.json" <<'EOF' || fail "the dashboard against the mock API (the checker's JSON is above)"
import json, sys
first, second = (json.load(open(p)) for p in sys.argv[1:3])
workers = ["actor_train-0", "actor_train-1", "actor_infer-0", "reference-0"]
ok = True
def expect(cond, what, shown):
    global ok
    if not cond:
        ok = False
        print(f"expected {what}; the page shows {json.dumps(shown)}")
for d in (first, second):
    expect(d["workers"] == workers, f"the workers {workers}", d["workers"])
    expect(d["log_workers"] == workers, f"a log pane per worker {workers}", d["log_workers"])
    expect(d["console_errors"] == [], "no console error (nor server text put in as HTML)", d["console_errors"])
    expect(d["page_error"] == "", "an empty #error", d["page_error"])
    expect(d["stalls"] == 1, "the one stall row", d["stalls"])
    expect(d["hung_envs"] == 1, "the one hung env row", d["hung_envs"])
    expect(d["max_steps"] == 40 and d["step"] is not None, "#step like 'step N / 40'", d["step_text"])
    # agentic defaults: training success (not val/), score, pg loss, step wall time
    expect([c["metric"] for c in d["charts"]] ==
           ["env/FrozenLake/success", "critic/score/mean", "actor/pg_loss", "time/step_wall"],
           "the agentic default charts", d["charts"])
    expect(any((c["points"] or 0) >= 2 for c in d["charts"]), "a chart with 2 points or more", d["charts"])
if first["step"] is not None and second["step"] is not None:
    expect(second["step"] > first["step"] or second["step"] == 40, "the step to advance between the checks",
           [first["step_text"], second["step_text"]])
if not ok:
    print(json.dumps(second, indent=1))
sys.exit(0 if ok else 1)
EOF
stop_mock

# The check can fail: an API that answers HTTP 500 (/api/state) and broken JSON (/api/metrics) must be
# shown to the user in #error, with no uncaught exception.
start_mock --broken
check broken
"$py" - "$out/broken.json" <<'EOF' || fail "the dashboard against a failing API"
import json, sys
d = json.load(open(sys.argv[1]))
problems = []
if "api/state: HTTP 500" not in d["page_error"]:
    problems.append("#error does not report the HTTP 500 of api/state")
if "api/metrics: the answer is not JSON" not in d["page_error"]:
    problems.append("#error does not report the broken JSON of api/metrics")
if d["console_errors"]:
    problems.append("console errors: " + json.dumps(d["console_errors"]))
if d["step"] is not None or d["workers"]:
    problems.append("the page shows a state it never got")
for p in problems:
    print(p)
if problems:
    print(json.dumps(d, indent=1))
sys.exit(1 if problems else 0)
EOF
echo "ok"
