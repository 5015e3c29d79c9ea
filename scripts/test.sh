#!/usr/bin/env bash
# THE test command (README; `.ci/run` runs exactly this). Needs no GPU: installs the
# pinned NVRTC 13.0.88 and ptxas into .tools/cuda when missing (scripts/cuda-tools.sh),
# then runs fmt, the module-cycle check, clippy with warnings as errors, every test of the workspace
# (doctests included), and rustdoc with warnings as errors; then the same for
# redjit-candle (candle/), after installing CUDA 13.0's nvcc and headers into
# .tools/cuda-toolkit (scripts/cuda-toolkit.sh).
# REDJIT_REQUIRE_NVRTC=1 makes the NVRTC and ptxas tests fail, never skip, when
# those tools are missing. GPU tests are #[ignore]d here (see scripts/gpu.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cuda-tools.sh
export REDJIT_REQUIRE_NVRTC=1

run() {
  echo "+ $*" >&2
  "$@"
}

echo "redjit: NVRTC and ptxas from $REDJIT_CUDA_LIB and $REDJIT_PTXAS; REDJIT_REQUIRE_NVRTC=1" >&2
run cargo fmt --all --check
# No module of a crate imports one that imports it back (scripts/module_cycles.py).
run python3 scripts/module_cycles.py codegen/src runtime/src cli/src macros/src src examples/collectives/src candle/src
run cargo clippy --workspace --all-targets -- -D warnings
# The runtime beside a crate that has cudarc link the CUDA libraries (candle's
# CUDA build): it builds in that mode too (checked, not linked: no CUDA here).
run cargo check -p redjit-runtime --features cudarc/dynamic-linking
run cargo test --workspace
RUSTDOCFLAGS="-D warnings" run cargo doc --workspace --no-deps

# redjit-candle, its own workspace (candle's CUDA build has cudarc link the
# CUDA libraries): candle's CUDA crate compiles with nvcc from the toolkit
# wheels, and its test binaries run against link-only stubs whose driver
# reports no device (scripts/cuda-toolkit.sh); its GPU tests are #[ignore]d.
source scripts/cuda-toolkit.sh
candle=(--manifest-path candle/Cargo.toml --target-dir target)
run cargo fmt --manifest-path candle/Cargo.toml --check
run env LD_LIBRARY_PATH="$REDJIT_TOOLKIT_STUBS/run:$REDJIT_TOOLKIT_HOME/lib:$LD_LIBRARY_PATH" cargo test "${candle[@]}"
run cargo clippy "${candle[@]}" --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" run cargo doc "${candle[@]}" --no-deps
echo "redjit: all checks passed" >&2
