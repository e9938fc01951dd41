#!/usr/bin/env bash
# Usage: launch/local.sh embed --model minilm --input texts.txt --output emb.npy --mesh data=4,model=2
# FAKE_DEVICES=8 splits the CPU into 8 XLA devices to exercise sharded code paths.
set -euo pipefail
if [[ -n "${FAKE_DEVICES:-}" ]]; then
  export XLA_FLAGS="${XLA_FLAGS:-} --xla_force_host_platform_device_count=${FAKE_DEVICES}"
fi
exec python3 -m stylebench_jax.cli "$@"
