#!/usr/bin/env bash
# Greedy continuations of rollcpp's engine (`roll generate --temperature 0`) and llama.cpp on the
# same fp32 weights and prompt ids (docs/benchmarks.md, "Greedy agreement with llama.cpp").
#
#   bench/llama_cpp/greedy_agreement.sh [--prompts 8] [--new-tokens 32] [--threads 2] [--preset qwen2.5-0.5b-shape]
#
# Builds llama.cpp as compare.sh does (build_llama_cpp.sh), then greedy_llama.cpp against its
# libllama into build/llama.cpp/. Needs `scripts/build` (roll). Results are appended to
# bench/results/llama_cpp_greedy.jsonl; exit 1 if the engines diverge beyond the fp32 error bound.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${ROLL_BUILD_DIR:-$root/build}"
dir="$build/llama.cpp"
[[ -x "$build/src/roll/cli/roll" ]] || { echo "missing $build/src/roll/cli/roll: run scripts/build first" >&2; exit 1; }
"$root/bench/llama_cpp/build_llama_cpp.sh" "$dir"
src="$dir/src"
tool="$dir/greedy_llama"
if [[ ! -x "$tool" || "$root/bench/llama_cpp/greedy_llama.cpp" -nt "$tool" ]]; then
  g++ -O2 -std=c++17 -I"$src/include" -I"$src/ggml/include" "$root/bench/llama_cpp/greedy_llama.cpp" \
    -L"$src/build/bin" -lllama -lggml -lggml-base -Wl,-rpath,"$src/build/bin" -o "$tool"
fi
mkdir -p "$dir/models" "$root/bench/results"
exec /usr/bin/python3 "$root/bench/llama_cpp/greedy_agreement.py" --tool "$tool" --roll "$build/src/roll/cli/roll" \
  --gguf-py "$src/gguf-py" --work "$dir/models" --out "$root/bench/results/llama_cpp_greedy.jsonl" "$@"
