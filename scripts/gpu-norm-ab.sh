#!/usr/bin/env bash
# One device call: norm kernels A/B, each kernel alone in its process (a long
# sweep in one process drifted), ROUNDS rounds alternating through the list.
# LIST="SHAPE@SPEC ..." (kernel names as the runtime prints them); BINS="redjit
# redjit-old ..." binaries under stage/bin to run each through (two builds side
# by side). An item SHAPE@SPEC@BIN runs through BIN only (a kernel of one build
# against another kernel of another, in the same rounds). EXTRA: more `bench norm`
# arguments for every run (e.g. EXTRA="--offset 100"); TAG: a word put before
# each line (tells apart invocations whose lines are read together). Prints one
# line a run (round, binary, kernel, shape, GB/s, % of copy); logs and JSON in
# $OUT/norm-ab.tgz.
# SHARED=1: instead, one process a shape and round for all of that shape's
# kernels (the launch gap hidden, a sweep repeated within 0.5 %; twentieth
# session), the first binary of BINS.
# DEFAULTS=1: instead, every default kernel of each shape of SHAPES="4x1000003
# ...", one process a binary, shape and round, alternating through BINS (two
# builds' defaults side by side; thirty-fourth session, runs 5 and 7).
set -uo pipefail
RESULTS="${OUT:-/tmp/redjit-out}"
W=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$W/gpu.txt"
# Prints one line a kernel of the bench JSON $1, each led by $2.
lines() {
  python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for k in d["kernels"]:
    print(f"{sys.argv[2]} {k['name']} {k['shape']} {k['gbps']:.0f} GB/s {k['pct_of_copy']:.1f} %")
PY
}
# One `bench norm` process: $1 the JSON/log path without extension, $2 the
# binary, $3 the shape, $4 the label its lines and a failure name, the rest
# more `bench norm` arguments; prints its lines, each led by round and binary.
bench() {
  local j=$1 bin=$2 shape=$3 label=$4
  shift 4
  # shellcheck disable=SC2086 # EXTRA is several words
  REDJIT_REQUIRE_GPU=1 "stage/bin/$bin" bench norm --shapes "$shape" "$@" ${EXTRA:-} \
    --json "$j.json" > "$j.log" 2>&1 || echo "$bin $label round $round rc=$?"
  lines "$j.json" "${TAG:+$TAG }r$round $bin"
}
finish() {
  mkdir -p "$RESULTS"
  tar -C "$W" -czf "$RESULTS/norm-ab.tgz" .
  exit 0
}
if [ "${DEFAULTS:-0}" = 1 ]; then
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for shape in ${SHAPES:?set SHAPES}; do
      for bin in ${BINS:-redjit}; do
        bench "$W/r$round-$bin-$shape" "$bin" "$shape" "$shape"
      done
    done
  done
  finish
fi
if [ "${SHARED:-0}" = 1 ]; then
  bin=${BINS:-redjit}
  bin=${bin%% *}
  shapes=$(for item in ${LIST:?set LIST}; do echo "${item%%@*}"; done | awk '!seen[$0]++')
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for shape in $shapes; do
      args=()
      for item in $LIST; do
        [ "${item%%@*}" = "$shape" ] && args+=(--spec "${item#*@}")
      done
      bench "$W/r$round-$bin-$shape" "$bin" "$shape" "$shape" "${args[@]}"
    done
  done
  finish
fi
for round in $(seq 1 "${ROUNDS:-3}"); do
  for item in ${LIST:?set LIST}; do
    shape=${item%%@*}
    rest=${item#*@}
    spec=${rest%%@*}
    bins=${BINS:-redjit}
    [ "$rest" != "$spec" ] && bins=${rest#*@}
    for bin in $bins; do
      bench "$W/r$round-$bin-$spec-$shape" "$bin" "$shape" "$item" --spec "$spec"
    done
  done
done
finish
