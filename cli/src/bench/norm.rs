//! `redjit bench norm`: softmax, log-softmax, layer norm and RMS norm (and the
//! fused residual variants) over rows, at the default shapes (large rows,
//! many short rows and long rows), with the device table's layout for each shape or, with `--variants`, every layout that holds
//! the row (the measurements that are to pick the ladder of
//! `NormSpec::for_cols`).
//!
//! Bytes counted: every element a launch must read and write once (x and out;
//! residual and residual_out for the fused variants; weight and bias once).

use clap::Args;
use redjit_codegen::spec::norm::{Fp8Scale, row_ops, variants};
use redjit_codegen::tuning::Tuning;
use redjit_codegen::{DType, KernelSpec, NormLayout, NormOp, NormSpec, SoftmaxAlgo};
use redjit_runtime::{Matrix, NormKernel};

use super::reduce::parse_shapes;
use super::{Bench, Common, KernelRow};
use crate::devbuf::{DevBuf, Filler};
use crate::error::{CliError, CliResult, DriverContext};
use crate::norm_views::{NormBuffers, NormViews};

/// The seed of `--offset`'s input block (not the bench's own: the rows differ).
const INPUT_SEED: u64 = 0x5eed_1234_abcd_0002;

/// The default shapes: large rows, many short rows and long rows.
pub const DEFAULT_SHAPES: &str = "32768x4096,8192x16384,8192x32768,262144x128,4x1000003,64x1048576";

#[derive(Debug, Clone, Args)]
pub struct NormBenchArgs {
    #[command(flatten)]
    pub common: Common,

    /// Shapes ROWSxCOLS, comma-separated.
    #[arg(long, default_value = DEFAULT_SHAPES)]
    pub shapes: String,

    /// Element types (input = output), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = crate::args::parse_dtype, default_values_t = vec![DType::F32, DType::BF16])]
    pub dtypes: Vec<DType>,

    /// Every layout variant that holds the row, not only the default one.
    #[arg(long)]
    pub variants: bool,

    /// Bench these kernels (names as the runtime prints them, comma-separated
    /// or the flag repeated) at each shape that fits them, instead.
    #[arg(long = "spec", value_name = "NAME", value_delimiter = ',')]
    pub specs: Vec<String>,

    /// Each kernel again with these launch bounds (blocks per SM, comma-separated;
    /// `_o<n>` in names), where its block size allows them.
    #[arg(long, value_delimiter = ',')]
    pub bounds: Vec<u32>,

    /// Added to every input element (the random values lie in ±[0.5, 1.5)): rows
    /// this far off zero. Past 1 / sqrt(8) of their spread, a layer norm whose
    /// reduction is cheap sums its squares again about the mean.
    #[arg(long, default_value_t = 0.0)]
    pub offset: f32,

    /// The norms (layer and RMS, with and without the residual) with an FP8
    /// e4m3 output instead: `qd`, each row's own scale (written), or `qs`,
    /// one given scale (read).
    #[arg(long, value_parser = parse_fp8)]
    pub fp8: Option<Fp8Scale>,
}

fn parse_fp8(s: &str) -> Result<Fp8Scale, String> {
    [Fp8Scale::PerRow, Fp8Scale::Given]
        .into_iter()
        .find(|q| q.suffix() == s)
        .ok_or_else(|| {
            format!("`{s}` is no FP8 scaling: qd (each row's scale) or qs (a given scale)")
        })
}

impl NormBenchArgs {
    /// What `bench all` runs: the defaults of every flag.
    pub fn defaults(common: Common) -> Self {
        NormBenchArgs {
            common,
            shapes: DEFAULT_SHAPES.into(),
            dtypes: vec![DType::F32, DType::BF16],
            variants: false,
            specs: Vec::new(),
            bounds: Vec::new(),
            offset: 0.0,
            fp8: None,
        }
    }
}

/// One measurement: a kernel at a shape.
#[derive(Debug, Clone)]
pub struct Case {
    pub spec: NormSpec,
    pub m: Matrix,
}

impl Case {
    fn label(&self) -> String {
        format!("{}x{}", self.m.rows, self.m.cols)
    }

    /// Bytes a launch must move.
    pub fn bytes(&self) -> u64 {
        let info = self.spec.op.info();
        let vectors = u64::from(!info.softmax) + u64::from(info.bias);
        self.row_bytes() + vectors * self.m.cols as u64 * u64::from(self.spec.input.info().bytes)
    }

