//! reduce in selftest: every full-array op x input x accumulator, and the
//! row and column kernels of six ops (sum, max, argmax, sample variance, dot,
//! logsumexp) over every input plus the lossy bf16 sum, each on shapes that take
//! the block-per-row and the warp-per-row kernel, strided views, multi-split
//! columns and a start one element in; inputs padded with NaN (a read out of
//! range shows), outputs poisoned on both sides, results checked against the
//! f64 CPU twin within the tolerance derived from the launch's plan.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaSlice, CudaStream};
use redjit_codegen::{DType, KernelSpec, ReduceAxis, ReduceOp, ReduceSpec};
use redjit_runtime::reference::HostBuffer;
use redjit_runtime::reference_reduce::{self, Expected};
use redjit_runtime::{KernelInput, Matrix, ReduceShape, Runtime};

use super::FamilyResult;
use crate::args::AnySpec;
use crate::devbuf::{DevBuf, random_block};
use crate::error::{CliResult, DriverContext};

/// Poisoned elements on each side of an output and after an input.
const SLACK: usize = 3;
const POISON_I64: i64 = i64::MIN + 0x5eed;
/// Full-array size for 16-bit accumulators: their partial sums stay finite.
const LOSSY_N: usize = 4099;
/// The row and column kernels' ops.
const MATRIX_OPS: &[ReduceOp] = &[
    ReduceOp::Sum,
    ReduceOp::Max,
    ReduceOp::ArgMax,
    ReduceOp::VarSamp,
    ReduceOp::Dot,
    ReduceOp::LogSumExp,
];

fn m(rows: usize, cols: usize, ld: usize) -> Matrix {
    Matrix { rows, cols, ld }
}

/// (matrix, offset of the view): block-per-row, warp-per-row and split rows,
/// strided, many column splits, one split, a view one element in.
fn shapes(axis: ReduceAxis) -> Vec<(Matrix, usize)> {
    match axis {
        ReduceAxis::Rows => vec![
            (m(37, 1537, 1540), 0),
            (m(301, 67, 67), 1),
            (m(3, 40_003, 40_008), 1),
        ],
        ReduceAxis::Cols => vec![(m(2001, 77, 80), 0), (m(5, 300, 300), 1)],
        ReduceAxis::All => Vec::new(),
    }
}

pub fn specs() -> Vec<ReduceSpec> {
    let mut out = ReduceSpec::matrix(ReduceAxis::All);
    for axis in [ReduceAxis::Rows, ReduceAxis::Cols] {
        for &op in MATRIX_OPS {
            for &input in DType::ALL.iter().filter(|d| d.info().reduce_input) {
                out.push(ReduceSpec {
                    axis,
                    op,
                    input,
                    accum: ReduceSpec::default_accum(op, input),
                    ..ReduceSpec::default()
                });
            }
        }
        out.push(ReduceSpec {
            axis,
            input: DType::BF16,
            accum: DType::BF16,
            ..ReduceSpec::default()
        });
    }
    out
}

/// Each spec, and for row kernels the warp-per-row twin the launcher picks for
/// short rows and the split-row twin it picks for few rows.
pub fn compile_list(specs: &[ReduceSpec]) -> Vec<AnySpec> {
    specs
        .iter()
        .flat_map(|s| {
            let twins = (s.axis == ReduceAxis::Rows)
                .then(|| [s.for_warp_per_row(), s.for_split_rows()])
                .into_iter()
                .flatten();
            std::iter::once(s.clone()).chain(twins)
        })
        .map(|s| Box::new(s) as AnySpec)
        .collect()
}

/// Inputs of `len` elements (dot: two), random, never zero (integers: the
/// random values times 100, rounded).
fn inputs(spec: &ReduceSpec, len: usize, seed: u64) -> Vec<HostBuffer> {
    let scale = if spec.input.info().integer {
        100.0
    } else {
        1.0
    };
    (0..spec.op.info().inputs)
        .map(|i| {
            let v = random_block(len, seed ^ ((i as u64 + 1) << 32));
            HostBuffer::from_fn(spec.input, len, |j| scale * v[j])
        })
        .collect()
}

/// `host` on the device after `offset` NaNs and before SLACK more.
fn upload(stream: &Arc<CudaStream>, host: &HostBuffer, offset: usize) -> CliResult<DevBuf> {
    DevBuf::upload_padded(stream, host, offset, SLACK)
}

