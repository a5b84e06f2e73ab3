#!/usr/bin/env bash
# The across-nodes weight sync on one machine: bench_weight_sync's broadcast path with rank 0 and
# rank 1 in two network namespaces joined by a veth pair (the multinode tests' "nodes"; Gloo bound
# to the veth ends by GLOO_SOCKET_IFNAME), so the bytes cross a network interface instead of
# loopback. Needs root. Prints the bench's JSON lines.
#
#   bench/weight_sync_netns.sh BUILD_DIR [bench_weight_sync options, e.g. --presets qwen2.5-0.5b-shape --dtypes bf16]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bench="$(realpath "$1/bench/bench_weight_sync")"
shift
[[ -x "$bench" ]] || { echo "no $bench (scripts/build bench_weight_sync)"; exit 1; }
# shellcheck source=tests/multinode/lib/two_nodes.sh
source "$root/tests/multinode/lib/two_nodes.sh"
two_nodes rbws rbws 7
port=$((29000 + $$ % 1000))
ip netns exec "$ns1" env GLOO_SOCKET_IFNAME="$if1" "$bench" --paths broadcast "$@" --rank 1 --master "$a0:$port" > rank1.log 2>&1 & p1=$!
rc=0
ip netns exec "$ns0" env GLOO_SOCKET_IFNAME="$if0" "$bench" --paths broadcast "$@" --rank 0 --master "$a0:$port" || rc=$?
wait $p1 || rc=$?
[[ $rc == 0 ]] || { echo "bench_weight_sync failed (rc $rc); rank 1:"; tail -20 rank1.log; }
exit $rc
