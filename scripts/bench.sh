#!/usr/bin/env bash
# dlaunch's benchmark suite (not part of scripts/test.sh: timings stay out of
# tests). Installs the peers it compares against when missing (apt-get, as root
# or through sudo, Debian 12), builds dlaunch when build/bin/dlaunch is missing
# (unless --bin DIR names another build), then runs bench/suite/run.py, which
# takes every argument:
#   --runs N     measured runs per peer (default 5), after one warm-up round
#   --only NAME  one scenario (one-node, ssh-hosts, rendezvous-scale,
#                log-throughput, mnist, faults, hangs, stacks-pause, ui); repeatable
#   --quick      each scenario once at small sizes; writes to a temp dir
#   --out FILE   where RESULTS.md goes (default bench/results/RESULTS.md)
#   --bin DIR    the dlaunch build to measure (default build/bin)
set -euo pipefail
cd "$(dirname "$0")/.."

bin=""
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case ${args[i]} in
    --bin) bin=${args[i + 1]:-} ;;
    --bin=*) bin=${args[i]#--bin=} ;;
  esac
done

# Each package stands for itself by a file it installs (also found when the
# tool came some other way than apt).
declare -A wanted=([openmpi-bin]=/usr/bin/mpirun [pdsh]=/usr/bin/pdsh
  [python3-torch]=/usr/bin/torchrun [gnuplot-nox]=/usr/bin/gnuplot
  [openssh-server]=/usr/sbin/sshd [openssh-client]=/usr/bin/ssh [iproute2]=/usr/sbin/ip)
missing=()
for pkg in "${!wanted[@]}"; do
  [[ -x ${wanted[$pkg]} ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "bench.sh: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) != 0 ]]; then sudo=(sudo); fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
fi

if [[ -z $bin && ! -x build/bin/dlaunch ]]; then
  echo "bench.sh: build/bin/dlaunch is missing; building it"
  source scripts/configure.sh
  configure build -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build build
fi

exec /usr/bin/python3 bench/suite/run.py "$@"