enum Out {
    F32(CudaSlice<f32>),
    I64(CudaSlice<i64>),
}

pub fn check(rt: &Runtime, n: usize) -> CliResult<FamilyResult> {
    let t0 = Instant::now();
    // fp8 needs sm_89+: kernels this GPU cannot run are not checked here (the
    // spec refuses them with a typed error; tests cover that).
    let specs: Vec<ReduceSpec> = specs()
        .into_iter()
        .filter(|s| s.min_arch() <= rt.device().arch)
        .collect();
    let mut r = FamilyResult {
        kernels: specs.len(),
        ..FamilyResult::default()
    };
    for (k, spec) in specs.iter().enumerate() {
        let seed = 0x7ed_0ce5 ^ ((k as u64) << 40);
        let cases: Vec<(Matrix, usize)> = match spec.axis {
            ReduceAxis::All => {
                let n = if spec.accum == DType::F32 {
                    n
                } else {
                    LOSSY_N.min(n)
                };
                // The whole array, then a view one element in.
                // (a full-array length as a one-row matrix)
                vec![(m(1, n, n), 0), (m(1, n - 1, n - 1), 1)]
            }
            axis => shapes(axis),
        };
        for (case, (mat, offset)) in cases.into_iter().enumerate() {
            let len = (mat.rows - 1) * mat.ld + mat.cols;
            let hosts = inputs(spec, len, seed ^ case as u64);
            let what = if spec.axis == ReduceAxis::All {
                format!("{} n={len} offset={offset}", spec.name())
            } else {
                format!("{} {mat:?} offset={offset}", spec.name())
            };
            r.record(&what, check_one(rt, spec, &hosts, mat, offset));
        }
    }
    r.time = t0.elapsed();
    Ok(r)
}

/// One launch of `spec` over `mat` (a full-array kernel: its one row) from
/// random inputs (`seed`), its output poisoned first, against the CPU twin:
/// `Ok(Err(why))` where they differ or it wrote outside its output.
pub fn check_case(
    rt: &Runtime,
    spec: &ReduceSpec,
    mat: Matrix,
    seed: u64,
) -> CliResult<Result<(), String>> {
    let len = (mat.rows - 1) * mat.ld + mat.cols;
    check_one(rt, spec, &inputs(spec, len, seed), mat, 0)
}