    /// The row streams' bytes (x and out, and the residual in and out): what
    /// the same-bytes copy moves. The weight and bias (a few KB) are left out:
    /// they put the copy off a power of two, and such a copy ran 5 % slower
    /// (2^24 + 32 f32 against 2^24 on the H100, commit df27738).
    pub fn row_bytes(&self) -> u64 {
        let n = (self.m.rows * self.m.cols) as u64;
        let i = u64::from(self.spec.input.info().bytes);
        let o = u64::from(self.spec.output.info().bytes);
        n * (i + o) + if self.spec.residual { 2 * n * i } else { 0 }
    }
}

/// The name PyTorch's entries are keyed by: op, residual and dtypes, without
/// the algorithm and the layout (PyTorch has one of each).
pub fn torch_key(spec: &NormSpec) -> String {
    format!(
        "norm_{}{}_{}_{}",
        spec.op,
        if spec.residual { "_res" } else { "" },
        spec.input,
        spec.output
    )
}

/// The cases: each row op (the online and the safe softmax, log-softmax online,
/// each norm with and without residual) x dtype x shape, at the default layout
/// or every fitting variant; `--spec` names instead.
/// `tuning`: the table the default layouts come from (the device's).
pub fn cases(a: &NormBenchArgs, tuning: &Tuning) -> CliResult<Vec<Case>> {
    let shapes = parse_shapes(&a.shapes)?;
    if shapes.iter().any(|&(r, c)| r == 0 || c == 0) {
        return Err(CliError::usage("a shape has no rows or no columns"));
    }
    let mut out = Vec::new();
    let mut push = |spec: NormSpec, (rows, cols): (usize, usize)| {
        if spec.capacity().is_some_and(|c| c < cols as u64) {
            return;
        }
        // The bench's buffers are aligned and ld = cols: rows of a length that
        // is not a multiple of 4 run on a general twin, which the launcher
        // picks and the bench names (`bench`).
        let bounded = a.bounds.iter().map(|&b| NormSpec {
            bound: Some(b),
            ..spec.clone()
        });
        for spec in std::iter::once(spec.clone()).chain(bounded) {
            if spec.validate().is_ok() {
                out.push(Case {
                    spec,
                    m: Matrix {
                        rows,
                        cols,
                        ld: cols,
                    },
                });
            }
        }
    };
    if !a.specs.is_empty() {
        for name in &a.specs {
            let spec: NormSpec = name.parse()?;
            for &s in &shapes {
                push(spec.clone(), s);
            }
        }
        return Ok(out);
    }
    for &d in &a.dtypes {
        for ops in row_ops() {
            // The safe log-softmax adds nothing the safe softmax does not show.
            if ops.0 == NormOp::LogSoftmax && ops.1 == Some(SoftmaxAlgo::Safe) {
                continue;
            }
            if a.fp8.is_some() && ops.0.info().softmax {
                continue;
            }
            for &(rows, cols) in &shapes {
                let op = NormSpec::with(ops, d, d, 1);
                let op = match a.fp8 {
                    Some(q) => op.to_e4m3(q),
                    None => op,
                };
                let base = op.for_shape(Some(rows as u64), cols as u64, tuning);
                if a.variants {
                    // Layouts far wider than the row only idle (blocks and
                    // splits at 128 columns ran at 1-27 % of copy and took most
                    // of the call, commit 518b645): a variant must hold the row in at most 8x
                    // its length, and a split must be needed.
                    for v in variants(&base) {
                        let wide = v.capacity().is_some_and(|c| c > 8 * cols as u64)
                            || (v.layout == NormLayout::Split && base.layout != NormLayout::Split);
                        if !wide {
                            push(v, (rows, cols));
                        }
                    }
                } else {
                    push(base, (rows, cols));
                }
            }
        }
    }
    Ok(out)
}

