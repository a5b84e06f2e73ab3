#!/usr/bin/python3
"""One JSON line for a run of bench/rlvr_async.sh or bench/agentic_async.sh: the mean step wall
time after the first step and, against the same round's synchronous run on separate devices,
the speed-up beside the ideal overlap bound (generate + rest) / max(generate, rest) taken from
that run's own phase times.

    overlap_summary.py METRICS_JSONL BENCH VARIANT ROUND SYNC_FILE GENERATE_KEY [NAME=METRIC ...]

VARIANT sync-separate writes SYNC_FILE; the others read it when it exists. NAME=METRIC adds the
mean of METRIC as NAME. CPU model and flags come from /proc/cpuinfo.
"""
import json
import os
import sys

path, bench, variant, rnd, sync_file, gen_key = sys.argv[1:7]
extra = dict(a.split("=", 1) for a in sys.argv[7:])
rows = [json.loads(l)["metrics"] for l in open(path)][1:]  # the first step warms up
mean = lambda k: sum(r.get(k, 0.0) for r in rows) / len(rows)
cpuinfo = open("/proc/cpuinfo").read().splitlines()
cpu = next(l.split(":", 1)[1].strip() for l in cpuinfo if l.startswith("model name"))
flags = next(l.split(":", 1)[1].split() for l in cpuinfo if l.startswith("flags"))
wall = mean("time/step_wall")
out = {"bench": bench, "variant": variant, "round": int(rnd), "steps": len(rows),
       "step_wall_mean_s": round(wall, 3), "generate_s": round(mean(gen_key), 3),
       "overrides": os.environ.get("BENCH_OVERRIDES", ""), "cpu": cpu,
       "flags": " ".join(f for f in flags if f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16"))}
out.update({name: round(mean(metric), 3) for name, metric in extra.items()})
if variant == "sync-separate":
    gen = mean(gen_key)
    rest = wall - gen - mean("time/step_model_update")
    ideal = (gen + rest) / max(gen, rest)
    out.update(rest_s=round(rest, 3), ideal_speedup=round(ideal, 3))
    json.dump({"wall": wall, "ideal": ideal}, open(sync_file, "w"))
elif os.path.exists(sync_file):
    s = json.load(open(sync_file))
    out.update(speedup_vs_sync_separate=round(s["wall"] / wall, 3), ideal_speedup=round(s["ideal"], 3),
               share_of_ideal=round((s["wall"] / wall) / s["ideal"], 3))
print(json.dumps(out))
