#!/usr/bin/env python3
"""Writes the reduce_copy section of BENCHMARKS.md from `redjit bench reduce-copy --json`
output (with --compare, so PyTorch's figures from the same device call are in it).

    python3 scripts/benchmarks_md.py bench.json > section.md
"""
import json
import sys


def main() -> None:
    bench = json.load(open(sys.argv[1]))
    copy = bench["copy_gbps"]
    print(f"GPU: {bench['gpu']} ({bench['arch']}), driver {bench['driver']}, date {bench['date']}.")
    print(f"n = {bench['n']} elements (2^28), median of {bench['iters']} launches (CUDA events), "
          f"device-to-device copy measured in the same run: {copy:.0f} GB/s (read + write).")
    print("GB/s counts each input read once and each output written once.")
    print()
    print("| kernel | config | B/elem | µs | GB/s | % of copy | PyTorch eager GB/s | torch.compile GB/s | vs torch.compile |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in sorted(bench["kernels"], key=lambda k: (k["unroll"], k["transport"], k["config"] is None, k["config"] or 0, k["srcs"], k["dsts"])):
        eager = k.get("torch_eager_gbps")
        comp = k.get("torch_compile_gbps")
        cfg = "-" if k["config"] is None else str(k["config"])
        ratio = f"{k['gbps'] / comp:.2f}×" if comp else "-"
        fmt = lambda v: f"{v:.0f}" if v else "-"
        print(f"| `{k['name']}` | {cfg} | {k['bytes_per_elem']} | {k['median_us']:.1f} | {k['gbps']:.0f} | "
              f"{k['pct_of_copy']:.1f} % | {fmt(eager)} | {fmt(comp)} | {ratio} |")


if __name__ == "__main__":
    main()
