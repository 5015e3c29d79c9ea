//! `redjit bench reduce`: full-array reductions at each size, row and column
//! sums at fixed matrix shapes.
//!
//! Timing (`--timing`): by default `--batch` launches go back to back between one
//! pair of CUDA events and the median per-call time is reported (issue 5's
//! small-size method: what a call costs once launches queue up, launch latency
//! hidden); `graph` replays the same launches captured in a CUDA graph (no host
//! launch cost at all); `single` puts each launch between its own events after
//! the previous one has finished, as `scripts/torch_ref.py` times PyTorch, so
//! at small sizes it measures launch latency more than the kernel.

use std::sync::Arc;

use clap::{Args, ValueEnum};
use cudarc::driver::sys::CUstreamCaptureMode;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};
use redjit_codegen::spec::reduce::{Shape, Twin};
use redjit_codegen::{DType, KernelSpec, ReduceAxis, ReduceOp, ReduceSpec};
use redjit_runtime::{KernelInput, Matrix};

use super::{Bench, Common, KernelRow};
use crate::devbuf::DevBuf;
use crate::error::{CliError, CliResult, DriverContext};
use crate::timing::{Hold, capture_batch, graph_us_per_call, median_us};

#[derive(Debug, Clone, Args)]
pub struct ReduceBenchArgs {
    #[command(flatten)]
    pub common: Common,

    /// Full-array reductions, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_op, default_values_t = default_ops())]
    pub ops: Vec<ReduceOp>,

    /// Input dtypes, comma-separated (any `reduce` input: f32, bf16, f16, e4m3,
    /// e5m2, i8; the accumulator is f32, or i64 for the integer ops of i8).
    #[arg(long, value_delimiter = ',', value_parser = crate::args::parse_dtype, default_values_t = vec![DType::F32, DType::BF16])]
    pub inputs: Vec<DType>,

    /// Matrix shapes ROWSxCOLS of the row and column sums, comma-separated
    /// ("none" for no matrix kernels).
    #[arg(long, default_value = "32768x4096,8192x16384")]
    pub shapes: String,

    /// Bench these kernels (names as the runtime prints them, comma-separated
    /// or the flag repeated) instead: full-array
    /// kernels at each size, row and column kernels at each shape.
    #[arg(long = "spec", value_name = "NAME", value_delimiter = ',')]
    pub specs: Vec<String>,

    /// How launches are timed (see the module docs).
    #[arg(long, value_enum, default_value_t = Timing::BackToBack)]
    pub timing: Timing,

    /// Launches per pair of events (back-to-back, graph) [default: enough for
    /// 256 MiB of traffic, 1 to 100].
    #[arg(long, value_name = "N")]
    pub batch: Option<u64>,
}

/// How a measurement times its launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Timing {
    /// `--batch` launches back to back between one pair of CUDA events.
    BackToBack,
    /// The same launches captured once into a CUDA graph; the graph is timed.
    Graph,
    /// Each launch between its own events, after the previous one finished.
    Single,
}

/// Traffic one back-to-back batch aims at, and the most launches in one.
const BATCH_BYTES: u64 = 256 << 20;
const MAX_BATCH: u64 = 100;

/// Launches per timed batch for a launch that moves `bytes`.
pub fn batch_for(bytes: u64, asked: Option<u64>) -> u64 {
    asked
        .unwrap_or_else(|| BATCH_BYTES / bytes.max(1))
        .clamp(1, MAX_BATCH)
}

pub fn default_ops() -> Vec<ReduceOp> {
    vec![
        ReduceOp::Sum,
        ReduceOp::Max,
        ReduceOp::ArgMax,
        ReduceOp::VarSamp,
        ReduceOp::Dot,
        ReduceOp::LogSumExp,
    ]
}

fn parse_op(s: &str) -> Result<ReduceOp, String> {
    s.trim()
        .parse()
        .map_err(|e: redjit_codegen::SpecError| e.to_string())
}

impl ReduceBenchArgs {
    /// What `bench all` runs: the defaults of every flag.
    pub fn defaults(common: Common) -> Self {
        ReduceBenchArgs {
            common,
            ops: default_ops(),
            inputs: vec![DType::F32, DType::BF16],
            shapes: "32768x4096,8192x16384".into(),
            specs: Vec::new(),
            timing: Timing::BackToBack,
            batch: None,
        }
    }
}

