"""What compare.py and greedy_agreement.py share: JSON-line results, commands that must succeed,
the CPU's identity, and the model both engines read (`roll model init` written again as GGUF)."""
import json
import os
import subprocess
import sys


class Results:
    """Prints each row as a JSON line and appends it to `path` (when given)."""

    def __init__(self, path):
        self.out = open(path, "a") if path else None

    def emit(self, row):
        line = json.dumps(row)
        print(line, flush=True)
        if self.out:
            self.out.write(line + "\n")
            self.out.flush()


def run(cmd, stdin=None):
    """stdout + stderr of a command; exits with its stderr when it fails."""
    r = subprocess.run(cmd, capture_output=True, text=True, input=stdin)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
    return r.stdout + r.stderr


def cpu():
    """The CPU's model name and the vector flags that decide the kernels."""
    info = open("/proc/cpuinfo").read().split("\n\n")[0]
    fields = {k.strip(): v.strip() for k, v in (l.split(":", 1) for l in info.splitlines() if ":" in l)}
    flags = fields.get("flags", "").split()
    keep = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_bf16") if f in flags]
    return fields.get("model name", "?"), keep


def ensure_model(roll, gguf_py, work, preset, dtype):
    """The model directory `roll model init --seed 1` writes under `work`, and its GGUF copy
    (write_gguf.py, tensor for tensor); made on first use."""
    d = os.path.join(work, f"{preset}-{dtype}")
    if not os.path.exists(d + ".gguf"):
        os.makedirs(work, exist_ok=True)
        run([roll, "model", "init", "--preset", preset, "--dtype", dtype, "--seed", "1", "--out", d])
        run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "write_gguf.py"), gguf_py, d, d + ".gguf"])
    return d


def ensure_gguf_as(gguf_py, model_dir, dtype):
    """The same model's matrices as `dtype` (f16 or f32) for llama.cpp (write_gguf.py --as); made on first use."""
    out = f"{model_dir}-as-{dtype}.gguf"
    if not os.path.exists(out):
        run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "write_gguf.py"), gguf_py, model_dir, out,
             "--as", dtype])
    return out
