#!/usr/bin/env bash
# E2E: the run dashboard, `roll status` and the hang watchdog during a 3-step `roll agentic` run on the
# CPU FrozenLake config (docs/dashboard.md).
#   1  After step 0: headless Chromium (tests/e2e/lib/dashboard_check.py) sees every worker of the
#      placement (named by the worker log files the workers wrote), a chart with points, a log pane
#      per worker, no console error; /api/state, /api/metrics and /api/logs answer.
#   2  After step 1 the actor_train worker is stopped (SIGSTOP). With --watchdog-min-s 2 the driver
#      reports it (name, pid, state T) on /api/state and in its log within the bound; `roll status`
#      lists the run and its workers; `roll status --stacks --worker` prints the infer worker's
#      threads with function names. The page, opened again, shows the later step and the stall
#      (the screenshot is docs/dashboard.png's source when ROLL_DASHBOARD_SCREENSHOT=PATH is set).
#   3  SIGCONT: the run finishes, and its `roll status` record is gone.
set -euo pipefail
roll="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d /tmp/roll-e2e-dashboard.XXXXXX)"
run_pid=
stopped=
cleanup() {
  [[ -n "$stopped" ]] && kill -CONT "$stopped" 2>/dev/null || true
  if [[ -n "$run_pid" ]]; then kill "$run_pid" 2>/dev/null || true; wait "$run_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
py=/usr/bin/python3
check="$root/tests/e2e/lib/dashboard_check.py"
fail() { echo "FAIL: $*"; [[ -f run.log ]] && tail -30 run.log; exit 1; }
command -v chromium >/dev/null 2>&1 || fail "chromium is not installed (scripts/setup installs Debian's chromium)"
export ROLL_CLUSTER_DIR="$work/cluster"  # `roll status` finds this run's record here

port="$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:$port/"
api() { $py -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$url$1"; }
wait_for() {  # wait_for PATTERN SECONDS: polls the driver's log every 50 ms
  local i
  for ((i = 0; i < $2 * 20; i++)); do
    grep -q "$1" run.log 2>/dev/null && return 0
    kill -0 "$run_pid" 2>/dev/null || fail "the run ended before '$1'"
    sleep 0.05
  done
  fail "no '$1' in the driver's log within $2 s"
}

"$roll" model init --preset tiny --seed 5 --out model >/dev/null
"$roll" agentic --config_path "$root/examples/cpu" --config_name agentic_frozen_lake --quiet-workers \
  --dashboard-port "$port" --watchdog-min-s 2 --watchdog-factor 2 \
  pretrain=model max_steps=3 save_steps=1000 eval_steps=1000 output_dir=out logging_dir=logs exp_name=dash \
  rollout_batch_size=8 train_env_manager.num_env_groups=2 'train_env_manager.num_groups_partition=[2]' \
  > run.log 2>&1 &
run_pid=$!

wait_for "dashboard at $url" 60
wait_for "pipeline step 0 finished" 300

echo "== 1: the page after step 0"
names="$(ls logs/dash | sed -n 's/^log_rank_\(.*\)_[0-9]*_[0-9]*\.log$/\1/p' | sort | paste -sd, -)"
[[ -n "$names" ]] || fail "no worker log files under logs/dash"
$py "$check" "$url" --wait-ms 4000 > check1.json || fail "dashboard_check.py could not read the page"
api api/state > state1.json
api "api/metrics?since=0" > metrics1.json
api "api/logs?lines=5" > logs1.json
$py - "$names" check1.json state1.json metrics1.json logs1.json <<'PY'
import json, sys
names = sorted(sys.argv[1].split(","))
page, state, metrics, logs = (json.load(open(f)) for f in sys.argv[2:6])
assert sorted(page["workers"]) == names, (page["workers"], names)
assert sorted(page["log_workers"]) == names, (page["log_workers"], names)
assert page["console_errors"] == [] and page["page_error"] == "", page
assert page["max_steps"] == 3 and page["step"] >= 1, page["step_text"]
assert any((c["points"] or 0) >= 1 for c in page["charts"]), page["charts"]
assert sorted(w["name"] for w in state["workers"]) == names, state["workers"]
for w in state["workers"]:
    assert w["pid"] > 0 and w["alive"], w
    assert w["rss_mb"] is not None and w["rss_mb"] > 1, w
assert state["run"]["pipeline"] == "agentic" and state["run"]["exp_name"] == "dash", state["run"]
assert metrics["rows"] and metrics["rows"][0]["step"] == 0 and "critic/score/mean" in metrics["rows"][0]["metrics"]
assert all(len(w["lines"]) >= 1 for w in logs["workers"]), logs
print("1: page ok:", page["step_text"], "workers", len(names), "charts", len(page["charts"]))
PY

echo "== 2: a stopped actor_train worker"
pick() { $py -c 'import json, sys
s = json.load(open(sys.argv[1]))
print(next(w[sys.argv[3]] for w in s["workers"] if w["cluster"] == sys.argv[2]))' state1.json "$@"; }
train_pid="$(pick actor_train pid)"
train_name="$(pick actor_train name)"
infer_name="$(pick actor_infer name)"
# Stopped as step 2 starts (its rollout runs long before actor_train's first call of the step).
wait_for "pipeline step 1 finished" 300
stopped="$train_pid"
kill -STOP "$stopped"
for ((i = 0; i < 300; i++)); do
  api api/state > state2.json
  $py -c 'import json, sys
sys.exit(0 if any(r["pid"] == int(sys.argv[2]) and not r["answered"] for r in json.load(open(sys.argv[1]))["stalls"]) else 1)' \
    state2.json "$stopped" && break
  kill -0 "$run_pid" 2>/dev/null || fail "the run ended while a worker was stopped"
  sleep 0.2
done
$py - "$stopped" "$train_name" state2.json <<'PY'
import json, sys
pid, name, state = int(sys.argv[1]), sys.argv[2], json.load(open(sys.argv[3]))
# (Its earlier calls may have been reported too under this test's tight bound, answered: not those.)
mine = [r for r in state["stalls"] if r["pid"] == pid and not r["answered"]]
assert mine, f"no watchdog report of pid {pid} within 60 s of the stop: {state['stalls']}"
r = mine[0]
assert r["cluster"] == "actor_train" and name in r["worker"], r
assert r["process_state"].startswith("T"), r
assert r["running_s"] >= r["bound_s"] > 0, r
print(f"2: watchdog: {r['worker']} in {r['method']} for {r['running_s']:.1f} s (bound {r['bound_s']:.1f} s), state {r['process_state']}")
PY
grep -q "watchdog: $train_name .*does not answer: process state T" run.log || fail "the driver's log does not report $train_name"

"$roll" status > status.out 2>&1 || { cat status.out; fail "roll status"; }
grep -q "Run $run_pid (agentic dash): running, step 2 / 3" status.out || { cat status.out; fail "roll status: the run"; }
grep -q "$train_name .*actor_train" status.out || { cat status.out; fail "roll status: the worker table"; }
grep -q "watchdog: .*$train_name" status.out || { cat status.out; fail "roll status: the stall"; }
"$roll" status --stacks --worker "$infer_name" > stacks.out 2>&1 || { cat stacks.out; fail "roll status --stacks"; }
grep -q "^== $infer_name" stacks.out && grep -qE '#[0-9]+ +0x[0-9a-f]+ (roll::|zmq::|std::)' stacks.out \
  || { head -40 stacks.out; fail "roll status --stacks: the infer worker's named frames"; }
! grep -q "^== $train_name" stacks.out || fail "--worker: only $infer_name"

shot=(); [[ -n "${ROLL_DASHBOARD_SCREENSHOT:-}" ]] && shot=(--screenshot "$ROLL_DASHBOARD_SCREENSHOT")
$py "$check" "$url" --wait-ms 4000 "${shot[@]}" > check2.json || fail "dashboard_check.py could not read the page"
$py - check1.json check2.json <<'PY'
import json, sys
first, second = (json.load(open(f)) for f in sys.argv[1:3])
assert second["step"] > first["step"] or first["step"] == 2, (first["step_text"], second["step_text"])
assert second["stalls"] >= 1, second
assert second["console_errors"] == [] and second["page_error"] == "", second
print("2: page again:", second["step_text"], "stalls", second["stalls"])
PY

echo "== 3: resumed, the run finishes"
kill -CONT "$stopped"
stopped=
wait "$run_pid" || { run_pid=; fail "the run failed after SIGCONT"; }
run_pid=
grep -q "pipeline complete!" run.log || fail "no 'pipeline complete!'"
[[ -z "$(ls "$ROLL_CLUSTER_DIR/runs" 2>/dev/null)" ]] || fail "the run record is left: $(ls "$ROLL_CLUSTER_DIR/runs")"
! "$roll" status > status3.out 2>&1 || fail "roll status after the run: $(cat status3.out)"
echo "ok"