/// `ROWSxCOLS,...` (sizes in any `--sizes` form), or `none`.
pub fn parse_shapes(s: &str) -> CliResult<Vec<(usize, usize)>> {
    if s.trim().eq_ignore_ascii_case("none") || s.trim().is_empty() {
        return Ok(Vec::new());
    }
    s.split(',')
        .map(|item| {
            let (r, c) = item.trim().split_once(['x', 'X']).ok_or_else(|| {
                CliError::usage(format!(
                    "bad shape list {s:?}: {item:?} is not ROWSxCOLS (e.g. 32768x4096)"
                ))
            })?;
            let dim = |d: &str| {
                crate::sizes::parse_size(d)
                    .map_err(|e| CliError::usage(format!("bad shape list {s:?}: {e}")))
            };
            Ok((dim(r)?, dim(c)?))
        })
        .collect()
}

/// One measurement: a kernel at a size (full array) or a shape (rows, cols).
#[derive(Debug, Clone)]
pub struct Case {
    pub spec: ReduceSpec,
    pub n: usize,
    pub matrix: Option<Matrix>,
    /// How it is timed (`--timing`, `--batch`).
    pub timing: Timing,
    pub batch: Option<u64>,
}

impl Case {
    fn shape_label(&self) -> Option<String> {
        self.matrix.map(|m| format!("{}x{}", m.rows, m.cols))
    }

    fn results(&self) -> usize {
        match (self.spec.axis, self.matrix) {
            (ReduceAxis::Rows, Some(m)) => m.rows,
            (ReduceAxis::Cols, Some(m)) => m.cols,
            _ => 1,
        }
    }

    /// Bytes a launch moves: every input element read once, results written.
    fn bytes(&self) -> u64 {
        let inputs = self.spec.op.info().inputs as u64;
        let elem = u64::from(self.spec.input.info().bytes);
        let result = if self.spec.result_i64() { 8 } else { 4 };
        inputs * elem * self.n as u64 + result * self.results() as u64
    }
}

/// The cases: each full-array kernel at each size, each row and column sum at
/// each shape (`--spec` names instead, when given).
pub fn cases(a: &ReduceBenchArgs, sizes: &[usize]) -> CliResult<Vec<Case>> {
    let shapes = parse_shapes(&a.shapes)?;
    let mut specs: Vec<ReduceSpec> = Vec::new();
    if a.specs.is_empty() {
        for &input in &a.inputs {
            for &op in &a.ops {
                specs.push(ReduceSpec {
                    op,
                    input,
                    accum: ReduceSpec::default_accum(op, input),
                    ..ReduceSpec::default()
                });
            }
        }
        for axis in [ReduceAxis::Rows, ReduceAxis::Cols] {
            for &input in &a.inputs {
                specs.push(ReduceSpec {
                    axis,
                    input,
                    accum: ReduceSpec::default_accum(ReduceOp::Sum, input),
                    ..ReduceSpec::default()
                });
            }
        }
    } else {
        for name in &a.specs {
            specs.push(name.parse()?);
        }
    }
    let mut out = Vec::new();
    for spec in specs {
        spec.validate()?;
        if spec.warp_per_row {
            return Err(CliError::usage(format!(
                "{}: name the row kernel without _w; its launcher picks the warp-per-row twin",
                spec.name()
            )));
        }
        if spec.cluster {
            return Err(CliError::usage(format!(
                "{}: name the full-array kernel without _c; its launcher picks the cluster twin",
                spec.name()
            )));
        }
        if spec.axis == ReduceAxis::All {
            out.extend(sizes.iter().map(|&n| Case {
                spec: spec.clone(),
                n,
                matrix: None,
                timing: a.timing,
                batch: a.batch,
            }));
        } else {
            out.extend(shapes.iter().map(|&(rows, cols)| Case {
                spec: spec.clone(),
                n: rows * cols,
                matrix: Some(Matrix {
                    rows,
                    cols,
                    ld: cols,
                }),
                timing: a.timing,
                batch: a.batch,
            }));
        }
    }
    Ok(out)
}

enum Out {
    F32(CudaSlice<f32>),
    I64(CudaSlice<i64>),
}

