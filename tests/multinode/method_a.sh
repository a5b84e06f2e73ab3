#!/usr/bin/env bash
# Multi-node, the seed's Method A, on two "nodes": network namespaces joined by a veth
# pair (needs root; created here and removed on every way out). Tiny RLVR config, the seed's
# Pattern 1: actor_train on node 0, actor_infer + reference on node 1.
#   A  both nodes started together: 2 steps, both exit 0, weights cross by broadcast;
#   A2 the seed's Pattern 2 (train and infer each on both nodes: cross-node gradient all-reduce);
#   B  the worker node started first, the head 3 s later: works;
#   C  MASTER_ADDR unreachable: the worker node fails naming A:P within ROLL_HEAD_WAIT_TIMEOUT + 2 s;
#   D  the worker node's processes killed mid-run: the head fails within ROLL_HEARTBEAT_TIMEOUT
#      naming node 1, no process is left on either node;
#   E  the worker node's link taken down mid-run: both nodes fail by themselves, none is left.
set -euo pipefail
roll="$(readlink -f "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=tests/multinode/lib/two_nodes.sh
source "$root/tests/multinode/lib/two_nodes.sh"
two_nodes rmn rv 0
port=29517
py=/usr/bin/python3
tiny_rlvr_setup "$roll" "$root"
node_env() {  # rank
  echo RANK="$1" WORLD_SIZE=2 MASTER_ADDR="$a0" MASTER_PORT="$port" ROLL_HEAD_WAIT_TIMEOUT=60
}
on() {  # ns rank log overrides... (ROLL_* variables of the caller pass through `env`)
  local ns="$1" rank="$2" log="$3"
  shift 3
  # shellcheck disable=SC2046
  ip netns exec "$ns" env $(node_env "$rank") "$roll" rlvr "${cfg[@]}" "$@" > "$log" 2>&1
}
wait_for_line() {  # file pattern seconds
  for _ in $(seq 1 $(($3 * 10))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "no '$2' in $1 within $3 s"; show "$1"; return 1
}
no_process_left() {
  local left
  left="$(ip netns pids "$ns0"; ip netns pids "$ns1")"
  [[ -z "$left" ]] || { echo "processes left: $left"; ps -o pid,args -p "$(echo $left | tr ' ' ,)" || true; return 1; }
}

echo "== A: both nodes together, 2 steps"
on "$ns1" 1 a1.log output_dir=./outa exp_name=a max_steps=2 & p1=$!
on "$ns0" 0 a0.log output_dir=./outa exp_name=a max_steps=2 & p0=$!
rc0=0 rc1=0
wait $p0 || rc0=$?
wait $p1 || rc1=$?
[[ $rc0 == 0 && $rc1 == 0 ]] || { echo "A: head rc=$rc0 worker node rc=$rc1"; show a0.log a1.log; exit 1; }
grep -q "1 nodes have joined so far, waiting for 1." a0.log a1.log
grep -q "Current cluster resources: {.*'node:$a0': 1.0, 'node:$a1': 1.0}" a0.log
grep -q "Current cluster resources: " a1.log
grep -q "model update: 1 infer rank(s) by broadcast, 0 by shared memory" a0.log
grep -q "node 1: started worker actor_infer-0-G0" a1.log
grep -q "node 1: started worker reference-0-G0" a1.log
grep -q "finished the job" a1.log
metrics="$(find . -path "*/a/*" -name metrics.jsonl | head -1)"
$py - "$metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1], [r["step"] for r in rows]
for r in rows:
    assert "actor/pg_loss" in r["metrics"] and "time/actor_train/model_update/total" in r["metrics"], r["metrics"].keys()
print("A: 2 steps, metrics ok")
PY
# The infer worker on node 1 served on node 1's address and received the broadcast.
grep -rq "serving at tcp://$a1:" output/logs/a/log_rank_actor_infer-0-G0_0_1.log
no_process_left

echo "== A2: Pattern 2 (train and infer each split over both nodes), 2 steps"
p2=(num_gpus_per_node=2 'actor_train.device_mapping=[0,2]' actor_train.world_size=2 'actor_infer.device_mapping=[1,3]'
    init_kl_coef=0 actor_train.training_args.per_device_train_batch_size=2
    actor_train.training_args.gradient_accumulation_steps=2 output_dir=./outp2 exp_name=p2 max_steps=2)
on "$ns1" 1 p2_1.log "${p2[@]}" & p1=$!
on "$ns0" 0 p2_0.log "${p2[@]}" & p0=$!
rc0=0 rc1=0
wait $p0 || rc0=$?
wait $p1 || rc1=$?
[[ $rc0 == 0 && $rc1 == 0 ]] || { echo "A2: head rc=$rc0 worker node rc=$rc1"; show p2_0.log p2_1.log; exit 1; }
grep -q "model update: 1 infer rank(s) by broadcast, 1 by shared memory" p2_0.log
grep -q "node 1: started worker actor_train-1-G0" p2_1.log
grep -q "node 1: started worker actor_infer-1-G1" p2_1.log
metrics="$(find . -path "*/p2/*" -name metrics.jsonl | head -1)"
$py - "$metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1], [r["step"] for r in rows]
print("A2: 2 steps, metrics ok")
PY
no_process_left

echo "== B: the worker node first, the head 3 s later"
on "$ns1" 1 b1.log output_dir=./outb exp_name=b max_steps=1 & p1=$!
# The head starts once the worker node waits for it (3 s later, or as soon as a loaded machine
# got the worker node that far).
wait_for_line b1.log "Waiting for roll head node at $a0:$port to become available..." 60
sleep 3
on "$ns0" 0 b0.log output_dir=./outb exp_name=b max_steps=1 & p0=$!
rc0=0 rc1=0
wait $p0 || rc0=$?
wait $p1 || rc1=$?
[[ $rc0 == 0 && $rc1 == 0 ]] || { echo "B: head rc=$rc0 worker node rc=$rc1"; show b0.log b1.log; exit 1; }
grep -q "roll head node at $a0:$port is ready" b1.log
no_process_left
echo "B: ok"

echo "== C: MASTER_ADDR unreachable"
t0=$(date +%s.%N)
rc=0
ip netns exec "$ns1" env RANK=1 WORLD_SIZE=2 MASTER_ADDR="${net%.0}.99" MASTER_PORT="$port" ROLL_HEAD_WAIT_TIMEOUT=5 \
  "$roll" rlvr "${cfg[@]}" > c1.log 2>&1 || rc=$?
t1=$(date +%s.%N)
[[ $rc != 0 ]] || { echo "C: expected a failure"; show c1.log; exit 1; }
grep -q "roll head node at ${net%.0}.99:$port did not become available within 5s" c1.log || { show c1.log; exit 1; }
$py -c "import sys; d=$t1-$t0; print('C: failed after %.1f s' % d); sys.exit(0 if d <= 7.0 else 1)"
no_process_left

echo "== D: the worker node's processes killed mid-run"
ROLL_HEARTBEAT_TIMEOUT=3 on "$ns1" 1 d1.log output_dir=./outd exp_name=d max_steps=50 & p1=$!
ROLL_HEARTBEAT_TIMEOUT=3 on "$ns0" 0 d0.log output_dir=./outd exp_name=d max_steps=50 & p0=$!
wait_for_line d0.log "model update: 1 infer rank" 120
ip netns pids "$ns1" | xargs -r kill -9
t0=$(date +%s.%N)
wait_for_line d0.log "node 1 ($a1, host .*) stopped sending heartbeats" 10
t1=$(date +%s.%N)
rc0=0
wait $p0 || rc0=$?
t2=$(date +%s.%N)
wait $p1 || true
[[ $rc0 != 0 ]] || { echo "D: the head should fail"; show d0.log; exit 1; }
grep -q "error: .*node 1 ($a1" d0.log || { show d0.log; exit 1; }
$py -c "import sys; d=$t1-$t0; e=$t2-$t0; print('D: the head saw node 1 lost %.1f s after the kill, exited after %.1f s' % (d, e)); sys.exit(0 if d <= 3.0 + 2.0 and e <= 20 else 1)"
no_process_left

echo "== E: the worker node's link down mid-run"
ROLL_HEARTBEAT_TIMEOUT=3 on "$ns1" 1 e1.log output_dir=./oute exp_name=e max_steps=50 & p1=$!
ROLL_HEARTBEAT_TIMEOUT=3 on "$ns0" 0 e0.log output_dir=./oute exp_name=e max_steps=50 & p0=$!
wait_for_line e0.log "model update: 1 infer rank" 120
ip -n "$ns1" link set "$if1" down
t0=$(date +%s.%N)
wait_for_line e0.log "node 1 ($a1, host .*) stopped sending heartbeats" 10
t1=$(date +%s.%N)
rc0=0 rc1=0
wait $p1 || rc1=$?
t2=$(date +%s.%N)
wait $p0 || rc0=$?
[[ $rc0 != 0 && $rc1 != 0 ]] || { echo "E: head rc=$rc0 worker node rc=$rc1 (both should fail)"; show e0.log e1.log; exit 1; }
grep -q "error: .*node 1 ($a1" e0.log || { show e0.log; exit 1; }
grep -q "lost the head at $a0:$port" e1.log || { show e1.log; exit 1; }
$py -c "import sys; d=$t1-$t0; e=$t2-$t0; print('E: the head saw node 1 lost after %.1f s, node 1 exited by itself after %.1f s' % (d, e)); sys.exit(0 if d <= 3.0 + 2.0 and e <= 3.0 + 5.0 else 1)"
no_process_left
echo "multinode method A: ok"
