#!/usr/bin/python3
"""rollcpp's engine beside llama.cpp on the same machine, interleaved (bench/llama_cpp/compare.sh).

    compare.py LLAMA_BUILD_DIR GGUF_PY_DIR ROLL BENCH_ENGINE WORK_DIR [--rounds 2] [--threads 1,2]
               [--dtypes bf16,fp32] [--batches 1,8,64] [--out FILE.jsonl]

For each dtype: `roll model init --preset qwen2.5-0.5b-shape` and the same tensors written as GGUF
(write_gguf.py). Each round runs, per thread count, llama.cpp (llama-bench pp512; llama-batched-bench
32 prompt + 32 generated tokens at each batch size) then bench_engine (prefill 512; decode 32 + 31
at each batch size, the paged engine), so the two alternate A B A B. Prints one JSON line per
measurement and one per ratio (rollcpp / llama.cpp, min and max over the rounds), with the CPU's
model and flags.
"""
import argparse
import json
import os

from common import Results, cpu, ensure_model, run

p = argparse.ArgumentParser()
for a in ("llama_build", "gguf_py", "roll", "bench_engine", "work"):
    p.add_argument(a)
p.add_argument("--rounds", type=int, default=2)
p.add_argument("--threads", default="1,2")
p.add_argument("--dtypes", default="bf16,fp32")
p.add_argument("--batches", default="1,8,64")
p.add_argument("--out", default="")
o = p.parse_args()
threads = [int(t) for t in o.threads.split(",")]
batches = [int(b) for b in o.batches.split(",")]
results_file = Results(o.out)
emit = results_file.emit


def llama(gguf, t):
    rows = {}
    pp = run([os.path.join(o.llama_build, "bin", "llama-bench"), "-m", gguf, "-p", "512", "-n", "0", "-t", str(t),
              "-r", "2", "-o", "jsonl"])
    for line in pp.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("n_prompt") == 512 and r.get("n_gen") == 0:
                rows["prefill"] = r["avg_ts"]
    bb = run([os.path.join(o.llama_build, "bin", "llama-batched-bench"), "-m", gguf, "-c", str(64 * max(batches) + 64),
              "-b", "2048", "-ub", "512", "-npp", "32", "-ntg", "32", "-npl", ",".join(map(str, batches)), "-t", str(t),
              "--output-format", "jsonl"])
    for line in bb.splitlines():
        if line.startswith("{") and '"speed_tg"' in line:
            r = json.loads(line)
            rows[f"decode_b{r['pl']}"] = r["speed_tg"]
    return rows


def ours(dtype, t):
    rows = {}
    txt = run([o.bench_engine, "--threads", str(t), "--presets", "qwen2.5-0.5b-shape", "--dtypes", dtype,
               "--batches", ",".join(map(str, batches)), "--max-seconds", "30"])
    for line in txt.splitlines():
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        if r.get("bench") == "engine_prefill":
            rows["prefill"] = r["tokens_per_s"]
        elif r.get("bench") == "engine_decode" and r.get("impl") == "paged":
            rows[f"decode_b{r['batch']}"] = r["tokens_per_s"]
        elif r.get("bench") == "read_bandwidth":
            rows["read_gb_s"] = r["gb_s"]
        elif r.get("bench") == "decode_bandwidth_bound":
            rows["batch1_bound"] = r["batch1_tokens_per_s_bound"]
        elif r.get("bench") == "kernels":
            rows["bf16_path"] = r["bf16_path"]
    return rows


model, flags = cpu()
emit({"bench": "llama_cpp_compare", "cpu": model, "flags": flags, "rounds": o.rounds})
ggufs = {dtype: ensure_model(o.roll, o.gguf_py, o.work, "qwen2.5-0.5b-shape", dtype) + ".gguf"
         for dtype in o.dtypes.split(",")}

results = {}  # (dtype, threads, point) -> {"llama.cpp": [...], "rollcpp": [...]}
for rnd in range(1, o.rounds + 1):
    for dtype, gguf in ggufs.items():
        for t in threads:
            for engine, rows in (("llama.cpp", llama(gguf, t)), ("rollcpp", ours(dtype, t))):
                for point, v in rows.items():
                    emit({"round": rnd, "engine": engine, "dtype": dtype, "threads": t, "point": point, "value": v})
                    if isinstance(v, (int, float)) and point.startswith(("prefill", "decode")):
                        results.setdefault((dtype, t, point), {}).setdefault(engine, []).append(v)

for (dtype, t, point), r in sorted(results.items()):
    if "llama.cpp" in r and "rollcpp" in r:
        ratios = [a / b for a, b in zip(r["rollcpp"], r["llama.cpp"])]  # round by round
        emit({"ratio": "rollcpp/llama.cpp", "dtype": dtype, "threads": t, "point": point,
              "min": round(min(ratios), 3), "max": round(max(ratios), 3),
              "rollcpp": r["rollcpp"], "llama.cpp": r["llama.cpp"]})
