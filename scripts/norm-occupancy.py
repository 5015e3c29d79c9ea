#!/usr/bin/env python3
"""Sweeps the norm kernels' launch bound (.minnctapersm 1, 2, 3, 4, 6, 8) through
ptxas for sm_90 and prints, per kernel, the most blocks per SM that compile
without a stack frame or a spill, with (registers, spill + stack bytes) at each.
codegen/src/spec/norm/measured.rs's OCCUPANCY table (whole-pack kernels) and
OCCUPANCY_GENERAL table (the general twins, `--general`) are the minimum of these
over the dtype pairs of each (op, layout, same/mixed dtypes) group.

Usage (NVRTC and ptxas on PATH / LD_LIBRARY_PATH, see scripts/cuda-tools.sh):
    python3 scripts/norm-occupancy.py [--general] [--jobs N] [path/to/redjit] > sweep.log
"""
import argparse
import concurrent.futures
import itertools
import re
import subprocess
import tempfile

OPS = ["softmax_safe", "softmax_online", "logsoftmax_online", "layernorm", "layernorm_res", "rmsnorm", "rmsnorm_res"]
DTYPES = [("f32", "f32"), ("bf16", "bf16"), ("f16", "f16"), ("bf16", "f32"), ("f32", "bf16")]
LAYOUTS = ["w32x1", "w32x2", "w32x4", "w32x8", "b256x2", "b256x4", "b256x8", "b512x4", "b512x8",
           "s256x8", "s512x4", "s512x8"]


def sweep(redjit, name, threads):
    p = subprocess.run([redjit, "ptx", "--arch", "sm_90", "--spec", name], capture_output=True, text=True)
    if p.returncode:
        return f"{name} error: {p.stderr.strip()[:200]}"
    row = {}
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        for mb in [1, 2, 3, 4, 6, 8]:
            if threads * mb > 2048:
                break
            ptx = re.sub(r"\.minnctapersm \d+", f".minnctapersm {mb}", p.stdout)
            f.seek(0)
            f.truncate()
            f.write(ptx)
            f.flush()
            q = subprocess.run(["ptxas", "-arch=sm_90", "-v", f.name, "-o", "/dev/null"],
                               capture_output=True, text=True).stderr
            regs = int(re.search(r"Used (\d+) registers", q).group(1))
            spill = int(re.search(r"(\d+) bytes spill stores", q).group(1))
            stack = int(re.search(r"(\d+) bytes stack frame", q).group(1))
            row[mb] = (regs, spill + stack)
    best = max([mb for mb, (_, s) in row.items() if s == 0] or [0])
    return f"{name} {best} {row}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("redjit", nargs="?", default="target/release/redjit")
    ap.add_argument("--general", action="store_true", help="the general twins (_g)")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    jobs = []
    for op, (i, o), lay in itertools.product(OPS, DTYPES, LAYOUTS):
        if op == "softmax_safe" and lay.startswith("s"):
            continue  # the split layout runs the online algorithm
        name = f"norm_{op}_{i}_{o}_{lay}" + ("_g" if a.general else "")
        threads = 256 if lay.startswith("w") else int(re.match(r"[bs](\d+)", lay).group(1))
        jobs.append((name, threads))
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for line in ex.map(lambda j: sweep(a.redjit, *j), jobs):
            print(line, flush=True)


if __name__ == "__main__":
    main()