/// Median microseconds per launch of `launch` under `timing`, `batch`
/// launches per pair of events (back-to-back, graph).
fn time_launches(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    hold: Option<&Hold>,
    (warmup, iters): (usize, usize),
    timing: Timing,
    batch: u64,
    mut launch: impl FnMut() -> CliResult,
) -> CliResult<f64> {
    match timing {
        Timing::Single => median_us(ctx, stream, hold, warmup, iters, launch),
        Timing::BackToBack => {
            let us = median_us(ctx, stream, hold, warmup, iters, || {
                (0..batch).try_for_each(|_| launch())
            })?;
            Ok(us / batch as f64)
        }
        Timing::Graph => {
            // Outside the capture first: twins compile and load, the workspace
            // grows, so the captured launches allocate nothing.
            for _ in 0..warmup.max(1) {
                launch()?;
            }
            stream
                .synchronize()
                .during(|| "the warm-up before capture".into())?;
            // One stream, nothing else running: cudarc's per-buffer event
            // tracking (waits and records around every launch) has nothing to
            // order here and would put event nodes from outside into the capture.
            // SAFETY: no other stream touches these buffers until it is back on.
            unsafe { ctx.disable_event_tracking() };
            let captured = capture_batch(
                stream,
                CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                batch as usize,
                &mut launch,
            );
            // SAFETY: restores the default.
            unsafe { ctx.enable_event_tracking() };
            graph_us_per_call(ctx, stream, hold, iters, batch as usize, &captured?)
        }
    }
}