/// One launch of `spec` over `hosts` (each `offset` elements into its device
/// buffer) against the twin. `Err` describes the mismatch.
fn check_one(
    rt: &Runtime,
    spec: &ReduceSpec,
    hosts: &[HostBuffer],
    mat: Matrix,
    offset: usize,
) -> CliResult<Result<(), String>> {
    let s = rt.stream();
    let kernel = rt.reduce(spec)?;
    let len = hosts[0].len();
    let devs: Vec<DevBuf> = hosts
        .iter()
        .map(|h| upload(s, h, offset))
        .collect::<CliResult<_>>()?;
    let views: Vec<_> = devs.iter().map(|d| d.view(offset, len)).collect();
    let srcs: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
    let (results, shape) = match spec.axis {
        ReduceAxis::All => (1, ReduceShape::All { n: len as u64 }),
        axis => (
            if axis == ReduceAxis::Rows {
                mat.rows
            } else {
                mat.cols
            },
            ReduceShape::Matrix {
                rows: mat.rows as u64,
                cols: mat.cols as u64,
                ld: mat.ld as u64,
            },
        ),
    };
    let total = results + 2 * SLACK;
    let what = || "a selftest output".to_string();
    let mut out = if spec.result_i64() {
        Out::I64(s.clone_htod(&vec![POISON_I64; total]).during(what)?)
    } else {
        Out::F32(
            s.clone_htod(&vec![f32::from_bits(u32::MAX); total])
                .during(what)?,
        )
    };
    let matrix = (spec.axis != ReduceAxis::All).then_some(mat);
    match &mut out {
        Out::F32(b) => {
            let mut v = b.slice_mut(SLACK..SLACK + results);
            match matrix {
                None => kernel.launch(s, &srcs, &mut v)?,
                Some(mm) => kernel.launch_matrix(s, &srcs, mm, &mut v)?,
            }
        }
        Out::I64(b) => {
            let mut v = b.slice_mut(SLACK..SLACK + results);
            match matrix {
                None => kernel.launch(s, &srcs, &mut v)?,
                Some(mm) => kernel.launch_matrix(s, &srcs, mm, &mut v)?,
            }
        }
    }
    let chain = kernel.plan(shape)?.chain;
    let refs: Vec<&HostBuffer> = hosts.iter().collect();
    let dims = (mat.rows, mat.cols, mat.ld);
    let want: Vec<Expected> = match spec.axis {
        ReduceAxis::All => vec![reference_reduce::all(spec, chain, &refs)],
        ReduceAxis::Rows => reference_reduce::rows(spec, chain, &refs, dims),
        ReduceAxis::Cols => reference_reduce::cols(spec, chain, &refs, dims),
    };
    let inside = |i: usize| (SLACK..SLACK + results).contains(&i);
    let mut bad = Vec::new();
    let mut clobbered = 0;
    match &out {
        Out::F32(b) => {
            let got = s.clone_dtoh(b).during(what)?;
            for (i, g) in got.iter().enumerate() {
                if !inside(i) {
                    clobbered += usize::from(g.to_bits() != u32::MAX);
                } else if let Err(e) = want[i - SLACK].check_f32(*g) {
                    bad.push(format!("[{}] {e}", i - SLACK));
                }
            }
        }
        Out::I64(b) => {
            let got = s.clone_dtoh(b).during(what)?;
            for (i, &g) in got.iter().enumerate() {
                if !inside(i) {
                    clobbered += usize::from(g != POISON_I64);
                } else if let Err(e) = want[i - SLACK].check_i64(g) {
                    bad.push(format!("[{}] {e}", i - SLACK));
                }
            }
        }
    }
    Ok(if bad.is_empty() && clobbered == 0 {
        Ok(())
    } else {
        Err(format!(
            "{} of {results} results wrong, {clobbered} written outside the output{}",
            bad.len(),
            bad.first()
                .map_or(String::new(), |b| format!("; first {b}"))
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use redjit_runtime::ReduceTwin as Twin;

    #[test]
    fn specs_are_valid_distinct_and_cover_every_full_array_op() {
        let specs = specs();
        let names: std::collections::HashSet<_> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), specs.len());
        for s in &specs {
            s.validate().unwrap();
        }
        for &op in ReduceOp::ALL {
            assert!(
                specs
                    .iter()
                    .any(|s| s.op == op && s.axis == ReduceAxis::All)
            );
        }
        // A row kernel's warp-per-row and split-row twins.
        let twins = compile_list(&specs).len() - specs.len();
        assert_eq!(
            twins,
            2 * specs.iter().filter(|s| s.axis == ReduceAxis::Rows).count()
        );
    }

    #[test]
    fn shapes_take_every_row_kernel_and_split_columns() {
        // A spec's plan for a selftest shape on a device of 132 SMs.
        let plan = |spec: &ReduceSpec, mm: Matrix| {
            let shape = ReduceShape::Matrix {
                rows: mm.rows as u64,
                cols: mm.cols as u64,
                ld: mm.ld as u64,
            };
            spec.plan(shape, 132, 8)
        };
        let spec = ReduceSpec {
            axis: ReduceAxis::Rows,
            ..ReduceSpec::default()
        };
        let twins: Vec<Option<Twin>> = shapes(ReduceAxis::Rows)
            .iter()
            .map(|&(mm, _)| plan(&spec, mm).twin)
            .collect();
        // A block a row, a warp a row, few long rows split (the 1-byte
        // inputs' splits too: two rounds of their packs at least).
        assert_eq!(twins, [None, Some(Twin::WarpPerRow), Some(Twin::SplitRows)]);
        let bytes = ReduceSpec {
            input: DType::I8,
            accum: DType::I64,
            ..spec.clone()
        };
        let p = plan(&bytes, shapes(ReduceAxis::Rows)[2].0);
        assert!(p.twin == Some(Twin::SplitRows) && p.grid.1 > 1, "{p:?}");
        let cols = ReduceSpec {
            axis: ReduceAxis::Cols,
            ..ReduceSpec::default()
        };
        let plan = plan(&cols, shapes(ReduceAxis::Cols)[0].0);
        assert!(plan.grid.1 > 1, "{plan:?}");
    }
}
