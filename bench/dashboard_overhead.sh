#!/usr/bin/env bash
# What the dashboard costs a run (docs/dashboard.md, "Cost"): the RL phase of the FrozenLake learning
# job (examples/demo/frozen_lake_learn_rl.yaml, the e2e learning config) from a fresh model, with
# --dashboard-port 0 (off), with the dashboard on and nobody looking (idle), and on while a poller
# asks it what the open page asks (api/state every second, api/metrics every 2 s, api/logs every
# 3 s; the poller's own CPU counts against the run, as a browser on the same machine would),
# interleaved (the order rotating each round). Prints one JSON line per run (mean step wall time
# after the first step; CPU seconds of the driver and its workers) and a summary line with each
# variant's min and max and the ratios of the means.
#
#   bench/dashboard_overhead.sh BUILD_DIR [ROUNDS] [STEPS]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
roll="$(realpath "$1/src/roll/cli/roll")"
rounds="${2:-2}"
steps="${3:-8}"
work="$(mktemp -d /tmp/roll-bench-dashboard.XXXXXX)"
poller=
trap '[[ -n "$poller" ]] && kill "$poller" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
py=/usr/bin/python3
configs="$root/examples/demo"
"$roll" model init --preset tiny --hidden-size 128 --layers 4 --intermediate-size 512 --heads 8 --kv-heads 4 \
  --vocab 512 --rope-theta 100 --init-std 0.05 --seed 1 --out model > /dev/null 2>&1
port="$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cpu="$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"

run() {  # run VARIANT ROUND
  local variant="$1" round="$2" out="out-$1-$2" dash=0
  [[ "$variant" != off ]] && dash="$port"
  export ROLL_CLUSTER_DIR="$work/cluster"
  # The wrapper records the CPU seconds of the driver and its workers (reaped by the driver).
  $py -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
u = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write(str(u.ru_utime + u.ru_stime))
sys.exit(rc)' "$out.cpu" \
    "$roll" agentic --config_path "$configs" --config_name frozen_lake_learn_rl --quiet-workers --dashboard-port "$dash" \
    seed=8 pretrain=model max_steps="$steps" save_steps=1000 eval_steps=1000 output_dir="$out" logging_dir="$out/logs" \
    > "$out.log" 2>&1 &
  local pid=$!
  if [[ "$variant" == on ]]; then
    $py - "http://127.0.0.1:$port/" <<'PY' &
import sys, time, urllib.request
url, t = sys.argv[1], 0
while True:
    for path, every in (("api/state", 1), ("api/metrics?since=0", 2), ("api/logs?lines=15", 3)):
        if t % every == 0:
            try:
                urllib.request.urlopen(url + path, timeout=5).read()
            except OSError:
                pass  # not up yet, or gone
    time.sleep(1)
    t += 1
PY
    poller=$!
  fi
  wait "$pid" || { tail -20 "$out.log" >&2; exit 1; }
  if [[ -n "$poller" ]]; then kill "$poller"; wait "$poller" 2>/dev/null || true; poller=; fi
  $py - "$(find "$out" -name metrics.jsonl | head -1)" "$variant" "$round" "$cpu" "$(cat "$out.cpu")" <<'PY' | tee -a results.jsonl
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
walls = [r["metrics"]["time/step_wall"] for r in rows[1:]]
print(json.dumps({"bench": "dashboard_overhead", "variant": sys.argv[2], "round": int(sys.argv[3]),
                  "steps": len(walls), "step_wall_s": round(sum(walls) / len(walls), 4),
                  "run_cpu_s": round(float(sys.argv[5]), 2), "cpu": sys.argv[4]}))
PY
}

# The order rotates each round, so a drift of the machine does not fall on one variant.
variants=(off idle on)
for round in $(seq 1 "$rounds"); do
  for i in 0 1 2; do run "${variants[$(((i + round - 1) % 3))]}" "$round"; done
done
$py - results.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {v: [r["step_wall_s"] for r in rows if r["variant"] == v] for v in ("off", "idle", "on")}
mean = {v: sum(x) / len(x) for v, x in by.items()}
out = {"bench": "dashboard_overhead", "summary": True, "rounds": len(by["off"])}
for v in by:
    out[f"{v}_min_max_s"] = [min(by[v]), max(by[v])]
cpu = {v: [r["run_cpu_s"] for r in rows if r["variant"] == v] for v in ("off", "idle", "on")}
for v in cpu:
    out[f"{v}_run_cpu_min_max_s"] = [min(cpu[v]), max(cpu[v])]
for v in ("idle", "on"):
    out[f"{v}_over_off"] = round(mean[v] / mean["off"], 4)
    out[f"{v}_inside_off_range"] = min(by["off"]) <= mean[v] <= max(by["off"])
out["cpu"] = rows[0]["cpu"]
print(json.dumps(out))
PY
