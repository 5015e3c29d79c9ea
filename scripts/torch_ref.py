#!/usr/bin/env python3
"""PyTorch reference for `redjit bench <reduce-copy|reduce|all> --compare`.

For every reduce_copy form redjit benchmarks -- the 8 two-source seed configs and
the 4 one-source forms, for transport bf16 and f16 (accum is float32) -- times
PyTorch eager and torch.compile (mode default, fullgraph=True) of the same
function with CUDA events (warm-up, then the median of --iters launches timed one
by one), and the device-to-device copy of n float32 (b.copy_(a)). Eager runs the
one natural single-kernel expression; torch.compile is given every candidate
expression and the fastest is reported (all are kept in compile_variants_us).

Timed calls take their inputs from rotated copies covering at least 4x L2 (at
most 256 copies and a quarter of the device's memory), as `redjit bench` rotates
its buffers, so that no call finds its inputs in L2 from the call before; the
norms' weight and bias are one copy, as in `redjit bench`; outputs that PyTorch
allocates come from its caching allocator. Each entry records "rotations".
--l2-rotate 0 times every call on the same buffers (how this script timed before
2026-11-28's thirty-fourth session: inputs that fit in L2 stayed there).

GB/s counts the bytes redjit counts: every input read once, the output written
once (1e9 bytes/s). Config numbering: src0_is_accum*4 | src1_is_accum*2 |
dst0_is_accum; one-source forms have config null.

Writes JSON to --out:
  {"gpu", "torch", "triton", "date", "n", "iters", "copy_gbps",
   "entries": [{"config", "transport", "srcs", "dsts", "bytes_per_elem",
                "eager_gbps", "compile_gbps", "eager_us", "compile_us",
                "eager_expr", "compile_expr", "compile_variants_us",
                "compile_error"?}]}
A failed torch.compile records null and its error; the run goes on.

With --sizes (a sweep, as `redjit bench --sizes` takes it: 1M,16M,2^28) every
entry carries its own "n", and the copy is measured at each size ("copy": [{n,
gbps, us}]). --families picks reduce_copy and/or reduce. reduce entries carry
"family": "reduce", the redjit kernel "name" they stand for and, for row and
column sums, "shape" ROWSxCOLS: torch.sum(x, dtype=float32), torch.amax,
torch.argmax, torch.var (unbiased), torch.dot, torch.logsumexp over the whole
array at each size, and x.view(R, C).sum(dim=1 or 0, dtype=float32) at
32768x4096 and 8192x16384; inputs float32 and bfloat16. GB/s counts what redjit
counts: every input element read once, the results written once.

--families norm adds the norm family (entries "family": "norm", "name"
norm_<op>[_res]_<dtype>_<dtype> as `redjit bench norm` keys them, "shape"):
torch.softmax, torch.log_softmax, F.layer_norm (weight, bias), F.rms_norm
(weight) and the fused residual forms (h = x + r; norm(h), both returned) at
the issue's shapes, float32 and bfloat16, eager and torch.compile; and, where
Triton is importable, the textbook one-row-per-program Triton softmax and
RMSNorm (whole row in registers, BLOCK = next_power_of_2(cols), 4/8/16 warps
by block size; rows up to 32768) as "triton_gbps". GB/s counts what redjit
counts: x read and out written once (plus residual in and out, weight and bias
once).

--families norm_fp8 adds norms with a per-token FP8 (e4m3) output, y in f32,
scale max|y| / 448 a row (entries "name": norm_<op>[_res]_<dtype>_e4m3, the
scaled form redjit's _qd kernels compute), eager and torch.compile.

--families nms adds torchvision.ops.nms (entries "family": "nms", "name": "nms",
"n" the box count, "shape" thr<threshold>, as `redjit bench nms` keys them) on
random boxes of the distribution `redjit bench nms` draws: corners uniform in a
1000 x 1000 image, sides uniform in [1, 128), scores uniform in [0, 1); box
counts from --nms-boxes (default 20000), thresholds from --nms-thresholds
(default 0.5); eager only (median of CUDA-event timings of the whole call, which
synchronises with the host as redjit's does). "eager_gbps" counts the boxes and
scores read once (20 bytes a box), as redjit does, so the CLI's ratio column is
the speed-up; "kept" is the kept count.

--families softmax_all adds torch.softmax / torch.log_softmax over x.view(-1)
(entries "family": "softmax_all", "name" softmax_all_<op>_<dtype>_<dtype>, as
`redjit bench softmax-all` names its kernels) at --n / --sizes, f32 and bf16.

--families all_reduce adds NCCL through torch.distributed, one process per GPU
of the machine (NCCL_NVLS_ENABLE=0): entries "family": "all_reduce", "name"
all_reduce_nccl_<dtype>, "n" elements, "eager_us" per call (--ar-batch calls
back to back between CUDA events, median of --iters, every rank brought into
step by dist.barrier before each batch), at --ar-bytes, as `redjit bench
all-reduce --compare` reads them. In the same processes and process group,
PyTorch symmetric memory's all-reduce (torch.ops.symm_mem; NVLink multicast off,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, no multimem op called) timed the same way:
entries all_reduce_symm_one_shot_<dtype> (one_shot_all_reduce[_out] into a
separate output) and all_reduce_symm_two_shot_<dtype> (two_shot_all_reduce_, in
place), the input a slice of one symm_mem.empty buffer of the largest size. A
symmetric-memory failure (f16 is not among its dtypes) leaves "eager_us" null
and the "error" text in its entries; the NCCL entries still come out. Each
phase's result is waited for at most --ar-timeout seconds.

Stdlib + torch (+ triton, optional; + torchvision for nms). Usage:
  python3 scripts/torch_ref.py --out torch.json [--n N | --sizes 1M,2^28] [--families reduce_copy,reduce]
"""

import argparse
import collections
import datetime
import json
import os
import statistics
import sys

import torch

ACCUM = torch.float32
TRANSPORTS = {"bf16": torch.bfloat16, "f16": torch.float16}


def log(*args):
    print(*args, flush=True)


def parse_size(text):
    """N, NK, NM, NG (binary) or 2^P, as redjit's --sizes takes them."""
    t = text.strip()
    if t.startswith("2^"):
        return 1 << int(t[2:])
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(t[-1:].lower(), 1)
    digits = t[:-1] if scale > 1 else t
    n = int(digits.replace("_", "")) * scale
    if n < 1:
        raise ValueError(text)
    return n


def parse_sizes(text):
    out = []
    for item in text.split(","):
        n = parse_size(item)
        if n not in out:
            out.append(n)
    return out


REDUCE_INPUTS = {"f32": torch.float32, "bf16": torch.bfloat16}
# (redjit op slug, inputs, eager expression text, function)
REDUCE_OPS = [
    ("sum", 1, "torch.sum(x, dtype=torch.float32)", lambda x: torch.sum(x, dtype=torch.float32)),
    ("max", 1, "torch.amax(x)", lambda x: torch.amax(x)),
    ("argmax", 1, "torch.argmax(x)", lambda x: torch.argmax(x)),
    ("varsamp", 1, "torch.var(x)", lambda x: torch.var(x)),
    ("dot", 2, "torch.dot(x, y)", lambda x, y: torch.dot(x, y)),
    ("lse", 1, "torch.logsumexp(x, dim=0)", lambda x: torch.logsumexp(x, dim=0)),
]
REDUCE_SHAPES = [(32768, 4096), (8192, 16384)]


