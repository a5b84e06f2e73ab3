"""Greedy continuations of rollcpp's engine and llama.cpp on the same fp32 weights and prompt ids.

Run by greedy_agreement.sh (which builds the pieces). For every prompt both engines pick the argmax
token for --new-tokens steps. The continuations must agree up to the first step where llama.cpp's
top-2 logit margin is within the fp32 error bound (a near-tie, reported, after which the two
sequences differ by design); a divergence at a wider margin fails (exit 1).

fp32 error bound on a logit: layers * sqrt(hidden) * 2^-24 * 16 * max(1, |top logit|): each of the
model's fp32 products sums `hidden` terms in another order in each engine (~sqrt(hidden) * eps
relative), compounding over the layers; 16 covers the norms, attention and the LM head.
"""
import argparse
import json
import math
import os
import random
import sys

from common import Results, ensure_model, run

p = argparse.ArgumentParser()
p.add_argument("--tool", required=True)
p.add_argument("--roll", required=True)
p.add_argument("--gguf-py", required=True)
p.add_argument("--work", required=True)
p.add_argument("--out", default="")
p.add_argument("--preset", default="qwen2.5-0.5b-shape")
p.add_argument("--prompts", type=int, default=8)
p.add_argument("--new-tokens", type=int, default=32)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--seed", type=int, default=1)
o = p.parse_args()
emit = Results(o.out).emit

model = ensure_model(o.roll, o.gguf_py, o.work, o.preset, "fp32")
cfg = json.load(open(os.path.join(model, "config.json")))
layers, hidden = cfg["num_hidden_layers"], cfg["hidden_size"]
rel_bound = layers * math.sqrt(hidden) * 2.0 ** -24 * 16

rng = random.Random(o.seed)
lengths = [8, 16, 32, 64]
prompts = [{"id": i, "prompt_token_ids": [rng.randrange(0, 150000) for _ in range(lengths[i % len(lengths)])]}
           for i in range(o.prompts)]
jsonl = "".join(json.dumps(q) + "\n" for q in prompts)
inp = os.path.join(o.work, "greedy_prompts.jsonl")
open(inp, "w").write(jsonl)

ref = {}
for line in run([o.tool, model + ".gguf", str(o.new_tokens), str(o.threads)], stdin=jsonl).splitlines():
    if not line.startswith("{"):
        continue  # llama.cpp's log lines (stderr)
    r = json.loads(line)
    ref[r["id"]] = r
ours_path = os.path.join(o.work, "greedy_rollcpp.jsonl")
run([o.roll, "generate", "-m", model, "-i", inp, "-o", ours_path, "--dtype", "fp32", "--temperature", "0",
     "--max-new-tokens", str(o.new_tokens), "--threads", str(o.threads)])
ours = {r["id"]: r["outputs"][0]["token_ids"] for r in map(json.loads, open(ours_path))}

emit({"bench": "llama_cpp_greedy", "preset": o.preset, "dtype": "fp32", "new_tokens": o.new_tokens,
      "prompts": o.prompts, "relative_bound": rel_bound})
compared = agreed = near_ties = failures = 0
for q in prompts:
    a, r = ours[q["id"]], ref[q["id"]]
    b, margins, tops = r["token_ids"], r["margins"], r["tops"]
    n = min(len(a), len(b))
    same = next((i for i in range(n) if a[i] != b[i]), n)
    row = {"id": q["id"], "prompt_len": len(q["prompt_token_ids"]), "steps": n, "agree": same}
    compared += n
    agreed += same
    if same < n:
        bound = rel_bound * max(1.0, abs(tops[same]))
        row.update({"diverged_at": same, "margin": margins[same], "bound": bound,
                    "near_tie": margins[same] <= bound})
        near_ties += margins[same] <= bound
        failures += margins[same] > bound
    else:
        # the smallest margin passed without diverging, against its bound
        row["smallest_margin_over_bound"] = min(m / (rel_bound * max(1.0, abs(t))) for m, t in zip(margins[:n], tops[:n]))
    emit(row)
emit({"bench": "llama_cpp_greedy_summary", "tokens_compared": compared, "tokens_agreeing": agreed,
      "near_tie_divergences": near_ties, "divergences_beyond_bound": failures})
sys.exit(1 if failures else 0)