pub fn bench(b: &mut Bench<'_>, cases: &[Case]) -> CliResult {
    let Some(first) = cases.first() else {
        return Err(CliError::usage("no reduce kernel to bench"));
    };
    let (timing, batch) = (first.timing, first.batch);
    let rt = b.rt;
    let arch = rt.device().arch;
    let mut specs: Vec<ReduceSpec> = Vec::new();
    for c in cases {
        // The twins the launcher may take for this spec: those valid for its
        // axis (and the cluster twin only from sm_90 on).
        let twins = Twin::ALL
            .into_iter()
            .map(|t| c.spec.for_twin(t))
            .filter(|t| t.check_arch(arch).is_ok());
        for s in std::iter::once(c.spec.clone()).chain(twins) {
            if !specs.contains(&s) {
                specs.push(s);
            }
        }
    }
    b.progress
        .set_message(format!("compiling {} reduce kernels", specs.len()));
    let prep = rt.prepare(&specs)?;
    b.println(format!(
        "reduce: prepared {} kernels in {:.1} ms (compiled {}, from disk {})",
        prep.kernels,
        prep.wall.as_secs_f64() * 1e3,
        prep.compiled,
        prep.from_disk
    ));
    b.println(match timing {
        Timing::Single => "reduce: each launch timed alone between its own events".to_string(),
        Timing::BackToBack => format!(
            "reduce: per-call time of back-to-back launches, {} per pair of events",
            batch.map_or("1 to 100 (256 MiB of traffic)".to_string(), |k| k
                .to_string())
        ),
        Timing::Graph => format!(
            "reduce: per-call time of a CUDA graph of {} launches",
            batch.map_or("1 to 100 (256 MiB of traffic)".to_string(), |k| k
                .to_string())
        ),
    });
    b.expect(cases.len() as u64);
    let (ctx, stream) = (rt.context(), rt.stream());
    // Sizes in order, so the copy of each is measured before its kernels.
    let mut order: Vec<&Case> = cases.iter().collect();
    order.sort_by_key(|c| c.n);
    for case in order {
        let name = case.spec.name();
        let label = case
            .shape_label()
            .unwrap_or_else(|| crate::sizes::fmt_size(case.n as u64));
        b.progress.set_message(format!("{name} {label}"));
        let copy_gbps = b.copy_gbps(case.n)?;
        let kernel = rt.reduce(&case.spec)?;
        // A row of a tuned layout names it (a twin's row keeps the spec's name).
        let launched = kernel.launched(match case.matrix {
            Some(m) => Shape::Matrix {
                rows: m.rows as u64,
                cols: m.cols as u64,
                ld: m.ld as u64,
            },
            None => Shape::All { n: case.n as u64 },
        });
        let bytes = case.bytes();
        b.check_fits(&format!("{name} at {label}"), bytes)?;
        let rotations = b.rotations(bytes);
        let inputs = case.spec.op.info().inputs;
        let mut sets: Vec<Vec<DevBuf>> = Vec::new();
        for _ in 0..rotations {
            sets.push(
                (0..inputs)
                    .map(|_| b.filler.alloc(case.spec.input, case.n))
                    .collect::<CliResult<_>>()?,
            );
        }
        let results = case.results();
        let what = || "allocating a bench output".to_string();
        let mut out = if case.spec.result_i64() {
            Out::I64(stream.alloc_zeros::<i64>(results).during(what)?)
        } else {
            Out::F32(stream.alloc_zeros::<f32>(results).during(what)?)
        };
        let mut i = 0usize;
        let counts = (b.common.warmup, b.common.iters);
        let per_batch = batch_for(bytes, case.batch);
        let us = time_launches(
            ctx,
            stream,
            b.hold.as_ref(),
            counts,
            case.timing,
            per_batch,
            || {
                let set = &sets[i % rotations as usize];
                i += 1;
                let views: Vec<_> = set.iter().map(|d| d.view(0, case.n)).collect();
                let srcs: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
                match (&mut out, case.matrix) {
                    (Out::F32(o), None) => kernel.launch(stream, &srcs, o)?,
                    (Out::I64(o), None) => kernel.launch(stream, &srcs, o)?,
                    (Out::F32(o), Some(m)) => kernel.launch_matrix(stream, &srcs, m, o)?,
                    (Out::I64(o), Some(m)) => kernel.launch_matrix(stream, &srcs, m, o)?,
                }
                Ok(())
            },
        )?;
        drop(sets);
        stream
            .synchronize()
            .during(|| format!("finishing {name}"))?;
        let shape = case.shape_label();
        let reference = b
            .torch
            .as_ref()
            .and_then(|t| t.get_named(&name, case.n as u64, shape.as_deref()));
        b.push(KernelRow::measured(
            "reduce",
            if launched.strategy.is_some() {
                launched.name()
            } else {
                name
            },
            case.n as u64,
            shape,
            bytes,
            rotations,
            us,
            copy_gbps,
            reference,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ReduceBenchArgs {
        ReduceBenchArgs::defaults(Common::for_tests())
    }

    #[test]
    fn default_cases_sweep_full_arrays_and_fix_matrices() {
        let c = cases(&args(), &[1 << 20, 1 << 28]).unwrap();
        // 6 ops x 2 inputs x 2 sizes, and rows/cols x 2 inputs x 2 shapes.
        assert_eq!(c.len(), 6 * 2 * 2 + 2 * 2 * 2);
        let rows = c.iter().find(|c| c.spec.axis == ReduceAxis::Rows).unwrap();
        assert_eq!(rows.shape_label().as_deref(), Some("32768x4096"));
        assert_eq!(rows.bytes(), 4 * 32768 * 4096 + 4 * 32768);
        let dot = c.iter().find(|c| c.spec.op == ReduceOp::Dot).unwrap();
        assert_eq!(dot.bytes(), 2 * 4 * (1 << 20) + 4);
    }

    #[test]
    fn shapes_parse_and_fail_on_one_line() {
        assert_eq!(
            parse_shapes("32768x4096, 8Kx16K").unwrap(),
            vec![(32768, 4096), (8192, 16384)]
        );
        assert!(parse_shapes("none").unwrap().is_empty());
        for bad in ["32768", "axb", "0x5"] {
            let e = parse_shapes(bad).unwrap_err().to_string();
            assert!(e.starts_with("bad shape list"), "{e}");
        }
    }

    #[test]
    fn spec_names_select_kernels() {
        let mut a = args();
        a.specs = vec!["reduce_rows_sum_bf16_f32".into()];
        assert_eq!(cases(&a, &[1024]).unwrap().len(), 2);
        a.specs = vec!["reduce_rows_sum_bf16_f32_w".into()];
        assert!(cases(&a, &[1024]).is_err());
        a.specs = vec!["reduce_all_sum_bf16_f32_c".into()];
        assert!(cases(&a, &[1024]).is_err());
    }

    #[test]
    fn batches_cover_small_sizes_and_leave_big_ones_alone() {
        // 2^16 f32: 100 launches a batch; 2^28 f32: one.
        assert_eq!(batch_for(4 << 16, None), 100);
        assert_eq!(batch_for(4 << 28, None), 1);
        assert_eq!(batch_for(4 << 22, None), 16);
        assert_eq!(batch_for(4 << 16, Some(7)), 7);
        assert_eq!(batch_for(4 << 16, Some(0)), 1);
    }
}