def reduce_entries(sizes, shapes, a, dev):
    """The reduce family's PyTorch equivalents (see the module doc)."""
    entries = []
    header = f"{'kernel':<34} {'size':>12} {'eager us':>10} {'eager GB/s':>10} {'compile us':>10} {'compile GB/s':>12}"
    log(header)
    log("-" * len(header))

    def measure(name, n, shape, fn, sets, nbytes, expr):
        ins = Rotation(sets[:rotation_count(nbytes, dev)])
        eager_us = time_us(fn, ins, a.warmup, a.iters)
        e = {
            "family": "reduce",
            "name": name,
            "n": n,
            "rotations": len(ins),
            "eager_us": eager_us,
            "eager_gbps": gbps(nbytes, eager_us),
            "eager_expr": expr,
            "compile_us": None,
            "compile_gbps": None,
            "compile_expr": None,
        }
        if shape:
            e["shape"] = shape
        if not a.no_compile and n in a.compile_sizes_set:
            add_compiled(e, expr, fn, ins, nbytes, a)
        fmt = lambda v, w: f"{v:>{w}.1f}" if v is not None else f"{'-':>{w}}"  # noqa: E731
        log(f"{name:<34} {shape or n:>12} {fmt(e['eager_us'], 10)} {fmt(e['eager_gbps'], 10)} "
            f"{fmt(e['compile_us'], 10)} {fmt(e['compile_gbps'], 12)}")
        entries.append(e)

    for iname, dt in REDUCE_INPUTS.items():
        for n in sizes:
            esize = torch.tensor([], dtype=dt).element_size()
            xs = rotation(lambda: tuple(torch.randn(n, device=dev, dtype=dt) for _ in range(2)), n * esize, dev)  # noqa: B023
            for op, nin, expr, fn in REDUCE_OPS:
                out_bytes = 8 if op == "argmax" else 4
                nbytes = nin * n * esize + out_bytes
                measure(f"reduce_all_{op}_{iname}_f32", n, None, fn, [x[:nin] for x in xs], nbytes, expr)
            del xs
            torch.cuda.empty_cache()
        for rows, cols in shapes:
            esize = torch.tensor([], dtype=dt).element_size()
            xs = rotation(lambda: (torch.randn(rows, cols, device=dev, dtype=dt),), rows * cols * esize, dev)  # noqa: B023
            for axis, dim, results in (("rows", 1, rows), ("cols", 0, cols)):
                fn = (lambda d: (lambda m: torch.sum(m, dim=d, dtype=torch.float32)))(dim)
                expr = f"torch.sum(x, dim={dim}, dtype=torch.float32)"
                nbytes = rows * cols * esize + 4 * results
                measure(f"reduce_{axis}_sum_{iname}_f32", rows * cols, f"{rows}x{cols}", fn, xs, nbytes, expr)
            del xs
            torch.cuda.empty_cache()
    return entries


NORM_SHAPES = [(32768, 4096), (8192, 16384), (8192, 32768), (262144, 128), (4, 1000003), (64, 1 << 20)]
NORM_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
TRITON_MAX_COLS = 32768


def triton_kernels():
    """The textbook Triton softmax and RMSNorm (one row per program), or None."""
    try:
        import triton  # noqa: PLC0415
        import triton.language as tl  # noqa: PLC0415
    except Exception:  # noqa: BLE001
        return None

    @triton.jit
    def softmax_kernel(y_ptr, x_ptr, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + row * cols + offs, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=offs < cols)

    @triton.jit
    def rmsnorm_kernel(y_ptr, x_ptr, w_ptr, cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=offs < cols, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
        tl.store(y_ptr + row * cols + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=offs < cols)

    def launch(kernel, rows, cols, *args):
        block = triton.next_power_of_2(cols)
        warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        kernel[(rows,)](*args, BLOCK=block, num_warps=warps)

    def softmax(x, y):
        launch(softmax_kernel, x.shape[0], x.shape[1], y, x, x.shape[1])
        return y

    def rmsnorm(x, w, y):
        launch(rmsnorm_kernel, x.shape[0], x.shape[1], y, x, w, x.shape[1], 1e-5)
        return y

    return {"softmax": softmax, "rmsnorm": rmsnorm}


def liger_kernels():
    """Liger-Kernel's forward norms and softmax (Triton kernels many training
    stacks use), where the package is importable: key -> fn(x[, r][, w][, b])."""
    try:
        from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction  # noqa: PLC0415
        from liger_kernel.ops.layer_norm import LigerLayerNormFunction  # noqa: PLC0415
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction  # noqa: PLC0415
        from liger_kernel.ops.softmax import LigerSoftmaxFunction  # noqa: PLC0415
    except Exception as err:  # noqa: BLE001 -- optional anchor
        log(f"liger: not available ({type(err).__name__}: {err})")
        return {}
    eps = 1e-5
    return {
        "softmax": lambda x: LigerSoftmaxFunction.apply(x),
        "rmsnorm": lambda x, w: LigerRMSNormFunction.apply(x, w, eps, 0.0, "llama", False),
        "layernorm": lambda x, w, b: LigerLayerNormFunction.apply(x, w, b, eps),
        "rmsnorm_res": lambda x, r, w: LigerFusedAddRMSNormFunction.apply(x, r, w, eps, 0.0, "llama", False),
    }


def norm_entries(shapes, a, dev):
    """The norm family's PyTorch (and Triton) equivalents (see the module doc)."""
    import torch.nn.functional as F  # noqa: PLC0415, N812

    tri = triton_kernels()
    lig = liger_kernels()
    entries = []
    header = f"{'kernel':<30} {'shape':>14} {'eager GB/s':>10} {'compile GB/s':>12} {'triton GB/s':>11}"
    log(header)
    log("-" * len(header))
    eps = 1e-5

    def res_layer(x, r, w, b):
        h = x + r
        return h, F.layer_norm(h, (x.shape[-1],), w, b, eps)

    def res_rms(x, r, w):
        h = x + r
        return h, F.rms_norm(h, (x.shape[-1],), w, eps)

    # (op key, expression, function, takes residual, weight, bias)
    ops = [
        ("softmax", "torch.softmax(x, dim=-1)", lambda x: torch.softmax(x, dim=-1), False, False, False),
        ("logsoftmax", "torch.log_softmax(x, dim=-1)", lambda x: torch.log_softmax(x, dim=-1), False, False, False),
        ("layernorm", "F.layer_norm(x, (C,), w, b, eps)",
         lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps), False, True, True),
        ("rmsnorm", "F.rms_norm(x, (C,), w, eps)", lambda x, w: F.rms_norm(x, (x.shape[-1],), w, eps), False, True, False),
        ("layernorm_res", "h = x + r; F.layer_norm(h, ...)", res_layer, True, True, True),
        ("rmsnorm_res", "h = x + r; F.rms_norm(h, ...)", res_rms, True, True, False),
    ]
    for dname, dt in NORM_DTYPES.items():
        esize = torch.tensor([], dtype=dt).element_size()
        for rows, cols in shapes:
            n = rows * cols
            # x and the residual rotate (as many sets as the op moving the fewest
            # bytes takes); the weight and bias are one copy, as in `redjit bench`.
            xr = rotation(lambda: (torch.randn(rows, cols, device=dev, dtype=dt),  # noqa: B023
                                   torch.randn(rows, cols, device=dev, dtype=dt)), 2 * n * esize, dev)
            w = torch.randn(cols, device=dev, dtype=dt)
            b = torch.randn(cols, device=dev, dtype=dt)
            for key, expr, fn, res, has_w, has_b in ops:
                nbytes = n * esize * (4 if res else 2) + cols * esize * (int(has_w) + int(has_b))
                sets = xr[:rotation_count(nbytes, dev)]
                ins = Rotation((x,) + ((r,) if res else ()) + ((w,) if has_w else ()) + ((b,) if has_b else ())
                               for x, r in sets)
                e_us = time_us(fn, ins, a.warmup, a.iters)
                e = {
                    "family": "norm",
                    "name": f"norm_{key}_{dname}_{dname}",
                    "n": n,
                    "shape": f"{rows}x{cols}",
                    "rotations": len(ins),
                    "eager_us": e_us,
                    "eager_gbps": gbps(nbytes, e_us),
                    "eager_expr": expr,
                    "compile_us": None,
                    "compile_gbps": None,
                    "compile_expr": None,
                    "triton_gbps": None,
                }
                if not a.no_compile:
                    add_compiled(e, expr, fn, ins, nbytes, a)
                if tri and key in tri and cols <= TRITON_MAX_COLS:
                    ys = [torch.empty_like(x) for x, _ in sets]
                    targs = Rotation((x, y) if key == "softmax" else (x, w, y) for (x, _), y in zip(sets, ys))
                    try:
                        t_us = time_us(tri[key], targs, a.warmup, a.iters)
                        e["triton_us"], e["triton_gbps"] = t_us, gbps(nbytes, t_us)
                    except Exception as err:  # noqa: BLE001 -- recorded, not fatal
                        e["triton_error"] = f"{type(err).__name__}: {err}"[:500]
                    del ys, targs
                if key in lig:
                    try:
                        l_us = time_us(lig[key], ins, a.warmup, a.iters)
                        e["liger_us"], e["liger_gbps"] = l_us, gbps(nbytes, l_us)
                    except Exception as err:  # noqa: BLE001 -- recorded, not fatal
                        e["liger_error"] = f"{type(err).__name__}: {err}"[:500]
                fmt = lambda v, wd: f"{v:>{wd}.1f}" if v is not None else f"{'-':>{wd}}"  # noqa: E731
                log(f"{e['name']:<30} {e['shape']:>14} {fmt(e['eager_gbps'], 10)} "
                    f"{fmt(e['compile_gbps'], 12)} {fmt(e['triton_gbps'], 11)}")
                entries.append(e)
            del xr, sets, ins, w, b
            torch.cuda.empty_cache()
    return entries


