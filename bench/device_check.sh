#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: set up the CUDA variant of the stack, check it, run a short
# ResNeSt-50 and BERT-base training-step loop on one GPU (float32 and float16) and the
# communication bench, and write bench/results/device_*.json. Nothing else depends on a GPU;
# on a CPU machine this script stops with one line.
#
#     CUDA=117 bash bench/device_check.sh      # MXNet 1.9.1's CUDA wheels: 101 102 110 112 117
set -euo pipefail
cd "$(dirname "$0")/.."
CUDA="${CUDA:-117}"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "error: no NVIDIA GPU here (nvidia-smi lists none); run bench/device_check.sh on a GPU machine" >&2
    exit 2
fi
# the pinned stack (MXNet 1.9.1, numpy 1.23.5) installs on Python 3.11 only, from the registry
PY="${PYTHON:-python3.11}"
if ! command -v "$PY" >/dev/null 2>&1; then
    echo "error: $PY not found; MXNet 1.9.1's stack needs Python 3.11 (set PYTHON=/path/to/python3.11)" >&2
    exit 2
fi
make setup CUDA="$CUDA" PYTHON="$PY"
.venv/bin/gluon-suite info --json > bench/results/device_info.json
.venv/bin/gluon-suite info
.venv/bin/python bench/device_steps.py --ctx gpu:0 --steps "${STEPS:-20}" \
    --out bench/results/device_steps.json
# the communication bench on this machine's devices (its own JSON is copied beside the others)
.venv/bin/python bench/comm.py
cp bench/results/comm.json bench/results/device_comm.json
echo "results: bench/results/device_info.json device_steps.json device_comm.json"
