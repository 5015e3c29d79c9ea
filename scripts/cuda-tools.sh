#!/usr/bin/env bash
# Sourced by scripts/test.sh and scripts/gpu.sh: installs, only when missing, the
# pinned NVRTC (nvidia-cuda-nvrtc==13.0.88) and ptxas (from nvidia-cuda-nvcc==13.0.88)
# from PyPI into the project-local, git-ignored .tools/cuda, and exports the paths
# the build and the tests use. 13.0.88 is pinned because the GPU machines' driver
# era is CUDA 13.0: newer NVRTC emits PTX that driver rejects, and the PTX
# snapshots are taken with this version.
# Sourced: it sets no shell options of its own (the callers run with set -euo
# pipefail); a failed install returns non-zero, which stops them.
REDJIT_ROOT="${REDJIT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
REDJIT_TOOLS="$REDJIT_ROOT/.tools/cuda"
REDJIT_CUDA_LIB="$REDJIT_TOOLS/nvidia/cu13/lib"
REDJIT_CUDA_BIN="$REDJIT_TOOLS/nvidia/cu13/bin"
NVRTC_PIN="nvidia-cuda-nvrtc==13.0.88"
NVCC_PIN="nvidia-cuda-nvcc==13.0.88"

if [ ! -f "$REDJIT_CUDA_LIB/libnvrtc.so.13" ] || [ ! -x "$REDJIT_CUDA_BIN/ptxas" ]; then
  echo "redjit: installing $NVRTC_PIN and $NVCC_PIN into $REDJIT_TOOLS" >&2
  mkdir -p "$REDJIT_TOOLS"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$REDJIT_TOOLS" \
    --upgrade "$NVRTC_PIN" "$NVCC_PIN" >&2 || return 1
fi
# cudarc dlopens "libnvrtc.so.13" through the loader's search path; ptxas is found on PATH.
export LD_LIBRARY_PATH="$REDJIT_CUDA_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="$REDJIT_CUDA_BIN:$PATH"
export REDJIT_PTXAS="$REDJIT_CUDA_BIN/ptxas"

# Optional: cuobjdump and nvdisasm for `redjit sass`, in their own folder (pip
# --target replaces a target's top-level folders, so sharing .tools/cuda would
# remove NVRTC). PyPI has no 13.0 cuobjdump; these versions read sm_90 cubins.
# A failed install (offline) only warns, and is not retried until
# .tools/cuda-sass/.install-failed is removed: the tests do not need them.
REDJIT_SASS_TOOLS="$REDJIT_ROOT/.tools/cuda-sass"
REDJIT_SASS_BIN="$REDJIT_SASS_TOOLS/nvidia/cu13/bin"
CUOBJDUMP_PIN="nvidia-cuda-cuobjdump==13.2.78"
NVDISASM_PIN="nvidia-cuda-nvdisasm==13.5.37"
if { [ ! -x "$REDJIT_SASS_BIN/cuobjdump" ] || [ ! -x "$REDJIT_SASS_BIN/nvdisasm" ]; } &&
  [ ! -f "$REDJIT_SASS_TOOLS/.install-failed" ]; then
  echo "redjit: installing $CUOBJDUMP_PIN and $NVDISASM_PIN into $REDJIT_SASS_TOOLS (optional, for redjit sass)" >&2
  mkdir -p "$REDJIT_SASS_TOOLS"
  if ! python3 -m pip install --quiet --disable-pip-version-check --no-deps --retries 0 --timeout 20 \
    --target "$REDJIT_SASS_TOOLS" --upgrade "$CUOBJDUMP_PIN" "$NVDISASM_PIN" >&2; then
    echo "redjit: warning: could not install cuobjdump/nvdisasm; redjit sass will say so (rm $REDJIT_SASS_TOOLS/.install-failed to retry)" >&2
    touch "$REDJIT_SASS_TOOLS/.install-failed"
  fi
fi
if [ -d "$REDJIT_SASS_BIN" ]; then
  export PATH="$REDJIT_SASS_BIN:$PATH"
fi
