#!/usr/bin/env bash
# The MASTER_ADDR probe at scale when some nodes reach none of node 0's
# addresses (bench/results/rendezvous_scale.md, "Blind scouts at 20,000
# nodes"): scale.py with dlaunch-rdzv-load --blind-node, one run at a time.
#
#   bench/rendezvous/blind_nodes.sh BIN_DIR OUT_DIR NODES REPEAT NAME=BLIND... [-- SCALE_ARGS...]
#
# NAME=BLIND is a case: BLIND a comma list of load nodes, or empty for none.
# The cases take turns (a, b, c, a, b, c, ...), so a slow spell of a shared
# machine hits each alike. Each run goes to OUT_DIR/NAME-<i>-1.{stderr,json}
# and OUT_DIR/NAME-<i>.tcp (the namespace's TCP counters after the run).
#
# Each run has a network namespace of its own (unshare -n, as root): its lo,
# and a veth pair whose one end carries 127.77.0.1-7. Node 0's agent reports
# them as an interface's addresses, and the candidates take them (those of a
# loopback interface they leave out unless every node is this machine), so
# the probe has 8 candidates, --master-addr 127.0.0.1 first, and every
# connection stays on 127.0.0.0/8 inside the namespace. The namespace, its interfaces
# and its sockets (TIME_WAITs included) go when the run ends: nothing of the
# machine's own network is seen or changed, and no run inherits another's.
set -euo pipefail
if [[ $# -lt 5 ]]; then
  sed -n '6p' "$0" >&2
  exit 2
fi
bin=$(realpath "$1") out=$2 nodes=$3 repeat=$4
shift 4
cases=()
while [[ $# -gt 0 && $1 != -- ]]; do
  cases+=("$1")
  shift
done
[[ ${1:-} == -- ]] && shift
scale=$(realpath "$(dirname "$0")/scale.py")
mkdir -p "$out"

# One run inside its namespace: $1 the blind list, $2 the output prefix, then scale.py's arguments.
run_in_namespace() {
  # shellcheck disable=SC2016  # expanded by the bash inside the namespace
  unshare -n bash -euo pipefail -c '
    blind=$1 prefix=$2
    shift 2
    ip link set lo up
    ip link add dlb0 type veth peer name dlb1
    ip link set dlb0 up
    ip link set dlb1 up
    for i in 1 2 3 4 5 6 7; do ip addr add 127.77.0.$i/32 dev dlb0; done
    "$@" --blind-node "$blind" --keep "$prefix"
    # Every TCP accept of the run (rendezvous and probe listeners alike) and dropped SYNs.
    { grep "^Tcp:" /proc/net/snmp; grep "^TcpExt:" /proc/net/netstat; } >"$prefix.tcp"
  ' run "$@"
}

for ((i = 1; i <= repeat; i++)); do
  for c in "${cases[@]}"; do
    name=${c%%=*} blind=${c#*=}
    echo "== $name run $i: --blind-node '${blind}'; load average $(cut -d' ' -f1-3 /proc/loadavg)"
    run_in_namespace "$blind" "$out/$name-$i" python3 "$scale" --build "$name=$bin" \
      --nodes "$nodes" --repeat 1 --load cpp "$@"
  done
done
