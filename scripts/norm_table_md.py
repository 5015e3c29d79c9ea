#!/usr/bin/env python3
"""A markdown table of `redjit bench norm --json` beside the PyTorch, torch.compile
Triton and Liger-Kernel figures `scripts/torch_ref.py --families norm` wrote in the same call,
with the issue's two bars for each cell (>= 95 % of the copy measured in the run
for that size, and >= 0.98x the best of PyTorch eager, torch.compile, Triton and Liger, where each ran).
It also compares each kernel with a copy of its own row bytes measured in the same
call ("% same B": x and out, and a residual's two streams, / 8 f32; the weight and
bias left out, as `redjit bench norm` does), where the JSON's copy list has that
size, and counts the cells that meet the bars against it.

    python3 scripts/norm_table_md.py bench-norm.json torch-norm.json
"""
import json
import sys


def parse_name(name: str) -> tuple[str, bool, str, str]:
    """norm_softmax_online_bf16_bf16_b512x16_p -> ("softmax", False, "bf16", "bf16")."""
    parts = name.split("_")
    op, rest = parts[1], parts[2:]
    if rest[0] in ("safe", "online"):
        rest = rest[1:]
    residual = rest[0] == "res"
    if residual:
        rest = rest[1:]
    return op, residual, rest[0], rest[1]


def torch_key(name: str) -> str:
    # norm_softmax_online_bf16_bf16_b512x16_p -> norm_softmax_bf16_bf16
    op, residual, input, output = parse_name(name)
    return f"norm_{op}{'_res' if residual else ''}_{input}_{output}"


def row_copy_n(k: dict) -> int:
    """f32 elements of the copy that moves the kernel's row streams."""
    cols = int(k["shape"].split("x")[1])
    op, _, input, _ = parse_name(k["name"])
    size = {"f32": 4, "bf16": 2, "f16": 2}
    vectors = {"layernorm": 2, "rmsnorm": 1}.get(op, 0)
    return (k["bytes"] - vectors * cols * size[input]) // 8


def main() -> None:
    bench = json.load(open(sys.argv[1]))
    torch = json.load(open(sys.argv[2]))
    refs = {(e["name"], e["shape"]): e for e in torch["entries"]}
    copies = {c["n"]: c["gbps"] for c in bench.get("copy", [])}
    met = met_same = total = 0
    print("| shape | kernel | GB/s | % copy | % same B | torch eager | torch.compile | Triton | Liger | vs best of them | bars (copy of n f32 / same B) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k in sorted(bench["kernels"], key=lambda k: (k["n"], k["shape"], "bf16" in k["name"], k["name"])):
        e = refs.get((torch_key(k["name"]), k["shape"]), {})
        anchors = [v for v in (e.get("eager_gbps"), e.get("compile_gbps"), e.get("triton_gbps"), e.get("liger_gbps")) if v]
        best = max(anchors) if anchors else None
        vs = k["gbps"] / best if best else None
        fast = vs is None or vs >= 0.98
        row_copy = copies.get(row_copy_n(k))
        same = 100.0 * k["gbps"] / row_copy if row_copy else None
        ok = k["pct_of_copy"] >= 95.0 and fast
        ok_same = same is not None and same >= 95.0 and fast
        met += ok
        met_same += ok_same
        total += 1
        fmt = lambda v: f"{v:.0f}" if v else "-"
        word = lambda b: "met" if b else "not met"
        print(f"| {k['shape']} | `{k['name']}` | {k['gbps']:.0f} | {k['pct_of_copy']:.1f} | "
              f"{f'{same:.1f}' if same is not None else '-'} | "
              f"{fmt(e.get('eager_gbps'))} | {fmt(e.get('compile_gbps'))} | {fmt(e.get('triton_gbps'))} | {fmt(e.get('liger_gbps'))} | "
              f"{f'{vs:.2f}x' if vs else '-'} | {word(ok)} / {word(ok_same) if same is not None else '-'} |")
    print()
    print(f"{met} of {total} cells meet both bars against the copy of n f32.")
    print(f"{met_same} of {total} cells meet both bars against a copy of their own row bytes "
          f"(cells without that copy in the JSON count as not met).")


if __name__ == "__main__":
    main()
