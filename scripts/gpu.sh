#!/usr/bin/env bash
# Builds, here, everything a GPU run needs and stages it in the git-ignored
# folder stage/ (name it in the device tool's `carry`); scripts/gpu-run.sh then
# runs it on the GPU machine, which has no Rust.
#   stage/bin/<test>     the integration-test binaries (GPU tests are #[ignore]d;
#                        run with --ignored)
#   stage/bin/redjit     the CLI (bench, info, selftest)
#   stage/bin/redjit-example-collectives   the #[reduce_copy] example (its GPU
#                        test binary is stage/bin/example)
#   stage/scripts/       torch_ref.py and the gpu-*.sh runs
#   stage/bin/redjit-base  with BASE_REV=<rev>: the CLI built at that revision
#   stage/candle.tar.xz    with CANDLE=1: redjit-candle's tests and examples, packed
#                        (a worktree in /tmp), for A/B runs in one device call
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/cuda-tools.sh
rm -rf stage && mkdir -p stage/bin stage/scripts
# CANDLE=only: redjit-candle's alone (below).
[ "${CANDLE:-0}" = only ] || {
cargo build --release -p redjit-cli -p redjit-example-collectives
cargo test --release --no-run --message-format=json -p redjit -p redjit-example-collectives 2>/dev/null |
  python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["executable"])
' | while read -r exe; do
  name=$(basename "$exe" | sed 's/-[0-9a-f]\{16\}$//')
  # Only the binaries with GPU tests travel (the carry limit is 64 MiB); the
  # CPU tests run here, in the README's test command.
  case "$name" in gpu_* | macro_gpu | example) cp "$exe" "stage/bin/$name" ;; esac
done
cp "${CARGO_TARGET_DIR:-target}/release/redjit" stage/bin/redjit
cp "${CARGO_TARGET_DIR:-target}/release/redjit-example-collectives" stage/bin/
if [ -n "${BASE_REV:-}" ]; then
  base=/tmp/redjit-base-$(git rev-parse --short "$BASE_REV")
  [ -d "$base" ] || git worktree add --detach "$base" "$BASE_REV"
  (cd "$base" && CARGO_TARGET_DIR="$base/target" cargo build --release -p redjit-cli)
  cp "$base/target/release/redjit" stage/bin/redjit-base
  git -C "$base" log --oneline -1 >stage/base-rev.txt
fi
}
# CANDLE=1 (or only): redjit-candle's GPU and CPU tests and its two examples, as
# stage/bin/candle_{gpu,cpu,bench,block} (its own workspace; candle's CUDA
# crate builds with the toolkit wheels of scripts/cuda-toolkit.sh, for sm_90
# unless CUDA_COMPUTE_CAP says otherwise).
if [ "${CANDLE:-0}" != 0 ]; then
  source scripts/cuda-toolkit.sh
  cargo build --release --manifest-path candle/Cargo.toml --target-dir "${CARGO_TARGET_DIR:-target}" \
    --tests --examples --message-format=json 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in ("gpu", "cpu", "bench", "block"):
        print(m["target"]["name"], m["executable"])
' | while read -r name exe; do cp "$exe" "stage/bin/candle_$name"; done
fi
# Debug info stays here; the GPU machine needs only code (the carry limit is 64 MiB).
strip stage/bin/* 2>/dev/null || true
if [ "${CANDLE:-0}" != 0 ]; then
  # Each candle binary holds candle-kernels' compiled kernels (tens of MB, the
  # same bytes in each): packed together they fit the carry limit;
  # gpu-run.sh candle unpacks them.
  (cd stage/bin && tar -cf - candle_* | xz -9 -T2 >../candle.tar.xz && rm candle_*)
fi
cp scripts/torch_ref.py scripts/gpu-*.sh stage/scripts/ 2>/dev/null || true
du -sh stage; ls -la stage/bin
