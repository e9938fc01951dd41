#!/usr/bin/env bash
# Run one command as N local processes of one jax.distributed job on the CPU (127.0.0.1), each with its
# own fake CPU devices: the multi-host code paths (sharded inputs, cross-process collectives, primary-only
# writes, failure handling) on one machine.
#
# Usage: launch/multiprocess_cpu.sh [--dry-run] [--devices D] [--port P] [--log-dir DIR] N CMD [ARG...]
#   N          number of processes (>= 1)
#   CMD ARG... the command every process runs; a leading `stylebench` becomes `$PYTHON -m stylebench_jax.cli`
#   --devices  fake CPU devices per process (default: $FAKE_DEVICES or 2)
#   --port     coordinator port on 127.0.0.1 (default: a free port)
#   --log-dir  where each process's runtime log and pid go (STYLEBENCH_LOG_DIR; default $TMPDIR or /tmp):
#              stylebench-process-I.log, process-I.pid
#   --dry-run  print the N command lines (environment included) and exit
# Example: launch/multiprocess_cpu.sh 2 stylebench embed --model minilm --input t.txt --output e.npy
# Exit status: 0 when every process succeeded, else the status of the first process that failed.
#   The others then have the heartbeat timeout + 15 s to notice and leave, then get SIGINT, then SIGKILL
#   after $STOP_GRACE s (default 10); a SIGTERM to this script stops them at once the same way.
set -euo pipefail

dry_run=0
devices=${FAKE_DEVICES:-2}
port=""
log_dir=${STYLEBENCH_LOG_DIR:-${TMPDIR:-/tmp}}
python=${PYTHON:-python3}

usage() { sed -n '6,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --dry-run) dry_run=1; shift ;;
    --devices) devices=${2:?--devices needs a number}; shift 2 ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --log-dir) log_dir=${2:?--log-dir needs a directory}; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "multiprocess_cpu.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[[ $# -ge 2 ]] || usage
n=$1; shift
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "multiprocess_cpu.sh: N must be a positive integer, got '$n'" >&2; exit 2; }
[[ $devices =~ ^[1-9][0-9]*$ ]] || { echo "multiprocess_cpu.sh: --devices must be a positive integer" >&2; exit 2; }

if [[ $1 == stylebench ]]; then
  shift
  set -- "$python" -m stylebench_jax.cli "$@"
fi
if [[ -z $port ]]; then
  if [[ $dry_run == 1 ]]; then
    port=PORT
  else
    port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  fi
fi
# Drop any device count already in XLA_FLAGS (e.g. a test session's) so each process gets $devices.
xla_flags=$(printf '%s' "${XLA_FLAGS:-}" | sed -E 's/--xla_force_host_platform_device_count=[^ ]*//g; s/^ +| +$//g')
xla_flags="${xla_flags:+$xla_flags }--xla_force_host_platform_device_count=$devices"

environment() {  # the variables of process $1, as NAME=VALUE words
  printf '%s\n' "STYLEBENCH_DISTRIBUTED=1" "JAX_PLATFORMS=cpu" "JAX_COORDINATOR_ADDRESS=127.0.0.1:$port" \
    "JAX_NUM_PROCESSES=$n" "JAX_PROCESS_ID=$1" "STYLEBENCH_LOG_DIR=$log_dir" "XLA_FLAGS=$xla_flags"
}

if [[ $dry_run == 1 ]]; then
  for ((i = 0; i < n; i++)); do
    line=""
    while IFS= read -r assignment; do
      line+="${assignment%%=*}=$(printf '%q' "${assignment#*=}") "
    done < <(environment "$i")
    printf '%s%s\n' "$line" "$(printf '%q ' "$@" | sed 's/ $//')"
  done
  exit 0
fi

mkdir -p "$log_dir"
pids=()
grace=${STOP_GRACE:-10}  # seconds a stopped process gets to leave before it is killed
# After a process fails the others normally notice within the heartbeat timeout and leave with one
# line naming the failed process; those still running this long after are stopped (e.g. a process
# waiting to reach a coordinator that never started).
settle=$(( ${STYLEBENCH_HEARTBEAT_TIMEOUT:-30} + 15 ))
# Stop every process still running, after $1 seconds: SIGINT to each process (the child of its
# subshell; SIGTERM would only reach JAX's preemption handler, which ignores it), then SIGKILL to
# what is left after $grace s. A Ctrl-C has already sent SIGINT to the whole process group: then only
# the SIGKILL is scheduled.
# shellcheck disable=SC2317  # called by the traps and on the first failure
stop() {
  local delay=$1 interrupt=$2 targets
  [[ -z $stopper ]] || return 0
  targets=("${!running[@]}")  # the subshells of the processes still running
  (
    sleep "$delay"
    [[ $interrupt == 0 ]] || for pid in "${targets[@]}"; do pkill -INT -P "$pid" 2>/dev/null || true; done
    sleep "$grace"
    for pid in "${targets[@]}"; do pkill -KILL -P "$pid" 2>/dev/null || true; done
  ) >/dev/null 2>&1 &  # off this script's pipes, which a reader waits on
  stopper=$!
}
stopper=""
declare -A index running
trap 'stop 0 0' INT
trap 'stop 0 1' TERM
for ((i = 0; i < n; i++)); do
  mapfile -t assignments < <(environment "$i")
  # The subshell keeps bash's "Aborted"/"Killed" job notices off the terminal (the process's own
  # output goes to fd 3, the terminal): a dying process reports itself in one line (parallel/guard.py).
  ( env "${assignments[@]}" "$@" 2>&3 3>&-; status=$?; exit "$status" ) 3>&2 2>/dev/null &
  pids+=($!)
  running[$!]=1
  echo "$!" > "$log_dir/process-$i.pid"
done
# Wait for the processes in the order they finish; after the first failure the others are stopped
# once $settle s have passed (they could otherwise wait for the failed one until a start-up or
# collective timeout, minutes).
for i in "${!pids[@]}"; do index[${pids[$i]}]=$i; done
status=0
while (( ${#running[@]} > 0 )); do
  finished=""
  if wait -n -p finished "${!running[@]}"; then code=0; else code=$?; fi
  [[ -n ${finished:-} ]] || continue  # a trapped signal interrupted the wait (and unset the name)
  unset "running[$finished]"
  if (( code != 0 )); then
    echo "multiprocess_cpu.sh: process ${index[$finished]} exited with status $code" >&2
    if [[ $status == 0 ]]; then
      status=$code
      (( ${#running[@]} == 0 )) || stop "$settle" 1
    fi
  fi
done
[[ -z $stopper ]] || kill "$stopper" 2>/dev/null || true
exit "$status"
