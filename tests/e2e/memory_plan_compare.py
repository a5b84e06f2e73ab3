"""The memory plan's gate (docs/memory.md): each cluster's predicted peak (`roll validate --json`, the
largest of its workers) against the measured peak resident set of the run (system/peak_rss_mb/<cluster>
in metrics.jsonl, the largest VmHWM of its workers), within a relative tolerance.

usage: memory_plan_compare.py METRICS_JSONL PLAN_JSON [TOLERANCE]"""
import json, sys
metrics_path, plan_path = sys.argv[1], sys.argv[2]
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 0.25
rows = [json.loads(l) for l in open(metrics_path)]
last = rows[-1]["metrics"]
plan = json.load(open(plan_path))["memory"]
pred = {}
phase = {}
for w in plan["workers"]:
    c = w["cluster"]
    if w["peak_bytes"] / 2**20 > pred.get(c, 0):
        pred[c] = w["peak_bytes"] / 2**20
        phase[c] = {k: round(v / 2**20) for k, v in w["phase_bytes"].items()}
bad = []
for key, measured in sorted(last.items()):
    if not key.startswith("system/peak_rss_mb/"):
        continue
    c = key.split("/", 2)[2]
    p = pred[c]
    err = p / measured - 1
    print(f"{c:20s} measured {measured:8.0f} MiB  predicted {p:8.0f} MiB  {100*err:+6.1f}%  phases {phase[c]}")
    if abs(err) > tol:
        bad.append(c)
print("within %d%%: %s" % (100 * tol, "all" if not bad else "NOT " + ", ".join(bad)))
sys.exit(1 if bad else 0)
