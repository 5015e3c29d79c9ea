//! norm in selftest: every row op (softmax and log-softmax, safe and online;
//! layer norm and RMS norm, with and without the fused residual add) x every
//! input x output dtype, at the default layout for rows of 100 (lane groups),
//! 1031 (a block a row) and 20 000 (blocks a row) elements, strided rows (ld
//! past cols), NaN-padded inputs and NaN-poisoned outputs, against the f64
//! twin (`reference_norm::expect_rows`: f32 within the derived bound, 16-bit
//! within it or one ulp; residual_out bit for bit).

use std::time::Instant;

use redjit_codegen::spec::norm::Fp8Scale;
use redjit_codegen::spec::norm::row_ops;
use redjit_codegen::{DType, KernelSpec, NormSpec};
use redjit_runtime::reference::HostBuffer;
use redjit_runtime::reference_norm::{NormInputs, expect_rows};
use redjit_runtime::{Matrix, Runtime};

use super::FamilyResult;
use crate::args::AnySpec;
use crate::devbuf::{DevBuf, random_block};
use crate::error::CliResult;
use crate::norm_views::{NormBuffers, NormViews};

/// NaN elements after each buffer.
const SLACK: usize = 3;
/// (rows, cols, ld): a lane group, a block and a split row each, once in whole
/// packs (cols and ld multiples of 4: the kernel itself) and once not (its
/// general twin, which the launcher takes).
const SHAPES: &[(usize, usize, usize)] = &[
    (37, 100, 104),
    (37, 99, 101),
    (9, 2048, 2052),
    (9, 1031, 1031),
    (3, 20_000, 20_004),
    (3, 20_000, 20_003),
];

/// Each op and dtype pair at the default layout of each shape's row length.
pub fn specs() -> Vec<(NormSpec, Matrix)> {
    let mut out = Vec::new();
    for ops in row_ops() {
        for input in DType::stores() {
            for output in DType::stores() {
                for &(rows, cols, ld) in SHAPES {
                    let spec = NormSpec::with(ops, input, output, cols as u64);
                    out.push((spec, Matrix { rows, cols, ld }));
                }
            }
        }
    }
    out
}

pub fn compile_list(specs: &[(NormSpec, Matrix)]) -> Vec<AnySpec> {
    let mut names: Vec<String> = Vec::new();
    let mut out: Vec<AnySpec> = Vec::new();
    for (s, m) in specs {
        let whole = m.cols % 4 == 0 && m.ld % 4 == 0;
        let s = if whole { s.clone() } else { s.general_twin() };
        if !names.contains(&s.name()) {
            names.push(s.name());
            out.push(Box::new(s));
        }
    }
    out
}

fn values(dtype: DType, n: usize, seed: u64, scale: f32, bias: f32) -> HostBuffer {
    let block = random_block(n.clamp(1, 1 << 16), seed);
    HostBuffer::from_fn(dtype, n, |i| bias + scale * block[i % block.len()])
}

pub fn check(rt: &Runtime) -> CliResult<FamilyResult> {
    let t0 = Instant::now();
    let cases = specs();
    let mut r = FamilyResult {
        kernels: compile_list(&cases).len(),
        ..FamilyResult::default()
    };
    for (k, (spec, m)) in cases.iter().enumerate() {
        let what = format!("{} {}x{} ld {}", spec.name(), m.rows, m.cols, m.ld);
        let verdict = check_case(rt, spec, m, 0x0a11_5e1f ^ ((k as u64) << 20));
        r.record(&what, verdict);
    }
    r.time = t0.elapsed();
    Ok(r)
}

