#!/usr/bin/env bash
# Sourced by scripts/test.sh and scripts/gpu.sh before they build redjit-candle:
# candle-core's `cuda` feature compiles candle-kernels with nvcc and has cudarc
# link the CUDA libraries. This installs, only when missing, CUDA 13.0's nvcc,
# NVVM, device headers, runtime and CCCL from PyPI into the git-ignored
# .tools/cuda-toolkit, and generates link-only stubs of the libraries no wheel
# here ships (the driver, cuBLAS, cuBLASLt, cuRAND, NCCL): every function of
# cudarc's bindings returns CUDA_ERROR_STUB_LIBRARY (34), as the toolkit's own
# stubs do. The stubs never reach a GPU machine; there the real libraries load
# by their sonames (the driver's and PyTorch's wheels).
# Sourced: no shell options of its own; a failed step returns non-zero.
REDJIT_ROOT="${REDJIT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
REDJIT_TOOLKIT="$REDJIT_ROOT/.tools/cuda-toolkit"
REDJIT_TOOLKIT_HOME="$REDJIT_TOOLKIT/nvidia/cu13"
REDJIT_TOOLKIT_STUBS="$REDJIT_TOOLKIT_HOME/lib/stubs"
# 13.0 like NVRTC (scripts/cuda-tools.sh): the GPU machines' driver is CUDA 13.0.
TOOLKIT_PINS=(nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88
  nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85)

if [ ! -x "$REDJIT_TOOLKIT_HOME/bin/nvcc" ] || [ ! -x "$REDJIT_TOOLKIT_HOME/nvvm/bin/cicc" ] ||
  [ ! -f "$REDJIT_TOOLKIT_HOME/lib/libcudart.so.13" ] || [ ! -d "$REDJIT_TOOLKIT_HOME/include/cccl" ]; then
  echo "redjit: installing ${TOOLKIT_PINS[*]} into $REDJIT_TOOLKIT" >&2
  mkdir -p "$REDJIT_TOOLKIT"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$REDJIT_TOOLKIT" \
    --upgrade "${TOOLKIT_PINS[@]}" >&2 || return 1
  rm -rf "$REDJIT_TOOLKIT_STUBS"
fi

# The link names the wheels' versioned files lack.
ln -sf libcudart.so.13 "$REDJIT_TOOLKIT_HOME/lib/libcudart.so"
ln -sf "$REDJIT_ROOT/.tools/cuda/nvidia/cu13/lib/libnvrtc.so.13" "$REDJIT_TOOLKIT_HOME/lib/libnvrtc.so"

if [ ! -f "$REDJIT_TOOLKIT_STUBS/.done" ]; then
  python3 "$REDJIT_ROOT/scripts/cuda_stubs.py" "$REDJIT_TOOLKIT_STUBS" >&2 || return 1
fi

# candle-kernels' builder finds nvcc through NVCC; cudarc links from CUDA_HOME/lib
# and CUDA_HOME/lib/stubs; no GPU here to ask for the arch.
export NVCC="$REDJIT_TOOLKIT_HOME/bin/nvcc"
export CUDA_HOME="$REDJIT_TOOLKIT_HOME"
export CUDA_COMPUTE_CAP="${CUDA_COMPUTE_CAP:-90}"