def norm_fp8_entries(shapes, a, dev):
    """Norms with a per-token FP8 (e4m3) output, as redjit's `_qd` kernels and
    vLLM's rms_norm_dynamic_per_token_quant compute them: y in f32, each row's
    scale max|y| / 448 (at least 1 / (448 * 512)), e4m3(y / scale) saturated;
    the residual form writes h = x + r too. Keyed norm_<op>[_res]_<dtype>_e4m3."""
    entries = []
    eps, fmax, floor = 1e-5, 448.0, 1.0 / (448.0 * 512.0)
    log(f"{'kernel':<30} {'shape':>14} {'eager us':>10} {'compile us':>10} {'compile GB/s':>12}")

    def quant(y):
        s = (y.abs().amax(-1, keepdim=True) / fmax).clamp(min=floor)
        return (y / s).clamp(-fmax, fmax).to(torch.float8_e4m3fn), s

    def rms(h, w):
        hf = h.float()
        return hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps) * w.float()

    def layer(h, w, b):
        hf = h.float()
        m = hf.mean(-1, keepdim=True)
        v = (hf - m).pow(2).mean(-1, keepdim=True)
        return (hf - m) * torch.rsqrt(v + eps) * w.float() + b.float()

    ops = [
        ("rmsnorm", "e4m3(rms(x) w / s)", lambda x, w: quant(rms(x, w)), False, True, False),
        ("rmsnorm_res", "h = x + r; e4m3(rms(h) w / s)",
         lambda x, r, w: (x + r,) + quant(rms(x + r, w)), True, True, False),
        ("layernorm", "e4m3(ln(x) w + b / s)", lambda x, w, b: quant(layer(x, w, b)), False, True, True),
        ("layernorm_res", "h = x + r; e4m3(ln(h) w + b / s)",
         lambda x, r, w, b: (x + r,) + quant(layer(x + r, w, b)), True, True, True),
    ]
    for dname, dt in NORM_DTYPES.items():
        esize = torch.tensor([], dtype=dt).element_size()
        for rows, cols in shapes:
            n = rows * cols
            xr = rotation(lambda: (torch.randn(rows, cols, device=dev, dtype=dt),  # noqa: B023
                                   torch.randn(rows, cols, device=dev, dtype=dt)), 2 * n * esize, dev)
            w = torch.randn(cols, device=dev, dtype=dt)
            b = torch.randn(cols, device=dev, dtype=dt)
            for key, expr, fn, res, has_w, has_b in ops:
                # x (and r in, h out) in the input type, y as e4m3, a scale a row.
                nbytes = n * esize * (3 if res else 1) + n + rows * 4 + cols * esize * (int(has_w) + int(has_b))
                sets = xr[:rotation_count(nbytes, dev)]
                ins = Rotation((x,) + ((r,) if res else ()) + ((w,) if has_w else ()) + ((b,) if has_b else ())
                               for x, r in sets)
                e_us = time_us(fn, ins, a.warmup, a.iters)
                e = {
                    "family": "norm",
                    "name": f"norm_{key}_{dname}_e4m3",
                    "n": n,
                    "shape": f"{rows}x{cols}",
                    "rotations": len(ins),
                    "eager_us": e_us,
                    "eager_gbps": gbps(nbytes, e_us),
                    "eager_expr": expr,
                    "compile_us": None,
                    "compile_gbps": None,
                    "compile_expr": None,
                }
                if not a.no_compile:
                    add_compiled(e, expr, fn, ins, nbytes, a)
                fmt = lambda v, wd: f"{v:>{wd}.1f}" if v is not None else f"{'-':>{wd}}"  # noqa: E731
                log(f"{e['name']:<30} {e['shape']:>14} {fmt(e['eager_us'], 10)} {fmt(e['compile_us'], 10)} "
                    f"{fmt(e['compile_gbps'], 12)}")
                entries.append(e)
            del xr, sets, ins, w, b
            torch.cuda.empty_cache()
    return entries


def nms_entries(counts, thresholds, a, dev):
    """torchvision.ops.nms on random boxes (see the module doc)."""
    try:
        import torchvision  # noqa: PLC0415
    except Exception as err:  # noqa: BLE001
        log(f"nms: torchvision is not importable ({err}); no nms entries")
        return []
    entries = []
    header = f"{'kernel':<30} {'boxes':>8} {'thr':>5} {'kept':>7} {'eager us':>10}"
    log(header)
    log("-" * len(header))
    gen = torch.Generator(device=dev)
    gen.manual_seed(0x5EED)
    for n in counts:
        xy = torch.rand(n, 2, device=dev, generator=gen) * 1000.0
        wh = 1.0 + torch.rand(n, 2, device=dev, generator=gen) * 127.0
        boxes = torch.cat([xy, xy + wh], dim=1).contiguous()
        scores = torch.rand(n, device=dev, generator=gen)
        for thr in thresholds:
            kept = int(torchvision.ops.nms(boxes, scores, thr).numel())
            e_us = time_us(lambda b, s, t=thr: torchvision.ops.nms(b, s, t), (boxes, scores), a.warmup, a.iters)
            e = {
                "family": "nms",
                "name": "nms",
                "n": n,
                "shape": f"thr{thr}",
                "kept": kept,
                "eager_us": e_us,
                "eager_gbps": gbps(20 * n, e_us),
                "eager_expr": f"torchvision.ops.nms(boxes, scores, {thr})",
                "compile_us": None,
                "compile_gbps": None,
                "compile_expr": None,
                "torchvision": torchvision.__version__,
            }
            log(f"{'torchvision.ops.nms':<30} {n:>8} {thr:>5} {kept:>7} {e_us:>10.1f}")
            entries.append(e)
        del xy, wh, boxes, scores
        torch.cuda.empty_cache()
    return entries


