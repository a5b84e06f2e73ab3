#!/usr/bin/env bash
# rollcpp's engine beside llama.cpp, interleaved on this machine (docs/benchmarks.md, "Beside llama.cpp").
#
#   bench/llama_cpp/compare.sh [compare.py options: --rounds 2 --threads 1,2 --dtypes bf16,fp32 --batches 1,8,64
#                               --llama-also f16,fp32]
#
# --llama-also: llama.cpp also runs the bf16 model's matrices as F16 and/or F32, each ratio is
# printed per llama.cpp dtype and against the fastest of them (on CPUs without bf16 instructions
# llama.cpp's F16 runs well ahead of its BF16).
#
# On first use it builds llama.cpp's llama-bench and llama-batched-bench (Release, native CPU
# flags) from the llama.cpp source bundled in the npm package node-llama-cpp 3.21.1, the one
# scripts/setup reads tokenizer vectors from, into build/llama.cpp/ (git-ignored; ~6 min on 2
# cores; never run by the tests). Needs `scripts/build` (roll, bench_engine). Results are appended
# to bench/results/llama_cpp_compare.jsonl.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${ROLL_BUILD_DIR:-$root/build}"
dir="$build/llama.cpp"
for bin in "$build/src/roll/cli/roll" "$build/bench/bench_engine"; do
  [[ -x "$bin" ]] || { echo "missing $bin: run scripts/build first" >&2; exit 1; }
done
"$root/bench/llama_cpp/build_llama_cpp.sh" "$dir"
mkdir -p "$dir/models" "$root/bench/results"
exec /usr/bin/python3 "$root/bench/llama_cpp/compare.py" "$dir/src/build" "$dir/src/gguf-py" \
  "$build/src/roll/cli/roll" "$build/bench/bench_engine" "$dir/models" \
  --out "$root/bench/results/llama_cpp_compare.jsonl" "$@"