/// `offset`: added to every input element (`NormBenchArgs::offset`).
pub fn bench(b: &mut Bench<'_>, cases: &[Case], offset: f32) -> CliResult {
    if cases.is_empty() {
        return Err(CliError::usage("no norm kernel to bench"));
    }
    let rt = b.rt;
    // Inputs from their own block, moved off zero; outputs from the usual one.
    let inputs = if offset != 0.0 {
        b.println(format!("norm: inputs moved {offset} off zero"));
        Some(Filler::with_offset(rt.stream(), INPUT_SEED, offset)?)
    } else {
        None
    };
    let mut specs: Vec<NormSpec> = Vec::new();
    for c in cases {
        if !specs.contains(&c.spec) {
            specs.push(c.spec.clone());
        }
    }
    b.progress
        .set_message(format!("compiling {} norm kernels", specs.len()));
    let prep = rt.prepare(&specs)?;
    b.println(format!(
        "norm: prepared {} kernels in {:.1} ms (compiled {}, from disk {})",
        prep.kernels,
        prep.wall.as_secs_f64() * 1e3,
        prep.compiled,
        prep.from_disk
    ));
    b.expect(cases.len() as u64);
    let mut order: Vec<&Case> = cases.iter().collect();
    order.sort_by_key(|c| c.m.rows * c.m.cols);
    for case in order {
        let kernel = rt.norm(&case.spec)?;
        // The kernel the launcher takes for these rows (a twin, off the grid).
        let name = kernel.spec_for_aligned(case.m)?.name();
        let label = case.label();
        let n = case.m.rows * case.m.cols;
        b.progress.set_message(format!("{name} {label}"));
        let copy_gbps = b.copy_gbps(n)?;
        let bytes = case.bytes();
        b.check_fits(&format!("{name} at {label}"), bytes)?;
        // A split layout whose row does not fit the device at once is skipped
        // with a note, not an error: the other cases still run.
        if case.spec.layout == NormLayout::Split {
            let splits = kernel.plan(case.m.rows, case.m.cols).splits;
            if u64::from(splits) > kernel.resident() {
                b.println(format!(
                    "{name} {label}: skipped ({splits} blocks a row, {} resident)",
                    kernel.resident()
                ));
                continue;
            }
        }
        let same_bytes_gbps = b.copy_gbps((case.row_bytes() / 8).max(1) as usize)?;
        let mut bufs = Buffers::new(b, case, inputs.as_ref(), bytes)?;
        let rotations = bufs.sets.len() as u64;
        let us = time_case(b, &kernel, case, &mut bufs)?;
        drop(bufs);
        b.rt.stream()
            .synchronize()
            .during(|| format!("finishing {name}"))?;
        let reference = b
            .torch
            .as_ref()
            .and_then(|t| t.get_named(&torch_key(&case.spec), n as u64, Some(&label)));
        let mut row = KernelRow::measured(
            "norm",
            name,
            n as u64,
            Some(label),
            bytes,
            rotations,
            us,
            copy_gbps,
            reference,
        );
        row.pct_of_copy_same_bytes = Some(100.0 * row.gbps / same_bytes_gbps);
        b.push(row);
    }
    Ok(())
}

/// One rotated set of a call's row buffers.
struct Set {
    x: DevBuf,
    res: Option<DevBuf>,
    out: DevBuf,
    res_out: Option<DevBuf>,
}

/// The buffers a norm call is timed over: rotated row buffers (the residual
/// ones where the case has a residual), one weight and one bias.
pub struct Buffers {
    sets: Vec<Set>,
    /// The set the next timed call takes: kernels timed in turn on these
    /// buffers (`redjit tune`'s candidates) continue the rotation, where a
    /// restart would hand a kernel of a small shape the sets the one before
    /// left in L2.
    next: usize,
    w: Option<DevBuf>,
    bias: Option<DevBuf>,
    /// An FP8 output's scales (a row's, written) or scale (given, read).
    scale: Option<DevBuf>,
}

impl Buffers {
    /// Buffers for `case`, rotated past L2 for a call moving `set_bytes`;
    /// inputs from `inputs` (else the bench's filler).
    pub fn new(
        b: &Bench<'_>,
        case: &Case,
        inputs: Option<&Filler>,
        set_bytes: u64,
    ) -> CliResult<Buffers> {
        let n = case.m.rows * case.m.cols;
        let rotations = b.rotations(set_bytes);
        let info = case.spec.op.info();
        let input = inputs.unwrap_or(&b.filler);
        let mut sets = Vec::new();
        for _ in 0..rotations {
            sets.push(Set {
                x: input.alloc(case.spec.input, n)?,
                res: case
                    .spec
                    .residual
                    .then(|| input.alloc(case.spec.input, n))
                    .transpose()?,
                out: b.filler.alloc(case.spec.output, n)?,
                res_out: case
                    .spec
                    .residual
                    .then(|| b.filler.alloc(case.spec.input, n))
                    .transpose()?,
            });
        }
        let w = (!info.softmax)
            .then(|| b.filler.alloc(case.spec.input, case.m.cols))
            .transpose()?;
        let bias = info
            .bias
            .then(|| b.filler.alloc(case.spec.input, case.m.cols))
            .transpose()?;
        let scale = match case.spec.fp8 {
            None => None,
            Some(Fp8Scale::PerRow) => Some(b.filler.alloc(DType::F32, case.m.rows)?),
            // A scale that keeps the random rows inside e4m3's range.
            Some(Fp8Scale::Given) => Some(DevBuf::F32(
                b.rt.stream()
                    .clone_htod(&[0.02f32])
                    .during(|| "uploading the given FP8 scale".into())?,
            )),
        };
        Ok(Buffers {
            sets,
            next: 0,
            w,
            bias,
            scale,
        })
    }
}

