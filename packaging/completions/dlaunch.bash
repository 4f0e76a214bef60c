# bash completion for dlaunch                               -*- shell-script -*-
# Installed as share/bash-completion/completions/dlaunch. Completes commands,
# options, job names (the directories of the state dir that `dlaunch list`
# reads, or of --log-dir when given) and hosts files (*.toml).

_dlaunch_commands="run list get logs stop stacks delete top check ui metrics"

# Options of a job start that take a value. (--pass-local-rank and deepspeed's
# flags give each rank --local_rank=N after its script: not an option here.)
_dlaunch_run_valued="--hosts --hostfile -H --host-list --include --exclude --launcher -n --nproc-per-node
  --nproc_per_node --nnodes --node-rank --node_rank --rank --master-addr --master_addr
  --master-port --master_port --rdzv-port --rdzv-timeout --secret-file --name --log-dir
  --tensorboard-dir --ranks-filter --grace --hang-timeout --progress-pattern --max-restarts --max_restarts --heartbeat-timeout
  --spares --node-fail-limit --join-timeout --checkpoint-dir --python --ssh-parallel --ssh-timeout -e --env --env-file --forward-env --workdir --chdir --sync
  --image --image-file --container-engine --shm-size --mount --sync-git
  --rdzv-backend --rdzv_backend --rdzv-endpoint --rdzv_endpoint --rdzv-id --rdzv_id --rdzv-conf
  --rdzv_conf -r --redirects -t --tee --local-ranks-filter --local_ranks_filter --local-addr
  --local_addr --role --monitor-interval --monitor_interval --start-method --start_method
  --event-log-handler --event_log_handler --logs-specs --logs_specs --numa-binding --numa_binding
  --signals-to-handle --signals_to_handle --duplicate-stdout-filters --duplicate_stdout_filters
  --duplicate-stderr-filters --duplicate_stderr_filters --log_dir -i --num_nodes --num-nodes
  --num_gpus --num-gpus --num_accelerators --ssh_port --ssh-port --min_elastic_nodes
  --max_elastic_nodes --autotuning --launcher_args --enable_each_rank_log --bind_core_list"
_dlaunch_run_flags="-h --help --version -d --detach --no-forward-env --dry-run -v --verbose -q --quiet --no-skip
  --accept-new-host-keys --rdzv-via-ssh --sync-delete --insecure-no-secret -m --module --no-python
  --no_python --standalone --run-path --run_path --use-env --use_env --virtual-local-rank
  --virtual_local_rank --elastic_training --no_local_rank --pass-local-rank --no_ssh_check
  --force_multi --save_pid --bind_cores_to_rank"

# The state dir, as dlaunch finds it: --log-dir on the line, else
# $DLAUNCH_STATE_DIR, $XDG_STATE_HOME/dlaunch/jobs, ~/.local/state/dlaunch/jobs.
_dlaunch_state_dir() {
  local i
  for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
    if [[ ${COMP_WORDS[i]} == --log-dir ]]; then
      printf '%s\n' "${COMP_WORDS[i + 1]/#\~/$HOME}"
      return
    fi
  done
  if [[ -n ${DLAUNCH_STATE_DIR-} ]]; then
    printf '%s\n' "$DLAUNCH_STATE_DIR"
  elif [[ -n ${XDG_STATE_HOME-} ]]; then
    printf '%s\n' "$XDG_STATE_HOME/dlaunch/jobs"
  else
    printf '%s\n' "$HOME/.local/state/dlaunch/jobs"
  fi
}

_dlaunch_jobs() {
  local dir d names=()
  dir=$(_dlaunch_state_dir)
  [[ -d $dir ]] || return 0
  for d in "$dir"/*/; do
    [[ -d $d ]] || continue
    d=${d%/}
    names+=("${d##*/}")
  done
  COMPREPLY=($(compgen -W "${names[*]}" -- "$1"))
}

_dlaunch_hosts_files() {
  compopt -o filenames 2>/dev/null
  COMPREPLY=($(compgen -f -X '!*.toml' -- "$1") $(compgen -d -- "$1"))
}

