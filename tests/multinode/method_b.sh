#!/usr/bin/env bash
# Multi-node, the seed's Method B: a manual cluster on two "nodes", network namespaces
# joined by a veth pair (needs root; created here and removed on every way out).
#   1  `roll start --head` in ns0, `roll start --address` in ns1; `roll status` lists both nodes
#      with their devices; a second head on the same machine is refused;
#   2  the tiny RLVR config of method_a.sh (actor_train on node 0, actor_infer + reference on
#      node 1) runs 2 steps on the head only, through the cluster; `roll status` shows the job's
#      workers while it runs, and after it the agent still up with no workers; a second job
#      (1 step) runs on the same agent;
#   3  `roll stop` on the head: the agent exits by itself, `roll stop` on ns1 finds nothing;
#   4  a new cluster; `roll stop` on the agent's node: the head sees node 1 lost; `roll stop` on
#      the head; no process is left in either namespace.
set -euo pipefail
roll="$(readlink -f "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
# shellcheck source=tests/multinode/lib/two_nodes.sh
source "$root/tests/multinode/lib/two_nodes.sh"
two_nodes rmb rb 1
port=29617
py=/usr/bin/python3
export ROLL_HEAD_WAIT_TIMEOUT=5 ROLL_HEARTBEAT_TIMEOUT=3
mkdir -p c0 c1
tiny_rlvr_setup "$roll" "$root"
# Each "machine" keeps its state files in its own folder (the namespaces share /tmp).
n0() { ip netns exec "$ns0" env ROLL_CLUSTER_DIR="$work/c0" "$roll" "$@"; }
n1() { ip netns exec "$ns1" env ROLL_CLUSTER_DIR="$work/c1" "$roll" "$@"; }
fail() { echo "FAIL: $1"; shift; show "$@" c0/head.log c1/agent.log; exit 1; }
pid_of() { $py -c "import json,sys; print(json.load(open(sys.argv[1]))['pid'])" "$1"; }
alive() { [[ -d /proc/$1 ]] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
gone_within() {  # pid seconds
  for _ in $(seq 1 $(($2 * 10))); do alive "$1" || return 0; sleep 0.1; done
  return 1
}
log_within() {  # file pattern seconds: the agent writes a job's end after the driver has seen it leave
  for _ in $(seq 1 $(($3 * 10))); do grep -q -- "$2" "$1" && return 0; sleep 0.1; done
  return 1
}
status_until() {  # ns-fn out pattern seconds: `roll status` until its report matches
  for _ in $(seq 1 $(($4 * 4))); do
    "$1" status > "$2" 2>&1 || true
    grep -q -- "$3" "$2" && return 0
    sleep 0.25
  done
  fail "no '$3' in \`roll status\` within $4 s" "$2"
}
no_process_left() {
  local left=""
  for _ in $(seq 1 50); do
    left="$(ip netns pids "$ns0"; ip netns pids "$ns1")"
    [[ -z "$left" ]] && return 0
    sleep 0.1
  done
  echo "processes left: $left"; ps -o pid,args -p "$(echo $left | tr ' ' ,)" || true; return 1
}

echo "== 1: head in ns0, agent in ns1"
n0 start --head --port=$port --dashboard-port=8266 --num-gpus=1 > start0.out 2>&1 || fail "roll start --head" start0.out
grep -q "roll start --address='$a0:$port'" start0.out || fail "no join hint" start0.out
head_pid="$(pid_of c0/head.json)"
alive "$head_pid" || fail "the head daemon is not running" start0.out
rc=0; n0 start --head --port=$((port + 1)) > again.out 2>&1 || rc=$?
[[ $rc != 0 ]] && grep -q "a roll head daemon already runs on this machine (pid $head_pid" again.out ||
  fail "a second head was not refused" again.out
n1 start --address="$a0:$port" --num-gpus=1 > start1.out 2>&1 || fail "roll start --address" start1.out
grep -q "node 1 ($a1) joined the cluster at $a0:$port" start1.out || fail "no join line" start1.out
agent_pid="$(pid_of c1/agent.json)"
status_until n0 status1.out " node 1 $a1 host .*: 1 CPU device(s), .* cores; workers: (none)" 5
grep -q " node 0 (head) $a0 host .*: 1 CPU device(s)" status1.out || fail "status misses the head" status1.out
grep -q "(no lost nodes)" status1.out || fail "a node is lost" status1.out
grep -q " 0/2 CPU device(s) used, 2 free" status1.out || fail "resources" status1.out
grep -q "dashboard on port 8266" status1.out || fail "dashboard port" status1.out
n1 status > status1b.out 2>&1 || fail "roll status on the agent's node" status1b.out  # finds the head via agent.json
grep -q " node 1 $a1" status1b.out || fail "status from ns1" status1b.out
cat status1.out

echo "== 2: a pipeline on the head uses the cluster"
t0=$(date +%s)
n0 rlvr "${cfg[@]}" output_dir=./outb exp_name=b max_steps=2 > job1.log 2>&1 & pj=$!
seen=0
while kill -0 $pj 2>/dev/null; do
  n0 status > status2.out 2>&1 || true
  if grep -q " node 1 $a1 .*workers: .*actor_infer-0-G0" status2.out && grep -q " node 1 .*reference-0-G0" status2.out &&
     grep -q " job 0: rlvr b (driver pid" status2.out && grep -q " 2/2 CPU device(s) used, 0 free" status2.out; then
    seen=1; break
  fi
  sleep 0.3
done
rc=0; wait $pj || rc=$?
[[ $rc == 0 ]] || fail "the pipeline on the cluster: rc=$rc" job1.log
[[ $seen == 1 ]] || fail "\`roll status\` never showed the job's workers on node 1" status2.out job1.log
echo "job 1 took $(( $(date +%s) - t0 )) s; roll status during it:"; grep -E "^ (node|job) " status2.out
grep -q "Connected to the roll cluster at $a0:$port: 2 live node(s)" job1.log || fail "not on the cluster" job1.log
grep -q "Current cluster resources: {.*'node:$a0': 1.0, 'node:$a1': 1.0}" job1.log || fail "resources line" job1.log
grep -q "model update: 1 infer rank(s) by broadcast, 0 by shared memory" job1.log || fail "no broadcast" job1.log
grep -q "node 1: started worker actor_infer-0-G0" c1/agent.log || fail "agent did not start actor_infer" job1.log
grep -q "node 1: started worker reference-0-G0" c1/agent.log || fail "agent did not start reference" job1.log
log_within c1/agent.log "job 0 ended (ok)" 5 || fail "the agent did not see the job end" job1.log
metrics="$(find . -path "*/b/*" -name metrics.jsonl | head -1)"
$py - "$metrics" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == [0, 1], [r["step"] for r in rows]
for r in rows:
    assert "actor/pg_loss" in r["metrics"] and "time/actor_train/model_update/total" in r["metrics"], r["metrics"].keys()
print("2: 2 steps, metrics ok")
PY
grep -rq "serving at tcp://$a1:" output/logs/b/log_rank_actor_infer-0-G0_0_1.log || fail "infer not on node 1" job1.log
alive "$agent_pid" || fail "the agent exited with the job" job1.log
status_until n0 status3.out " node 1 $a1 host .*workers: (none)" 5
grep -q "(no running jobs)" status3.out || fail "a job is still listed" status3.out
grep -q " 0/2 CPU device(s) used, 2 free" status3.out || fail "devices still used" status3.out
[[ -z "$(ip netns pids "$ns1" | grep -vx "$agent_pid")" ]] || fail "processes besides the agent in ns1" status3.out
n0 rlvr "${cfg[@]}" output_dir=./outc exp_name=c max_steps=1 > job2.log 2>&1 || fail "the second job" job2.log
log_within c1/agent.log "job 1 ended (ok)" 5 || fail "the agent did not serve the second job" job2.log
alive "$agent_pid" || fail "the agent exited after the second job" job2.log
echo "2: two jobs ran on the same agent (pid $agent_pid)"

echo "== 3: roll stop on the head; the agent exits by itself"
n0 stop > stop0.out 2>&1 || fail "roll stop on the head" stop0.out
grep -q "Stopped the roll head (pid $head_pid" stop0.out || fail "stop message" stop0.out
gone_within "$head_pid" 1 || fail "the head still runs" stop0.out
gone_within "$agent_pid" 5 || fail "the agent did not exit when the head stopped" stop0.out
grep -q "the head at $a0:$port stopped; node 1 exits" c1/agent.log || fail "agent's reason" stop0.out
n1 stop > stop1.out 2>&1 || fail "roll stop on ns1" stop1.out
grep -q "Did not find any active roll processes." stop1.out || fail "idempotent stop" stop1.out
[[ ! -e c0/head.json && ! -e c1/agent.json ]] || fail "state files left" stop1.out
n0 stop | grep -q "Did not find any active roll processes."
rc=0; n0 status > status4.out 2>&1 || rc=$?
[[ $rc != 0 ]] && grep -q "no roll cluster or run to report on" status4.out || fail "status without a cluster" status4.out
rc=0; n1 status --address="$a0:$port" > status5.out 2>&1 || rc=$?
[[ $rc != 0 ]] && grep -q "no roll cluster reachable at $a0:$port" status5.out || fail "status of a gone head" status5.out
no_process_left

echo "== 4: roll stop on the agent's node; the head sees it lost"
n0 start --head --port=$port --num-gpus=1 > start0b.out 2>&1 || fail "restart head" start0b.out
n1 start --address="$a0:$port" --num-gpus=1 > start1b.out 2>&1 || fail "restart agent" start1b.out
status_until n0 status6.out " node 1 $a1" 5
n1 stop > stop1b.out 2>&1 || fail "roll stop on the agent" stop1b.out
grep -q "Stopped the roll agent (pid" stop1b.out || fail "agent stop message" stop1b.out
status_until n0 status7.out " node 1 $a1 .*(no heartbeat for" 6
n0 stop > stop0b.out 2>&1 || fail "roll stop on the head" stop0b.out
no_process_left
echo "multinode method B: ok"