def softmax_all_entries(sizes, a, dev):
    """Whole-array softmax and log-softmax, torch.softmax(x.view(-1), 0) (the
    entries keyed as `redjit bench softmax-all` names its kernels)."""
    entries = []
    header = f"{'kernel':<36} {'n':>11} {'eager us':>10} {'eager GB/s':>10} {'compile GB/s':>12}"
    log(header)
    log("-" * len(header))
    ops = [
        ("softmax", "torch.softmax(x.view(-1), 0)", lambda x: torch.softmax(x.view(-1), 0)),
        ("logsoftmax", "torch.log_softmax(x.view(-1), 0)", lambda x: torch.log_softmax(x.view(-1), 0)),
    ]
    for dname, dt in NORM_DTYPES.items():
        for n in sizes:
            nbytes = 2 * n * torch.tensor([], dtype=dt).element_size()
            xs = rotation(lambda: (torch.randn(n, device=dev, dtype=dt),), nbytes, dev)  # noqa: B023
            for key, expr, fn in ops:
                e_us = time_us(fn, xs, a.warmup, a.iters)
                e = {
                    "family": "softmax_all",
                    "name": f"softmax_all_{key}_{dname}_{dname}",
                    "n": n,
                    "rotations": len(xs),
                    "eager_us": e_us,
                    "eager_gbps": gbps(nbytes, e_us),
                    "eager_expr": expr,
                    "compile_us": None,
                    "compile_gbps": None,
                    "compile_expr": None,
                }
                if not a.no_compile:
                    add_compiled(e, expr, fn, xs, nbytes, a)
                fmt = lambda v, wd: f"{v:>{wd}.1f}" if v is not None else f"{'-':>{wd}}"  # noqa: E731
                log(f"{e['name']:<36} {n:>11} {fmt(e_us, 10)} {fmt(e['eager_gbps'], 10)} "
                    f"{fmt(e['compile_gbps'], 12)}")
                entries.append(e)
            del xs
            torch.cuda.empty_cache()
    return entries


def forms():
    """(config, srcs letters, dsts letters) in redjit's matrix order."""
    out = []
    for config in range(8):
        letter = lambda bit: "A" if config & bit else "T"  # noqa: E731
        out.append((config, letter(4) + letter(2), letter(1)))
    for s in "AT":
        for d in "AT":
            out.append((None, s, d))
    return out


def dtype_of(letter, transport):
    return ACCUM if letter == "A" else transport


# The eager expressions: one kernel each, writing the destination's dtype.
# torch.add(out=) computes in the promoted dtype (f32 when any input is f32) and
# rounds once into dst, like redjit.
def reduce2_add_out(s0, s1, d):
    torch.add(s0, s1, out=d)
    return d


def reduce2_copy(s0, s1, d):
    d.copy_(s0 + s1)
    return d


def copy1(s0, d):
    d.copy_(s0)
    return d


# --launch-gap hidden: the GPU is held busy (torch.cuda._sleep) for HOLD_US
# while the start event, the call and the end event are issued, so the events
# time the GPU's work alone, as `redjit bench --launch-gap hidden` does. None:
# each call is issued to an idle GPU and its host time counts.
HOLD_US = 1000  # some calls (several kernels, compiled guards) took over 200 us to issue
HOLD_CYCLES = None


def calibrate_hold():
    """torch.cuda._sleep's cycles for HOLD_US, from one timed sleep."""
    global HOLD_CYCLES  # noqa: PLW0603
    probe = 2_000_000
    torch.cuda._sleep(probe)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(probe)
    end.record()
    end.synchronize()
    HOLD_CYCLES = int(probe * HOLD_US / (start.elapsed_time(end) * 1e3))
    log(f"launch gap hidden: each timed call after a {HOLD_US} us hold ({HOLD_CYCLES} cycles of torch.cuda._sleep)")


class Rotation(list):
    """Argument tuples that successive timed calls take in turn, so that no call
    finds its inputs left in L2 by the one before (see `rotation`)."""


# Where the next timed call takes its set (time_us).
ROTATION_CURSOR = 0


# As `redjit bench`: the rotated sets cover at least ROTATE_L2_TIMES x L2 (0: one
# set, every call on the same buffers), at most MAX_ROTATIONS sets and a quarter
# of the device's memory. Set from --l2-rotate in main.
ROTATE_L2_TIMES = 4
MAX_ROTATIONS = 256


def set_l2_rotate(times):
    global ROTATE_L2_TIMES  # noqa: PLW0603
    ROTATE_L2_TIMES = times