# Completes the value of option $1; returns 1 when $1 takes no value.
_dlaunch_value() {
  local opt=$1 cur=$2
  case $opt in
    --hosts) _dlaunch_hosts_files "$cur" ;;
    --hostfile | --secret-file | --env-file | --image-file)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -f -- "$cur"))
      ;;
    --log-dir | --tensorboard-dir | --checkpoint-dir | --sync)
      compopt -o filenames 2>/dev/null
      COMPREPLY=($(compgen -d -- "$cur"))
      ;;
    --launcher) COMPREPLY=($(compgen -W "slurm" -- "$cur")) ;;
    --container-engine) COMPREPLY=($(compgen -W "auto podman docker apptainer enroot" -- "$cur")) ;;
    --image | --shm-size | --mount | --sync-git) COMPREPLY=() ;;
    -n | --nproc-per-node | --nproc_per_node) COMPREPLY=($(compgen -W "auto" -- "$cur")) ;;
    --status)
      COMPREPLY=($(compgen -W "running succeeded failed interrupted lost unknown" -- "$cur"))
      ;;
    --master-addr | --master_addr | -H | --include | --exclude) _known_hosts_real -- "$cur" 2>/dev/null ;;
    --nnodes | --node-rank | --node_rank | --rank | --master-port | --master_port | --rdzv-port | \
      --rdzv-timeout | --name | --ranks-filter | --grace | --max-restarts | --max_restarts | \
      --heartbeat-timeout | --spares | --node-fail-limit | --join-timeout | --ssh-parallel | \
      --ssh-timeout | -r | -i | --instance | --tail | -t | --wait | \
      --interval | --timeout | --matrix-seconds | --nccl-timeout)
      COMPREPLY=()
      ;;
    --matrix-pairs) COMPREPLY=($(compgen -W "auto all sampled" -- "$cur")) ;;
    *) return 1 ;;
  esac
  return 0
}

_dlaunch() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local command="" i word

  # Where the program starts: after "--", or at the first word of a job start
  # that is neither a command, an option nor an option's value.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -- ]]; then
      if ((i == COMP_CWORD - 1)); then
        compopt -o filenames 2>/dev/null
        COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
      else
        compopt -o default 2>/dev/null
        COMPREPLY=()
      fi
      return 0
    fi
    if [[ -z $command && $i -eq 1 && " $_dlaunch_commands " == *" $word "* ]]; then
      command=$word
      continue
    fi
    if [[ -z $command || $command == run ]] && [[ $word != -* ]]; then
      local before=${COMP_WORDS[i - 1]}
      if ((i == 1)) || [[ " $(echo $_dlaunch_run_valued) " != *" $before "* ]] ||
        [[ $before == "$command" ]]; then
        compopt -o default 2>/dev/null
        COMPREPLY=()
        return 0
      fi
    fi
  done
  [[ -z $command ]] && command=run

  if _dlaunch_value "$prev" "$cur"; then return 0; fi

  local opts
  case $command in
    run) opts="$_dlaunch_run_valued $_dlaunch_run_flags" ;;
    list) opts="--log-dir -a --all --status --json -h --help" ;;
    get) opts="--log-dir --json -h --help" ;;
    logs) opts="-r --rank -i --instance --all-ranks -t --tail -f --follow --log-dir -h --help" ;;
    stop) opts="--grace --wait --log-dir -h --help" ;;
    stacks) opts="-r --ranks --timeout --log-dir -h --help" ;;
    delete) opts="--log-dir -h --help" ;;
    top)
      if [[ ${COMP_WORDS[2]} == node ]]; then
        opts="--hosts --hostfile -H --host-list --include --exclude --launcher -d --details --json
          -v --verbose --timeout --ssh-timeout --ssh-parallel --accept-new-host-keys --rdzv-via-ssh
          -h --help"
      else
        opts="--interval --log-dir --json -h --help"
      fi
      ;;
    ui) opts="--listen --token-file -v --verbose --log-dir -h --help" ;;
    metrics) opts="-o --output --log-dir -h --help" ;;
    check)
      opts="--hosts --json -v --verbose --timeout --matrix-seconds --matrix-pairs --nccl --nccl-timeout
        --master-addr --ssh-timeout --ssh-parallel --accept-new-host-keys --rdzv-via-ssh -h --help"
      ;;
  esac

  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    return 0
  fi
  case $command in
    get | logs | stop | stacks | delete) _dlaunch_jobs "$cur" ;;
    top)
      if ((COMP_CWORD == 2)); then
        COMPREPLY=($(compgen -W "node job" -- "$cur"))
      elif [[ ${COMP_WORDS[2]} == job ]]; then
        _dlaunch_jobs "$cur"
      fi
      ;;
    run)
      if ((COMP_CWORD == 1)); then
        COMPREPLY=($(compgen -W "$_dlaunch_commands" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "--" -- "$cur"))
      fi
      ;;
  esac
  return 0
}
complete -F _dlaunch dlaunch
