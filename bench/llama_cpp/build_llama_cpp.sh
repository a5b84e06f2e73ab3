#!/usr/bin/env bash
# Builds llama.cpp's llama-bench and llama-batched-bench (and with them libllama) into DIR/src/build
# on first use: the llama.cpp source bundled in the npm package node-llama-cpp 3.21.1 (the package
# scripts/setup reads tokenizer vectors from), Release, native CPU flags. ~6 min on 2 cores; never
# run by the tests. Used by compare.sh and greedy_agreement.sh.
#
#   bench/llama_cpp/build_llama_cpp.sh DIR
set -euo pipefail
dir="$1"
pkg="node-llama-cpp@3.21.1"
if [[ ! -x "$dir/src/build/bin/llama-batched-bench" ]]; then
  mkdir -p "$dir"
  echo "[llama.cpp] npm pack $pkg (its llama.cpp git bundle only)" >&2
  (cd "$dir" && npm pack --ignore-scripts --silent "$pkg" >/dev/null)
  tar -xzf "$dir/node-llama-cpp-3.21.1.tgz" -C "$dir" package/llama/gitRelease.bundle
  rm -rf "$dir/src"
  git clone --quiet "$dir/package/llama/gitRelease.bundle" "$dir/src"
  echo "[llama.cpp] building llama.cpp $(git -C "$dir/src" rev-parse --short HEAD) (Release, GGML_NATIVE)" >&2
  cmake -S "$dir/src" -B "$dir/src/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF >/dev/null
  ninja -C "$dir/src/build" -j"${ROLL_JOBS:-2}" llama-bench llama-batched-bench >/dev/null
fi