def rotation_count(set_bytes, dev):
    """How many sets of `set_bytes` (the bytes a call moves) `redjit bench`
    rotates over on this device."""
    if ROTATE_L2_TIMES == 0:
        return 1
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 0) or 50 << 20
    want = -(-ROTATE_L2_TIMES * l2 // max(set_bytes, 1))
    fit = (props.total_memory // 4) // max(set_bytes, 1)
    return max(1, min(want, fit, MAX_ROTATIONS))


def rotation(make, set_bytes, dev):
    """A Rotation of fresh argument tuples from `make()`, as many as
    `rotation_count` gives."""
    return Rotation(make() for _ in range(rotation_count(set_bytes, dev)))


def time_us(fn, args, warmup, iters):
    """Median microseconds of `iters` calls, each between its own CUDA events
    (after a hold of HOLD_US, if calibrated). `args` is one argument tuple, or a
    Rotation whose tuples the calls take in turn."""
    import time  # noqa: PLC0415

    sets = args if isinstance(args, Rotation) else [args]
    # The results of the last len(sets) calls stay alive, so that a function
    # that allocates its outputs (eager PyTorch, torch.compile, Liger) writes
    # each call where none of the calls before it in the rotation wrote, as
    # `redjit bench` and the Triton anchor rotate their output buffers. Freed
    # at once, the caching allocator hands each call the block the call
    # before wrote, still in L2 (BENCHMARKS.md's method says what it changed).
    kept = collections.deque(maxlen=len(sets))

    def next_set():
        # One cursor across every timing: the next timed function (another op
        # or anchor on the same sets) starts past the sets this one touched,
        # which small shapes would still find in L2.
        global ROTATION_CURSOR  # noqa: PLW0603
        ROTATION_CURSOR += 1
        return sets[ROTATION_CURSOR % len(sets)]

    for _ in range(warmup):
        kept.append(fn(*next_set()))
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    times = []
    leaked = 0
    for _ in range(iters):
        call_args = next_set()
        t0 = time.perf_counter()
        if HOLD_CYCLES:
            torch.cuda._sleep(HOLD_CYCLES)
        start.record()
        out = fn(*call_args)
        end.record()
        kept.append(out)
        if HOLD_CYCLES and (time.perf_counter() - t0) * 1e6 >= HOLD_US:
            leaked += 1
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    if leaked:
        log(f"  warning: the host took longer than the {HOLD_US} us hold to issue {leaked} of {iters} timed calls; those count host time")
    return statistics.median(times)


def gbps(nbytes, us):
    return nbytes / us / 1e3 if us and us > 0 else None


def reset_dynamo():
    """Fresh compile state per form: no recompile limit hit, no stale guards."""
    try:
        torch._dynamo.reset()
    except Exception:  # noqa: BLE001 -- best effort
        pass


def compiled_time(candidates, args, warmup, iters):
    """Times each (expr, fn) under torch.compile and keeps the fastest, so that
    torch.compile is not judged by one lowering; returns
    (us, expr, {expr: us or None}, error or None)."""
    best_us, best_expr, variants, errors = None, None, {}, []
    for expr, fn in candidates:
        reset_dynamo()
        try:
            cfn = torch.compile(fn, fullgraph=True)
            us = time_us(cfn, args, warmup, iters)
        except Exception as e:  # noqa: BLE001 -- recorded, not fatal
            variants[expr] = None
            errors.append(f"{expr}: {type(e).__name__}: {e}".strip()[:2000])
            log(f"  torch.compile failed ({expr}): {type(e).__name__}: {str(e)[:300]}")
            continue
        variants[expr] = us
        if best_us is None or us < best_us:
            best_us, best_expr = us, expr
    return best_us, best_expr, variants, (" | ".join(errors) or None)


def add_compiled(e, expr, fn, args, nbytes, a):
    """Times `fn` under torch.compile into entry `e` (compile_us, compile_gbps,
    compile_expr, compile_variants_us, and compile_error where it failed)."""
    c_us, c_expr, variants, c_err = compiled_time([(expr, fn)], args, a.warmup, a.iters)
    e.update(compile_us=c_us, compile_gbps=gbps(nbytes, c_us), compile_expr=c_expr,
             compile_variants_us=variants)
    if c_err:
        e["compile_error"] = c_err


AR_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


# PyTorch symmetric memory's all-reduces (torch.ops.symm_mem), in the order timed.
SYMM_VARIANTS = ("one_shot", "two_shot")


def _batch_us(call, warmup, iters, batch):
    """Median microseconds per call of `iters` batches of `batch` calls back to
    back between CUDA events, every rank brought into step (dist.barrier) before
    each batch, after `warmup` untimed batches."""
    import torch.distributed as dist  # noqa: PLC0415

    for _ in range(warmup):
        for _ in range(batch):
            call()
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        dist.barrier()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(batch):
            call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / batch)
    times.sort()
    return times[len(times) // 2]


def _symm_mem_times(rank, sizes_bytes, dt, elem, timing):
    """PyTorch symmetric memory all-reduce in this process group (NVLink
    multicast off: no multimem op is called): one buffer of the largest size
    from symm_mem.empty, rendezvoused once on the world group, each size a
    slice of it (the ops take the slice's offset); one-shot writes a separate
    output (one_shot_all_reduce_out where the build has it, else
    one_shot_all_reduce, which allocates it per call), two-shot reduces in place
    (two_shot_all_reduce_). Returns ({variant: [(bytes, us or None, error or
    None)]}, {variant: expression}); a failure is logged and recorded, never
    raised, so the NCCL numbers still come out."""
    import torch.distributed as dist  # noqa: PLC0415

    results = {v: [] for v in SYMM_VARIANTS}
    exprs = {v: None for v in SYMM_VARIANTS}

    def failed(what, e):
        text = f"{what}: {type(e).__name__}: {e}".strip()
        log(f"  rank {rank}: symmetric memory {text[:300]}")
        return text[:2000]

    try:
        import torch.distributed._symmetric_memory as symm_mem  # noqa: PLC0415

        group = dist.group.WORLD.group_name
        largest = max(sizes_bytes) // elem
        buf = symm_mem.empty(largest, dtype=dt, device=torch.device("cuda", torch.cuda.current_device()))
        try:
            symm_mem.rendezvous(buf, group)
        except Exception:  # noqa: BLE001 -- builds before 2.10 want the group enabled first
            enable = getattr(symm_mem, "enable_symm_mem_for_group", None)
            if enable is None:
                raise
            enable(group)
            symm_mem.rendezvous(buf, group)
        ops = torch.ops.symm_mem
        if hasattr(ops, "one_shot_all_reduce_out"):
            out = torch.empty(largest, dtype=dt, device=buf.device)
            exprs["one_shot"] = "torch.ops.symm_mem.one_shot_all_reduce_out(buf[:n], 'sum', group, out[:n])"

            def one_shot(seg):
                return ops.one_shot_all_reduce_out(seg, "sum", group, out[: seg.numel()])
        else:
            exprs["one_shot"] = "torch.ops.symm_mem.one_shot_all_reduce(buf[:n], 'sum', group)"

            def one_shot(seg):
                return ops.one_shot_all_reduce(seg, "sum", group)
        exprs["two_shot"] = "torch.ops.symm_mem.two_shot_all_reduce_(buf[:n], 'sum', group)"
        calls = {"one_shot": one_shot, "two_shot": lambda seg: ops.two_shot_all_reduce_(seg, "sum", group)}
    except Exception as e:  # noqa: BLE001 -- recorded, not fatal
        err = failed("set-up", e)
        return {v: [(nbytes, None, err) for nbytes in sizes_bytes] for v in SYMM_VARIANTS}, exprs
    for nbytes in sizes_bytes:
        seg = buf[: nbytes // elem]
        for v in SYMM_VARIANTS:
            try:
                seg.normal_()
                us = timing(lambda: calls[v](seg))  # noqa: B023 -- called before the loop moves on
                results[v].append((nbytes, us, None))
            except Exception as e:  # noqa: BLE001 -- recorded, not fatal
                results[v].append((nbytes, None, failed(f"{v} at {nbytes} bytes", e)))
    return results, exprs


def _all_reduce_worker(rank, world, port, sizes_bytes, dtype_name, warmup, iters, batch, queue):
    """One rank of the all-reduce reference: dist.all_reduce (NCCL) of each
    size, then PyTorch symmetric memory's one-shot and two-shot all-reduce of
    each size in the same process group (_symm_mem_times), each timed by
    _batch_us; rank 0 puts ("nccl", [(bytes, us)]) on the queue as soon as NCCL
    is done, then ("symm", results, expressions)."""
    import torch.distributed as dist  # noqa: PLC0415

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    dt = AR_DTYPES[dtype_name]
    elem = torch.empty((), dtype=dt).element_size()

    def timing(call):
        return _batch_us(call, warmup, iters, batch)

    # PyTorch's own launch floor on this host: a kernel that does nothing
    # (torch.cuda._sleep(0)), timed as the all-reduces are.
    floor = timing(lambda: torch.cuda._sleep(0))
    if rank == 0:
        queue.put(("floor", floor))
    out = []
    for nbytes in sizes_bytes:
        x = torch.randn(nbytes // elem, device="cuda", dtype=dt)
        out.append((nbytes, timing(lambda: dist.all_reduce(x))))  # noqa: B023 -- called at once
        del x
    if rank == 0:
        queue.put(("nccl", out))
    torch.cuda.empty_cache()
    symm, exprs = _symm_mem_times(rank, sizes_bytes, dt, elem, timing)
    if rank == 0:
        queue.put(("symm", symm, exprs))
    dist.destroy_process_group()


def _start_ranks(world, worker, args):
    """One spawned process a GPU running worker(rank, world, port, *args,
    queue), met at a free local port (NVLink multicast off, as the device
    README asks); returns (queue, processes)."""
    import socket  # noqa: PLC0415

    import torch.multiprocessing as mp  # noqa: PLC0415

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, world, port, *args, queue)) for r in range(world)]
    for p in procs:
        p.start()
    return queue, procs


def _stop_ranks(procs, done):
    """Joins the workers (given 30 s each where every result came), and ends
    those still running: a worker that failed or hangs is not waited for."""
    for p in procs:
        p.join(timeout=30 if done else 0)
        if p.is_alive():
            p.terminate()
            p.join(timeout=10)


def _next_result(queue, procs, timeout, what):
    """Rank 0's next message, or None (logged) when a worker has died or none
    came within `timeout` seconds."""
    import queue as stdqueue  # noqa: PLC0415
    import time  # noqa: PLC0415

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return queue.get(timeout=2)
        except stdqueue.Empty:
            dead = [(r, p.exitcode) for r, p in enumerate(procs) if p.exitcode not in (None, 0)]
            if dead:
                log(f"error: {what}: worker(s) (rank, exit code) {dead} died")
                return None
    log(f"error: {what}: no result within --ar-timeout {timeout} s")
    return None


def nvlink_copy_entries(world, nbytes=256 << 20, rounds=5, batch=10):
    """The copy engines' bandwidth between GPU 0 and GPU 1 (torch's copy_
    between devices, peer to peer): one way, and both ways at once (what a
    two-GPU all-reduce needs: each GPU receives a whole message). Host-timed
    batches of `batch` copies of `nbytes`, median of `rounds`; GB/s per
    direction."""
    import time  # noqa: PLC0415

    if world < 2:
        return []
    bufs = {d: (torch.empty(nbytes, dtype=torch.uint8, device=d), torch.empty(nbytes, dtype=torch.uint8, device=d))
            for d in (0, 1)}
    streams = {d: torch.cuda.Stream(device=d) for d in (0, 1)}

    def timed(pairs):
        times = []
        for _ in range(rounds + 1):
            for d in (0, 1):
                torch.cuda.synchronize(d)
            t0 = time.perf_counter()
            for _ in range(batch):
                for dst, src in pairs:
                    with torch.cuda.stream(streams[dst]):
                        bufs[dst][1].copy_(bufs[src][0], non_blocking=True)
            for d in (0, 1):
                torch.cuda.synchronize(d)
            times.append(time.perf_counter() - t0)
        times = sorted(times[1:])
        return nbytes * batch / times[len(times) // 2] / 1e9

    one = timed([(1, 0)])
    both = timed([(1, 0), (0, 1)])
    log(f"NVLink copy (torch copy_ between GPU 0 and 1, copy engines, {nbytes >> 20} MB): "
        f"one way {one:.1f} GB/s, both ways at once {both:.1f} GB/s each way")
    return [{"family": "all_reduce", "name": f"nvlink_copy_{w}", "n": nbytes, "world": world,
             "eager_gbps": g, "eager_expr": "dst.copy_(src_on_peer, non_blocking=True)"}
            for w, g in (("one_way", one), ("both_ways", both))]


def all_reduce_entries(a):
    """NCCL through torch.distributed, then PyTorch symmetric memory's one-shot
    and two-shot all-reduce, one process per GPU of this machine (NVLink
    multicast off, as the device README asks)."""
    world = torch.cuda.device_count()
    queue, procs = _start_ranks(world, _all_reduce_worker,
                                (parse_sizes(a.ar_bytes), a.ar_dtype, a.warmup, a.iters, a.ar_batch))
    floor = _next_result(queue, procs, a.ar_timeout, "PyTorch launch floor")
    nccl = _next_result(queue, procs, a.ar_timeout, "NCCL all_reduce") if floor else None
    symm = _next_result(queue, procs, a.ar_timeout, "symmetric memory all_reduce") if nccl else None
    _stop_ranks(procs, symm is not None)
    if nccl is None:
        raise RuntimeError("the NCCL all_reduce reference failed (see the log above)")
    elem = torch.empty((), dtype=AR_DTYPES[a.ar_dtype]).element_size()
    log(f"PyTorch launch floor (torch.cuda._sleep(0), {a.ar_batch} per pair of events): {floor[1]:.2f} us a call")
    entries = [{"family": "all_reduce", "name": "launch_floor_torch", "n": 0, "world": world,
                "eager_us": floor[1], "eager_expr": "torch.cuda._sleep(0)"}]
    entries += nvlink_copy_entries(world)

    def table(title, name, expr, rows):
        log(f"{title} all_reduce {a.ar_dtype}, {world} GPU(s), {a.ar_batch} calls per pair of events")
        log(f"{'bytes':>12} {'us':>10} {'algbw GB/s':>12} {'busbw GB/s':>12}")
        for nbytes, us, err in rows:
            algbw = gbps(nbytes, us)
            busbw = algbw * 2 * (world - 1) / world if algbw else None
            if us is None:
                log(f"{nbytes:>12} {'-':>10} {'-':>12} {'-':>12}")
            else:
                log(f"{nbytes:>12} {us:>10.2f} {algbw:>12.1f} {busbw:>12.1f}")
            e = {"family": "all_reduce", "name": f"all_reduce_{name}_{a.ar_dtype}", "n": nbytes // elem,
                 "world": world, "eager_us": us, "eager_gbps": algbw, "busbw_gbps": busbw, "eager_expr": expr}
            if err:
                e["error"] = err
            entries.append(e)

    table("NCCL", "nccl", "torch.distributed.all_reduce(x) (NCCL, one process per GPU)",
          [(nbytes, us, None) for nbytes, us in nccl[1]])
    if symm is None:
        log("symmetric memory: no result (see above); the NCCL numbers stand")
        return entries
    _, results, exprs = symm
    for v in SYMM_VARIANTS:
        log("")
        table(f"PyTorch symmetric memory {v.replace('_', '-')}", f"symm_{v}",
              f"{exprs[v]} (symmetric memory, one process per GPU)" if exprs[v] else None, results[v])
    return entries


def _ar_norm_worker(rank, world, port, shapes, dtype_name, warmup, iters, batch, queue):
    """One rank of the fused all-reduce + residual + RMS norm reference (issue
    60's unfused anchor): NCCL's dist.all_reduce of x, then torch.compile of
    h = x + residual; rms_norm(h) * w (one compiled function per hidden size,
    the token count dynamic). Each (tokens, hidden) is timed from a CUDA graph
    of `batch` calls (NCCL and the compiled kernels captured), else, where the
    capture fails, as `batch` calls back to back; rank 0 puts ("ar_norm",
    [(tokens, hidden, us, timing, error)]) on the queue."""
    import torch.distributed as dist  # noqa: PLC0415
    import torch.nn.functional as F  # noqa: PLC0415, N812

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    dt = AR_DTYPES[dtype_name]
    eps = 1e-6

    def add_norm(x, r, w):
        h = x + r
        return h, F.rms_norm(h, (x.shape[-1],), w, eps)

    compiled = {}
    out = []
    for tokens, hidden in shapes:
        if hidden not in compiled:
            reset_dynamo()
            compiled[hidden] = torch.compile(add_norm, fullgraph=True, dynamic=True)
        fn = compiled[hidden]
        # x is reduced in place, so its values grow call by call (to inf in
        # the end); no kernel here takes a path by value, so the times do not.
        x = torch.randn(tokens, hidden, device="cuda", dtype=dt)
        r = torch.randn(tokens, hidden, device="cuda", dtype=dt)
        w = torch.randn(hidden, device="cuda", dtype=dt)

        def call():
            dist.all_reduce(x)  # noqa: B023 -- called at once
            return fn(x, r, w)  # noqa: B023

        for _ in range(3):
            call()
        torch.cuda.synchronize()
        err, timing = None, "graph"
        try:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(batch):
                    call()
            torch.cuda.synchronize()
            us = _batch_us(g.replay, warmup, iters, 1) / batch
        except Exception as e:  # noqa: BLE001 -- recorded: the calls are timed back to back instead
            err, timing = f"{type(e).__name__}: {e}"[:300], "back-to-back"
            torch.cuda.synchronize()
            us = _batch_us(call, warmup, iters, batch)
        out.append((tokens, hidden, us, timing, err))
        del x, r, w
        torch.cuda.empty_cache()
    if rank == 0:
        queue.put(("ar_norm", out))
    dist.destroy_process_group()


def all_reduce_norm_entries(a):
    """NCCL's all_reduce then torch.compile's add + RMS norm, one process per
    GPU of this machine, at --arn-tokens x --arn-hidden (NVLink multicast
    off): the unfused anchor of `redjit bench all-reduce --fused-norm`."""
    world = torch.cuda.device_count()
    shapes = [(t, h) for h in parse_counts(a.arn_hidden, "--arn-hidden") for t in parse_counts(a.arn_tokens, "--arn-tokens")]
    queue, procs = _start_ranks(world, _ar_norm_worker, (shapes, a.ar_dtype, a.warmup, a.iters, a.ar_batch))
    got = _next_result(queue, procs, a.ar_timeout, "NCCL + torch.compile add + RMS norm")
    _stop_ranks(procs, got is not None)
    if got is None:
        raise RuntimeError("the NCCL + torch.compile add + RMS norm reference failed (see the log above)")
    log(f"NCCL all_reduce then torch.compile add + RMS norm, {a.ar_dtype}, {world} GPU(s)")
    log(f"{'tokens':>7} {'hidden':>7} {'us':>9} timing")
    entries = []
    for tokens, hidden, us, timing, err in got[1]:
        log(f"{tokens:>7} {hidden:>7} {us:>9.2f} {timing}" + (f" (graph capture failed: {err})" if err else ""))
        e = {"family": "all_reduce_norm", "name": f"ar_add_rms_norm_nccl_compile_{a.ar_dtype}",
             "shape": f"{tokens}x{hidden}", "n": tokens * hidden, "world": world, "eager_us": us,
             "timing": timing,
             "eager_expr": "dist.all_reduce(x); torch.compile(h = x + r; F.rms_norm(h, (C,), w, eps))"}
        if err:
            e["graph_error"] = err
        entries.append(e)
    return entries


def parse_counts(text, flag):
    """Positive integers separated by commas."""
    vals = [v.strip() for v in text.split(",") if v.strip()]
    if not vals or not all(v.isdigit() and int(v) > 0 for v in vals):
        raise ValueError(f"{flag} {text!r}: expected positive integers separated by commas, e.g. 1,16,128")
    return [int(v) for v in vals]


def parse_norm_shapes(text):
    """ROWSxCOLS shapes separated by commas, each a pair of positive integers."""
    shapes = []
    for item in text.split(","):
        parts = item.strip().lower().split("x")
        if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
            raise ValueError(f"{item.strip()!r} is not ROWSxCOLS (two positive integers; "
                             "shapes are separated by commas, e.g. 8192x32768,4x1000003)")
        shapes.append((int(parts[0]), int(parts[1])))
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1 << 28, help="elements per buffer")
    ap.add_argument("--sizes", default=None, help="a sweep instead of --n, e.g. 1M,16M,2^28")
    ap.add_argument("--families", default="reduce_copy",
                    help="comma-separated: reduce_copy,reduce,norm,nms,softmax_all,all_reduce,all_reduce_norm")
    ap.add_argument("--ar-bytes", default="8K,64K,256K,1M,4M,16M,64M,256M", help="all_reduce: message sizes in bytes")
    ap.add_argument("--ar-dtype", default="bf16", choices=sorted(AR_DTYPES), help="all_reduce: element type")
    ap.add_argument("--ar-batch", type=int, default=20, help="all_reduce: calls per pair of events")
    ap.add_argument("--ar-timeout", type=int, default=300,
                    help="all_reduce: seconds to wait for each phase's result (NCCL, then symmetric memory)")
    ap.add_argument("--arn-tokens", default="1,16,128,512,2048",
                    help="all_reduce_norm: token counts (rows), comma-separated")
    ap.add_argument("--arn-hidden", default="4096,8192",
                    help="all_reduce_norm: hidden sizes (columns), comma-separated")
    ap.add_argument("--norm-shapes", default=None,
                    help="norm: comma-separated ROWSxCOLS shapes (default: the issue's six)")
    ap.add_argument("--norm-dtypes", default=None,
                    help="norm, norm_fp8: comma-separated input types of " + ",".join(NORM_DTYPES) + " (default: all)")
    ap.add_argument("--nms-boxes", default="20000", help="nms: comma-separated box counts")
    ap.add_argument("--nms-thresholds", default="0.5", help="nms: comma-separated IoU thresholds")
    ap.add_argument("--compile-sizes", default=None,
                    help="sizes that also get torch.compile (default: every size)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--launch-gap", default="hidden", choices=("hidden", "counted"),
                    help="hidden: hold the GPU busy while each timed call is issued (the events time the GPU alone); "
                         "counted: issue it to an idle GPU (host time counts)")
    ap.add_argument("--l2-rotate", type=int, default=ROTATE_L2_TIMES,
                    help="timed calls take their inputs (and outputs, where the call is given them) from rotated "
                         "copies covering at least this many times L2, as `redjit bench` does; "
                         "0: every call on the same buffers (warm in L2 where they fit)")
    ap.add_argument("--out", required=True, help="JSON output path")
    ap.add_argument("--no-compile", action="store_true", help="eager only")
    ap.add_argument(
        "--transports", default="bf16,f16", help="comma-separated: bf16,f16"
    )
    a = ap.parse_args()

    if not torch.cuda.is_available():
        log("error: torch sees no CUDA GPU")
        return 1
    transports = [t.strip() for t in a.transports.split(",") if t.strip()]
    for t in transports:
        if t not in TRANSPORTS:
            log(f"error: unknown transport {t!r}: expected one of {', '.join(TRANSPORTS)}")
            return 2
    if a.l2_rotate < 0:
        log(f"error: --l2-rotate {a.l2_rotate} must be 0 or more")
        return 2
    set_l2_rotate(a.l2_rotate)
    if a.n < 1 or a.iters < 1:
        log("error: --n and --iters must be at least 1")
        return 2
    if a.ar_batch < 1 or a.ar_timeout < 1:
        log(f"error: --ar-batch {a.ar_batch} and --ar-timeout {a.ar_timeout} must be at least 1")
        return 2
    try:
        sizes = parse_sizes(a.sizes) if a.sizes else [a.n]
        a.compile_sizes_set = set(parse_sizes(a.compile_sizes) if a.compile_sizes else sizes)
        parse_sizes(a.ar_bytes)
    except ValueError as e:
        log(f"error: bad size list: {e} (expected N, NK, NM, NG or 2^P, e.g. 1K,1M,2^28)")
        return 2
    norm_shapes = NORM_SHAPES
    if a.norm_shapes:
        try:
            norm_shapes = parse_norm_shapes(a.norm_shapes)
        except ValueError as e:
            log(f"error: --norm-shapes: {e}")
            return 2
    if a.norm_dtypes:
        keep = [d.strip() for d in a.norm_dtypes.split(",") if d.strip()]
        bad = [d for d in keep if d not in NORM_DTYPES]
        if bad:
            log(f"error: --norm-dtypes: {','.join(bad)} (one of {','.join(NORM_DTYPES)})")
            return 2
        for d in list(NORM_DTYPES):
            if d not in keep:
                del NORM_DTYPES[d]
    families = [f.strip().replace("-", "_") for f in a.families.split(",") if f.strip()]
    for f in families:
        if f not in ("reduce_copy", "reduce", "norm", "norm_fp8", "nms", "softmax_all", "all_reduce", "all_reduce_norm"):
            log(f"error: unknown family {f!r}: expected reduce_copy, reduce, norm, nms, softmax_all, all_reduce, "
                "all_reduce_norm")
            return 2
    if "all_reduce_norm" in families:
        try:
            parse_counts(a.arn_tokens, "--arn-tokens")
            parse_counts(a.arn_hidden, "--arn-hidden")
        except ValueError as e:
            log(f"error: {e}")
            return 2
    try:
        nms_counts = [int(v) for v in a.nms_boxes.split(",") if v.strip()]
        nms_thresholds = [float(v) for v in a.nms_thresholds.split(",") if v.strip()]
    except ValueError as e:
        log(f"error: bad --nms-boxes or --nms-thresholds: {e}")
        return 2
    if any(c < 1 for c in nms_counts) or any(not (t >= 0) for t in nms_thresholds):
        log("error: --nms-boxes must be at least 1 and --nms-thresholds numbers >= 0")
        return 2

    # Large recompile limits: every form is compiled afresh anyway (reset_dynamo).
    for knob in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 64)

    dev = torch.device("cuda", 0)
    gpu = torch.cuda.get_device_name(dev)
    try:
        import triton  # noqa: PLC0415

        triton_version = triton.__version__
    except Exception:  # noqa: BLE001
        triton_version = None
    n = max(sizes)
    log(f"GPU: {gpu}, torch {torch.__version__}, triton {triton_version}")
    rotated = f"inputs rotated over {a.l2_rotate}x L2" if a.l2_rotate else "inputs not rotated (--l2-rotate 0)"
    log(f"sizes {sizes}, median of {a.iters} launches after {a.warmup} warm-up, {rotated}")
    if a.launch_gap == "hidden":
        calibrate_hold()

    copies = []
    for cn in sorted(sizes):
        bufs = rotation(lambda: (torch.randn(cn, dtype=torch.float32, device=dev),  # noqa: B023
                                 torch.empty(cn, dtype=torch.float32, device=dev)), 2 * 4 * cn, dev)
        c_us = time_us(lambda src, dst: dst.copy_(src), bufs, a.warmup, a.iters)
        copies.append({"n": cn, "us": c_us, "gbps": gbps(2 * 4 * cn, c_us), "rotations": len(bufs)})
        log(f"d2d copy of {4 * cn} bytes f32: {c_us:.1f} us, {copies[-1]['gbps']:.1f} GB/s (read + write, "
            f"{len(bufs)} rotation(s))")
        del bufs
        torch.cuda.empty_cache()
    copy_gbps = copies[-1]["gbps"]

    log("")
    header = (
        f"{'transport':>9} {'config':>6} {'srcs':>4} {'dsts':>4} {'B/elem':>6} "
        f"{'eager us':>10} {'eager GB/s':>10} {'compile us':>10} {'compile GB/s':>12}"
    )
    log(header)
    log("-" * len(header))

    entries = []
    rc_sizes = sizes if "reduce_copy" in families else []
    for tname, n in [(t, n) for t in transports for n in rc_sizes]:
        t = TRANSPORTS[tname]
        for config, srcs, dsts in forms():
            size_of = lambda letter: torch.tensor([], dtype=dtype_of(letter, t)).element_size()  # noqa: B023, E731
            nbytes = sum(size_of(s) for s in srcs) * n + size_of(dsts) * n
            args = rotation(lambda: (*(torch.randn(n, device=dev, dtype=dtype_of(s, t)) for s in srcs),  # noqa: B023
                                     torch.empty(n, device=dev, dtype=dtype_of(dsts, t))), nbytes, dev)
            bpe = nbytes // n
            if len(srcs) == 2:
                eager_fn, eager_expr = reduce2_add_out, "torch.add(src0, src1, out=dst)"
                candidates = [
                    ("torch.add(src0, src1, out=dst)", reduce2_add_out),
                    ("dst.copy_(src0 + src1)", reduce2_copy),
                ]
            else:
                eager_fn, eager_expr = copy1, "dst.copy_(src0)"
                candidates = [("dst.copy_(src0)", copy1)]

            eager_us = time_us(eager_fn, args, a.warmup, a.iters)
            entry = {
                "n": n,
                "config": config,
                "transport": tname,
                "srcs": srcs,
                "dsts": dsts,
                "bytes_per_elem": bpe,
                "rotations": len(args),
                "eager_us": eager_us,
                "eager_gbps": gbps(nbytes, eager_us),
                "eager_expr": eager_expr,
                "compile_us": None,
                "compile_gbps": None,
                "compile_expr": None,
            }
            if not a.no_compile and n in a.compile_sizes_set:
                c_us, c_expr, variants, c_err = compiled_time(
                    candidates, args, a.warmup, a.iters
                )
                entry["compile_us"] = c_us
                entry["compile_gbps"] = gbps(nbytes, c_us)
                entry["compile_expr"] = c_expr
                entry["compile_variants_us"] = variants
                if c_err:
                    entry["compile_error"] = c_err
            entries.append(entry)

            fmt = lambda v, w: f"{v:>{w}.1f}" if v is not None else f"{'-':>{w}}"  # noqa: E731
            cfg = "-" if config is None else str(config)
            log(
                f"{tname:>9} {cfg:>6} {srcs:>4} {dsts:>4} {bpe:>6} "
                f"{fmt(eager_us, 10)} {fmt(entry['eager_gbps'], 10)} "
                f"{fmt(entry['compile_us'], 10)} {fmt(entry['compile_gbps'], 12)}"
            )
            del args
            torch.cuda.empty_cache()

    if "reduce" in families:
        log("")
        entries.extend(reduce_entries(sizes, REDUCE_SHAPES, a, dev))

    if "norm" in families:
        log("")
        entries.extend(norm_entries(norm_shapes, a, dev))
    if "norm_fp8" in families:
        log("")
        entries.extend(norm_fp8_entries(norm_shapes, a, dev))

    if "nms" in families:
        log("")
        entries.extend(nms_entries(nms_counts, nms_thresholds, a, dev))

    if "softmax_all" in families:
        log("")
        entries.extend(softmax_all_entries(sizes, a, dev))

    if "all_reduce" in families:
        log("")
        entries.extend(all_reduce_entries(a))
    if "all_reduce_norm" in families:
        log("")
        entries.extend(all_reduce_norm_entries(a))

    result = {
        "gpu": gpu,
        "torch": torch.__version__,
        "triton": triton_version,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "n": max(sizes),
        "iters": a.iters,
        "launch_gap": a.launch_gap,
        "l2_rotate": a.l2_rotate,
        "sizes": sizes,
        "copy_gbps": copy_gbps,
        "copy": copies,
        "entries": entries,
    }
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    log(f"\nwrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