/// The median time of `kernel` over `case`'s shape, the calls rotating over
/// `bufs` (which must hold what the case's op takes).
pub fn time_case(
    b: &Bench<'_>,
    kernel: &NormKernel<'_>,
    case: &Case,
    bufs: &mut Buffers,
) -> CliResult<f64> {
    let info = case.spec.op.info();
    let param = if info.softmax { 1.0 } else { 1e-5 };
    let stream = b.rt.stream();
    let rotations = bufs.sets.len();
    let (w, bias) = (bufs.w.as_ref(), bufs.bias.as_ref());
    let scale = &mut bufs.scale;
    let next = &mut bufs.next;
    b.median_us(|| {
        let set = &mut bufs.sets[*next % rotations];
        *next += 1;
        let mut views = NormViews::of(
            &case.spec,
            case.m,
            NormBuffers {
                x: &set.x,
                residual: set.res.as_ref(),
                weight: w,
                bias,
                out: &mut set.out,
                residual_out: set.res_out.as_mut(),
                scale: scale.as_mut(),
            },
        );
        let args = views.args(case.m, param);
        kernel.launch(stream, args)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> NormBenchArgs {
        NormBenchArgs::defaults(Common::for_tests())
    }

    #[test]
    fn default_cases_cover_the_issue_shapes() {
        let c = cases(&args(), Tuning::builtin()).unwrap();
        // 7 row ops (online and safe softmax, online log-softmax, 2 norms x
        // residual) x 2 dtypes x 6 shapes.
        assert_eq!(c.len(), 7 * 2 * 6);
        let rms = c
            .iter()
            .find(|c| c.spec.op == NormOp::RmsNorm && c.spec.residual && c.m.cols == 4096)
            .unwrap();
        assert_eq!(rms.spec.name(), "norm_rmsnorm_res_f32_f32_b256x4");
        // x, residual in; out, residual out; the weight once.
        assert_eq!(rms.bytes(), 4 * 32768 * 4096 * 4 + 4 * 4096);
        // The same-bytes copy moves the row streams, a power of two here.
        assert_eq!(rms.row_bytes(), 4 * 32768 * 4096 * 4);
        assert_eq!(torch_key(&rms.spec), "norm_rmsnorm_res_f32_f32");
        // A 16-bit layer norm moves half the row bytes of n f32, plus its
        // weight and bias.
        let ln = c
            .iter()
            .find(|c| {
                c.spec.op == NormOp::LayerNorm
                    && !c.spec.residual
                    && c.spec.input == DType::BF16
                    && c.m.cols == 128
            })
            .unwrap();
        assert_eq!(ln.row_bytes(), 262_144 * 128 * (2 + 2));
        assert_eq!(ln.bytes(), ln.row_bytes() + 2 * 128 * 2);
    }

    #[test]
    fn variants_hold_the_row_and_specs_select() {
        let mut a = args();
        a.variants = true;
        a.shapes = "262144x128".into();
        let c = cases(&a, Tuning::builtin()).unwrap();
        assert!(c.iter().all(|c| c.spec.capacity().is_none_or(|k| k >= 128)));
        assert!(
            c.iter()
                .any(|c| c.spec.name() == "norm_softmax_online_bf16_bf16_w32x1")
        );
        a.specs = vec!["norm_softmax_online_bf16_bf16_w32x1".into()];
        a.shapes = "10x100,10x200".into();
        assert_eq!(cases(&a, Tuning::builtin()).unwrap().len(), 1);
    }
}
