#!/usr/bin/python3
"""rollcpp's engine beside llama.cpp on the same machine, interleaved (bench/llama_cpp/compare.sh).

    compare.py LLAMA_BUILD_DIR GGUF_PY_DIR ROLL BENCH_ENGINE WORK_DIR [--rounds 2] [--threads 1,2]
               [--dtypes bf16,fp32] [--batches 1,8,64] [--llama-also f16,fp32] [--out FILE.jsonl]

For each dtype: `roll model init --preset qwen2.5-0.5b-shape` and the same tensors written as GGUF
(write_gguf.py). Each round runs, per thread count, llama.cpp (llama-bench pp512; llama-batched-bench
32 prompt + 32 generated tokens at each batch size) then bench_engine (prefill 512; decode 32 + 31
at each batch size, the paged engine), so the two alternate A B A B. Prints one JSON line per
measurement and one per ratio (rollcpp / llama.cpp, min and max over the rounds), with the CPU's
model and flags.

--llama-also f16,fp32: beside each bf16 model llama.cpp also runs the same matrices as IEEE half
and/or widened to fp32, in the same round (on CPUs without bf16 instructions its fastest
unquantised type may not be BF16). The ratio rows name llama.cpp's dtype (`llama_dtype`), and a
row with `llama_dtype: "fastest"` compares each round against the fastest of llama.cpp's runs of
that round.
"""
import argparse
import json
import os

from common import Results, cpu, ensure_gguf_as, ensure_model, run

p = argparse.ArgumentParser()
for a in ("llama_build", "gguf_py", "roll", "bench_engine", "work"):
    p.add_argument(a)
p.add_argument("--rounds", type=int, default=2)
p.add_argument("--threads", default="1,2")
p.add_argument("--dtypes", default="bf16,fp32")
p.add_argument("--batches", default="1,8,64")
p.add_argument("--llama-also", default="")
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
emit({"bench": "llama_cpp_compare", "cpu": model, "flags": flags, "rounds": o.rounds, "llama_also": o.llama_also})
models = {dtype: ensure_model(o.roll, o.gguf_py, o.work, "qwen2.5-0.5b-shape", dtype) for dtype in o.dtypes.split(",")}
# our dtype -> [(llama.cpp's dtype, its GGUF file)]
also = [a for a in o.llama_also.split(",") if a]
for a in also:
    if a not in ("f16", "fp32"):
        p.error(f"--llama-also {a}: expected f16 or fp32")
peers = {dtype: [(dtype, d + ".gguf")] +
         ([(a, ensure_gguf_as(o.gguf_py, d, "f32" if a == "fp32" else a)) for a in also] if dtype == "bf16" else [])
         for dtype, d in models.items()}

results = {}  # (dtype, threads, point) -> {engine label: [one value per round]}
for rnd in range(1, o.rounds + 1):
    for dtype, runs in peers.items():
        for t in threads:
            measured = [(f"llama.cpp:{ld}", ld, llama(gguf, t)) for ld, gguf in runs]
            measured.append(("rollcpp", dtype, ours(dtype, t)))
            for label, engine_dtype, rows in measured:
                engine = label.split(":")[0]
                for point, v in rows.items():
                    row = {"round": rnd, "engine": engine, "dtype": dtype, "threads": t, "point": point, "value": v}
                    if engine == "llama.cpp" and engine_dtype != dtype:
                        row["llama_dtype"] = engine_dtype
                    emit(row)
                    if isinstance(v, (int, float)) and point.startswith(("prefill", "decode")):
                        results.setdefault((dtype, t, point), {}).setdefault(label, []).append(v)


def ratio_row(dtype, t, point, llama_dtype, ours_v, peer_v):
    ratios = [a / b for a, b in zip(ours_v, peer_v)]  # round by round
    return {"ratio": "rollcpp/llama.cpp", "dtype": dtype, "llama_dtype": llama_dtype, "threads": t, "point": point,
            "min": round(min(ratios), 3), "max": round(max(ratios), 3), "rollcpp": ours_v, "llama.cpp": peer_v}


for (dtype, t, point), r in sorted(results.items()):
    if "rollcpp" not in r:
        continue
    llama_runs = {label.split(":")[1]: v for label, v in r.items() if label.startswith("llama.cpp:")}
    for llama_dtype, v in llama_runs.items():
        emit(ratio_row(dtype, t, point, llama_dtype, r["rollcpp"], v))
    if len(llama_runs) > 1:
        fastest = [max(vs) for vs in zip(*llama_runs.values())]
        emit(ratio_row(dtype, t, point, "fastest", r["rollcpp"], fastest))
