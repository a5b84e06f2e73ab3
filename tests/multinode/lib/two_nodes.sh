# Sourced by tests/multinode/*.sh: two "nodes" as network namespaces joined by a veth pair (needs
# root), removed with every process in them on every way out, and the tiny RLVR setup both
# methods run (data, a tiny model, the seed's Pattern 1 overrides in `cfg`).
#   two_nodes NS_PREFIX IF_PREFIX SUBNET_SALT   sets work ns0 ns1 if0 if1 net a0 a1, cds to $work
two_nodes() {
  [[ $(id -u) == 0 ]] || { echo "needs root (network namespaces)"; exit 1; }
  work="$(mktemp -d /tmp/roll-multinode.XXXXXX)"
  local tag="$$"
  ns0="$1-0-$tag" ns1="$1-1-$tag" if0="$2-0-$tag" if1="$2-1-$tag"
  # Interface names hold 15 characters at most.
  if0="${if0:0:15}" if1="${if1:0:15}"
  net="10.$((tag % 200 + 20)).$(((tag / 200 + $3) % 250)).0"
  a0="${net%.0}.1" a1="${net%.0}.2"
  trap two_nodes_cleanup EXIT
  trap 'exit 130' INT TERM
  ip netns add "$ns0"
  ip netns add "$ns1"
  ip link add "$if0" type veth peer name "$if1"
  ip link set "$if0" netns "$ns0"
  ip link set "$if1" netns "$ns1"
  ip -n "$ns0" addr add "$a0/24" dev "$if0"
  ip -n "$ns1" addr add "$a1/24" dev "$if1"
  for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
  ip -n "$ns0" link set "$if0" up
  ip -n "$ns1" link set "$if1" up
  cd "$work"
}

two_nodes_cleanup() {
  for ns in "$ns0" "$ns1"; do
    if ip netns list | grep -qw "$ns"; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$ns" 2>/dev/null || true
    fi
  done
  rm -rf "$work"
}

# Data and a tiny model in $work; `cfg`: the RLVR command line of the seed's Pattern 1
# (actor_train on node 0, actor_infer + reference on node 1).
tiny_rlvr_setup() {  # roll root
  mkdir -p data
  "$1" data arithmetic --seed 3 --n 200 --split train --out data/arith_train.jsonl >/dev/null
  "$1" data arithmetic --seed 3 --n 4 --split test --out data/arith_test.jsonl >/dev/null
  "$1" model init --preset tiny --seed 5 --out output/models/tiny >/dev/null
  cfg=(--config_path "$2/examples/cpu" --config_name rlvr_arithmetic --quiet-workers
       pretrain=output/models/tiny rollout_batch_size=4 num_return_sequences_in_group=2 save_steps=100 eval_steps=100
       num_gpus_per_node=1 'actor_train.device_mapping=list(range(0,1))'
       'actor_infer.device_mapping=list(range(1,2))' 'reference.device_mapping=list(range(1,2))' init_kl_coef=0.05)
}

show() { for f in "$@"; do echo "--- $f"; tail -30 "$f"; done; }
