#!/usr/bin/env bash
# Usage: launch/tpu_pod.sh TPU_NAME ZONE eval --models minilm --suite full --output gs-or-nfs-dir
# Runs the same command on every worker of the slice; jax.distributed.initialize() reads the TPU
# metadata, so only STYLEBENCH_DISTRIBUTED=1 is needed.
set -euo pipefail
tpu_name=$1; zone=$2; shift 2
gcloud compute tpus tpu-vm ssh "$tpu_name" --zone "$zone" --worker=all --command \
  "cd ~/stylebench_jax && STYLEBENCH_DISTRIBUTED=1 python3 -m stylebench_jax.cli $(printf '%q ' "$@")"
