#!/usr/bin/env python3
"""A markdown table of `redjit bench norm --json` beside the PyTorch, torch.compile
and Triton figures `scripts/torch_ref.py --families norm` wrote in the same call,
with the issue's two bars for each cell (>= 95 % of the copy measured in the run
for that size, and >= 0.98x the best of PyTorch eager, torch.compile and Triton).

    python3 scripts/norm_table_md.py bench-norm.json torch-norm.json
"""
import json
import sys


def torch_key(name: str) -> str:
    # norm_softmax_online_bf16_bf16_b512x16_p -> norm_softmax_bf16_bf16
    parts = name.split("_")
    op = parts[1]
    rest = parts[2:]
    if rest[0] in ("safe", "online"):
        rest = rest[1:]
    if rest[0] == "res":
        op += "_res"
        rest = rest[1:]
    return f"norm_{op}_{rest[0]}_{rest[1]}"


def main() -> None:
    bench = json.load(open(sys.argv[1]))
    torch = json.load(open(sys.argv[2]))
    refs = {(e["name"], e["shape"]): e for e in torch["entries"]}
    met = total = 0
    print("| shape | kernel | GB/s | % copy | torch eager | torch.compile | Triton | vs best of them | bars |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in sorted(bench["kernels"], key=lambda k: (k["n"], k["shape"], "bf16" in k["name"], k["name"])):
        e = refs.get((torch_key(k["name"]), k["shape"]), {})
        anchors = [v for v in (e.get("eager_gbps"), e.get("compile_gbps"), e.get("triton_gbps")) if v]
        best = max(anchors) if anchors else None
        vs = k["gbps"] / best if best else None
        ok = k["pct_of_copy"] >= 95.0 and (vs is None or vs >= 0.98)
        met += ok
        total += 1
        fmt = lambda v: f"{v:.0f}" if v else "-"
        print(f"| {k['shape']} | `{k['name']}` | {k['gbps']:.0f} | {k['pct_of_copy']:.1f} | "
              f"{fmt(e.get('eager_gbps'))} | {fmt(e.get('compile_gbps'))} | {fmt(e.get('triton_gbps'))} | "
              f"{f'{vs:.2f}x' if vs else '-'} | {'met' if ok else 'not met'} |")
    print()
    print(f"{met} of {total} cells meet both bars.")


if __name__ == "__main__":
    main()