/// One launch of `spec` over `m` from random inputs (`seed`), its output
/// poisoned first, against the CPU twin: `Ok(Err(why))` where they differ
/// or the kernel wrote outside its elements.
pub fn check_case(
    rt: &Runtime,
    spec: &NormSpec,
    m: &Matrix,
    seed: u64,
) -> CliResult<Result<(), String>> {
    let s = rt.stream();
    let info = spec.op.info();
    let n = m.extent().unwrap_or(0);
    let param = if info.softmax { 1.0 } else { 1e-5 };
    let x = values(spec.input, n, seed, 2.0, 0.0);
    let res = spec
        .residual
        .then(|| values(spec.input, n, seed ^ 1, 1.0, 0.0));
    let w = (!info.softmax).then(|| values(spec.input, m.cols, seed ^ 2, 0.25, 1.0));
    let b = info
        .bias
        .then(|| values(spec.input, m.cols, seed ^ 3, 0.5, 0.0));
    let kernel = rt.norm(spec)?;
    let up = |h: &HostBuffer| DevBuf::upload_padded(s, h, 0, SLACK);
    let xd = up(&x)?;
    let rd = res.as_ref().map(up).transpose()?;
    let wd = w.as_ref().map(up).transpose()?;
    let bd = b.as_ref().map(up).transpose()?;
    let poison = |d: DType, len: usize| {
        DevBuf::upload_padded(s, &HostBuffer::from_fn(d, 0, |_| 0.0), 0, len + SLACK)
    };
    let mut yd = poison(spec.output, n)?;
    let mut rod = spec.residual.then(|| poison(spec.input, n)).transpose()?;
    // An FP8 output's scales: a row's written over NaN, or the one given
    // (it keeps the random rows inside e4m3's range).
    let given = 0.02f32;
    let mut scales = match spec.fp8 {
        Some(Fp8Scale::PerRow) => Some(poison(DType::F32, m.rows)?),
        Some(Fp8Scale::Given) => Some(up(&HostBuffer::from_fn(DType::F32, 1, |_| given))?),
        None => None,
    };
    {
        let mut views = NormViews::of(
            spec,
            *m,
            NormBuffers {
                x: &xd,
                residual: rd.as_ref(),
                weight: wd.as_ref(),
                bias: bd.as_ref(),
                out: &mut yd,
                residual_out: rod.as_mut(),
                scale: scales.as_mut(),
            },
        );
        let args = views.args(*m, param);
        kernel.launch(s, args)?;
    }
    let got = yd.download(s)?;
    let got_res = rod.as_ref().map(|d| d.download(s)).transpose()?;
    let got_scales = scales
        .as_ref()
        .filter(|_| spec.fp8 == Some(Fp8Scale::PerRow))
        .map(|d| d.download(s))
        .transpose()?;
    let mut inputs = NormInputs::new(&x, m.rows, m.cols, m.ld, param);
    inputs.residual = res.as_ref();
    inputs.weight = w.as_ref();
    inputs.bias = b.as_ref();
    inputs.scale = (spec.fp8 == Some(Fp8Scale::Given)).then_some(given);
    let want = expect_rows(spec, &inputs);
    // Poison between the rows and after the last stays.
    for i in 0..n + SLACK {
        let inside = i < n && i % m.ld < m.cols;
        if !inside && !got.get_f32(i).is_nan() {
            return Ok(Err(format!("wrote outside its elements at {i}")));
        }
    }
    for (row, rw) in want.iter().enumerate() {
        for (c, e) in rw.out.iter().enumerate() {
            if let Err(msg) = e.check(spec.output, got.bits(row * m.ld + c)) {
                return Ok(Err(format!("out[{row}][{c}]: {msg}")));
            }
        }
        if let (Some(e), Some(g)) = (&rw.scale, &got_scales)
            && let Err(msg) = e.check(DType::F32, g.bits(row))
        {
            return Ok(Err(format!("scale[{row}]: {msg}")));
        }
        if let (Some(bits), Some(g)) = (&rw.residual_out, &got_res) {
            for (c, &wb) in bits.iter().enumerate() {
                let gb = g.bits(row * m.ld + c);
                if gb != wb {
                    return Ok(Err(format!(
                        "residual_out[{row}][{c}]: {gb:#x}, want {wb:#x}"
                    )));
                }
            }
        }
    }
    Ok(Ok(()))
}
