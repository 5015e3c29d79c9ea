//! The typed launcher of `reduce` kernels: the one place they are launched, and
//! the one place a call is checked.
//!
//! ```no_run
//! use redjit_runtime::{Matrix, ReduceSpec, Runtime};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::new(0)?;
//! let s = rt.stream();
//! let x = s.clone_htod(&vec![half::bf16::from_f32(0.5); 3 * 1000])?;
//! // Full-array argmax: one i64.
//! let mut at = s.alloc_zeros::<i64>(1)?;
//! rt.reduce(&"reduce_all_argmax_bf16_f32".parse()?)?.launch(s, &[&x], &mut at)?;
//! // Row sums of a 3 x 1000 matrix: three f32.
//! let mut sums = s.alloc_zeros::<f32>(3)?;
//! let rows: ReduceSpec = "reduce_rows_sum_bf16_f32".parse()?;
//! rt.reduce(&rows)?.launch_matrix(s, &[&x], Matrix { rows: 3, cols: 1000, ld: 1000 }, &mut sums)?;
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaViewMut, DeviceSlice, LaunchArgs, LaunchConfig,
    PushKernelArg,
};
use redjit_codegen::params::Param;
use redjit_codegen::spec::reduce::{PARTIAL_BYTES, Plan, ReduceStrategy, Shape, Twin};
use redjit_codegen::{DType, KernelSpec, ReduceAxis, ReduceSpec, SpecError};

use crate::elem::KernelInput;
use crate::error::{DriverContext, Error, Result};
use crate::launch_args::CheckedArgs;
use crate::runtime::{Runtime, blocks_per_sm};
use crate::workspace::Workspace;

/// A rows x cols matrix in a buffer: row r starts at element r * ld (ld >= cols;
/// ld > cols is a strided view).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matrix {
    /// Rows of the matrix.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Elements between the starts of two rows.
    pub ld: usize,
}

impl Matrix {
    /// No elements: no rows, or rows of none (an empty call; see the crate
    /// docs' rule).
    pub fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }

    /// The rule a launch of this shape breaks, as `(what, value, rule)` for a
    /// launch error: ld at least cols.
    pub(crate) fn shape_violation(&self) -> Option<(&'static str, String, String)> {
        if self.ld < self.cols {
            return Some((
                "ld",
                self.ld.to_string(),
                format!(
                    "the leading dimension must be at least cols ({})",
                    self.cols
                ),
            ));
        }
        None
    }

    /// Elements a buffer needs to hold the matrix: `(rows - 1) * ld + cols`
    /// (None if that overflows; 0 for an empty matrix).
    pub fn extent(&self) -> Option<usize> {
        if self.is_empty() {
            return Some(0);
        }
        (self.rows - 1)
            .checked_mul(self.ld)
            .and_then(|e| e.checked_add(self.cols))
    }
}

/// The element type of a reduction's result buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultType {
    /// Values (sum, mean, max, var, ...), whatever the input and accumulator,
    /// but for the exact integer results below.
    F32,
    /// Element indices (argmax, argmin), as PyTorch's int64; and the exact
    /// sum, sum of squares and dot of an integer input (i8 with the i64
    /// accumulator), as PyTorch's int8 sum gives int64.
    I64,
}

impl ResultType {
    fn of(spec: &ReduceSpec) -> ResultType {
        if spec.result_i64() {
            ResultType::I64
        } else {
            ResultType::F32
        }
    }
}

/// A device buffer a reduction writes its results to: f32 or i64, a
/// `CudaSlice` or a `CudaViewMut`.
pub trait ReduceOutput {
    /// The element type, checked against the spec's result.
    fn result_type(&self) -> ResultType;
    /// Number of elements.
    fn len(&self) -> usize;
    /// No elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pushes the device pointer (with cudarc's stream tracking for writes).
    fn push_output<'a>(&'a mut self, args: &mut LaunchArgs<'a>);
}

macro_rules! impl_reduce_output {
    ($t:ty, $rt:expr, $($ty:ty),*) => {$(
        impl ReduceOutput for $ty {
            fn result_type(&self) -> ResultType {
                $rt
            }
            fn len(&self) -> usize {
                DeviceSlice::len(self)
            }
            fn push_output<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
                args.arg(self);
            }
        }
    )*};
}
impl_reduce_output!(f32, ResultType::F32, CudaSlice<f32>, CudaViewMut<'_, f32>);
impl_reduce_output!(i64, ResultType::I64, CudaSlice<i64>, CudaViewMut<'_, i64>);

/// A loaded reduce kernel, the spec it came from, its warp-per-row twin (row
/// kernels, loaded on the first launch with short rows; the grid of a row
/// launch does not depend on occupancy), its cluster twin (full-array kernels
/// on sm_90+, loaded on the first launch of a small size), and the workspace of
/// its grid finish (partials and arrival counters), one per stream launched on,
/// grown on demand. Launches on one stream are ordered by it; launches on
/// several streams each use their stream's own workspace.
pub struct ReduceKernel<'rt> {
    rt: &'rt Runtime,
    spec: ReduceSpec,
    name: String,
    main: Loaded,
    /// The twins (by `Twin::index`), each loaded on its first call.
    twins: [OnceLock<Loaded>; Twin::ALL.len()],
    /// The tuning table's layouts this kernel's calls took, each compiled on
    /// its first call.
    tuned: Mutex<Vec<(ReduceStrategy, Loaded)>>,
    workspace: Workspace,
    /// `spec.params()`: what each launch pushes (every twin and tuned layout
    /// takes the same parameters).
    params: Vec<Param>,
}

/// A loaded kernel and the blocks of it an SM holds.
#[derive(Clone)]
struct Loaded {
    func: CudaFunction,
    blocks_per_sm: u32,
}

impl Loaded {
    fn of(rt: &Runtime, spec: &ReduceSpec) -> Result<Loaded> {
        let func = rt.function(spec)?;
        let blocks_per_sm = blocks_per_sm(&func, spec.threads(), 0, &spec.name())?;
        Ok(Loaded {
            func,
            blocks_per_sm,
        })
    }
}

impl Runtime {
    /// Compiles (through the cache) and loads the kernel for `spec`. Ask for the
    /// row kernel without `warp_per_row`: the launcher picks that twin. A spec
    /// without a `strategy` takes, for each call's shape, the layout this
    /// device's tuning table gives ([`Runtime::tuning`]); one with a strategy
    /// keeps it.
    pub fn reduce(&self, spec: &ReduceSpec) -> Result<ReduceKernel<'_>> {
        if spec.warp_per_row {
            return Err(Error::Spec(SpecError::Invalid {
                field: "warp_per_row",
                value: "true".into(),
                rule: "ask for the row kernel; its launcher picks the warp-per-row twin for short rows".into(),
            }));
        }
        if spec.cluster {
            return Err(Error::Spec(SpecError::Invalid {
                field: "cluster",
                value: "true".into(),
                rule: "ask for the full-array kernel; its launcher picks the cluster twin for small sizes on sm_90+".into(),
            }));
        }
        Ok(ReduceKernel {
            rt: self,
            spec: spec.clone(),
            name: spec.name(),
            params: spec.params(),
            main: Loaded::of(self, spec)?,
            twins: Default::default(),
            tuned: Mutex::new(Vec::new()),
            workspace: Workspace::new(),
        })
    }
}

impl ReduceKernel<'_> {
    /// The spec the kernel was generated from.
    pub fn spec(&self) -> &ReduceSpec {
        &self.spec
    }

    /// The kernel's name (its CUDA symbol).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The launch layout a call of `shape` takes on this device (the tests
    /// derive tolerances from its `chain`); compiles the tuned layout it
    /// names, if not yet loaded.
    pub fn plan(&self, shape: Shape) -> Result<Plan> {
        Ok(self.route(shape)?.0)
    }

    /// The layout the tuning table gives `shape`, where the spec names none
    /// and it differs from the spec's own.
    pub fn tuned_strategy(&self, shape: Shape) -> Option<ReduceStrategy> {
        if self.spec.strategy.is_some() {
            return None;
        }
        let st = self
            .rt
            .tuning()
            .tuning
            .reduce_rule(&self.spec, shape)?
            .strategy;
        (st != self.spec.default_strategy()).then_some(st)
    }

    /// The spec of the kernel a call of `shape` launches (a tuned layout or
    /// a twin of this kernel's spec).
    pub fn launched(&self, shape: Shape) -> ReduceSpec {
        let spec = self
            .spec
            .with_strategy(self.spec.strategy.or(self.tuned_strategy(shape)));
        let dev = self.rt.device();
        // The twins are taken by size (the split-row twin where the rows
        // leave the resident blocks idle, which the main kernel's occupancy
        // estimates as the launch's own does).
        let plan = spec.plan_on(
            shape,
            dev.sm_count,
            self.main.blocks_per_sm.max(1),
            dev.arch,
        );
        match plan.twin {
            Some(t) => spec.for_twin(t),
            None => spec,
        }
    }

    /// The plan and kernel of a call of `shape`: the tuned layout (or the
    /// spec's), then its warp-per-row, cluster or split-row twin where the
    /// plan takes one.
    fn route(&self, shape: Shape) -> Result<(Plan, Loaded)> {
        let (spec, main) = match self.tuned_strategy(shape) {
            None => (self.spec.clone(), self.main.clone()),
            Some(st) => (self.spec.with_strategy(Some(st)), self.tuned(st)?),
        };
        let dev = self.rt.device();
        let plan = spec.plan_on(shape, dev.sm_count, main.blocks_per_sm.max(1), dev.arch);
        let k = match plan.twin {
            Some(t) => self.twin(t)?,
            None => main,
        };
        Ok((plan, k))
    }

    /// The kernel of layout `st`, loaded on its first call.
    fn tuned(&self, st: ReduceStrategy) -> Result<Loaded> {
        let mut tuned = self.tuned.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, l)) = tuned.iter().find(|(s, _)| *s == st) {
            return Ok(l.clone());
        }
        let l = Loaded::of(self.rt, &self.spec.with_strategy(Some(st)))?;
        tuned.push((st, l.clone()));
        Ok(l)
    }

    /// Twin `t` of this kernel (the twins take no strategy), loaded on its
    /// first use.
    fn twin(&self, t: Twin) -> Result<Loaded> {
        let cell = &self.twins[t.index()];
        if let Some(l) = cell.get() {
            return Ok(l.clone());
        }
        let l = Loaded::of(self.rt, &self.spec.for_twin(t))?;
        Ok(cell.get_or_init(|| l).clone())
    }

    /// A full-array reduction of `srcs` (one buffer; dot: two of equal length)
    /// into `out[0]`.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        srcs: &[&dyn KernelInput],
        out: &mut dyn ReduceOutput,
    ) -> Result<()> {
        self.launch_shape(stream, srcs, None, out)
    }

    /// A row-wise (`out[r]`, rows results) or column-wise (`out[c]`, cols
    /// results) reduction of the matrix `m` held in `srcs`.
    pub fn launch_matrix(
        &self,
        stream: &Arc<CudaStream>,
        srcs: &[&dyn KernelInput],
        m: Matrix,
        out: &mut dyn ReduceOutput,
    ) -> Result<()> {
        self.launch_shape(stream, srcs, Some(m), out)
    }

    fn launch_shape(
        &self,
        stream: &Arc<CudaStream>,
        srcs: &[&dyn KernelInput],
        m: Option<Matrix>,
        out: &mut dyn ReduceOutput,
    ) -> Result<()> {
        let shape = self.check(srcs, m, out)?;
        if m.is_some_and(|m| m.is_empty()) {
            // No results to write: an empty call launches nothing.
            return Ok(());
        }
        let (plan, kernel) = self.route(shape)?;
        let ws = self.workspace.hold(
            stream,
            plan.counters,
            plan.partials,
            PARTIAL_BYTES,
            &self.name,
        )?;
        let (counters, partials) = ws.addresses();
        let mut args = CheckedArgs::new(stream, &kernel.func, &self.spec, &self.params);
        for &s in srcs {
            args.input(s);
        }
        args.pushed_ptr(|a| out.push_output(a));
        args.ptr(&counters).ptr(&partials);
        let (a, b, c, d) = match shape {
            Shape::All { n } => (n, 0, 0, 0),
            Shape::Matrix { rows, cols, ld } => {
                let split = match self.spec.axis {
                    ReduceAxis::Rows => plan.cols_per_split,
                    _ => plan.rows_per_split,
                };
                (rows, cols, ld, split)
            }
        };
        match self.spec.axis {
            ReduceAxis::All => args.u64(&a),
            ReduceAxis::Rows | ReduceAxis::Cols => args.u64(&a).u64(&b).u64(&c).u64(&d),
        };
        let mut args = args.ready()?;
        let cfg = LaunchConfig {
            grid_dim: (plan.grid.0, plan.grid.1, 1),
            block_dim: (plan.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the kernel was generated from `self.spec` (or a tuned layout
        // of it, or its warp-per-row or cluster twin, which take the same
        // arguments), and `plan` from that same kernel's spec (its block is the
        // kernel's launch bound): one pointer per input,
        // the output, the counters and the partials, then n (u64) for the full
        // array, rows, cols, ld and cols_per_split (u64) for rows, rows, cols,
        // ld and rows_per_split (u64) for columns, in that order. A split row
        // launch's grid is one block a (row, split), and its workspace one
        // counter a row and one slot a (row, split). `check` proved every input has the spec's
        // dtype and holds the shape, and the output its type and length; the
        // workspace holds `plan.counters` zeroed counters and `plan.partials`
        // partial slots. A cluster twin's grid is its one cluster (`CLUSTER` blocks,
        // the size compiled into it), and it is only planned on sm_90+.
        unsafe { args.launch(cfg) }.during(|| format!("launching {}", self.name))?;
        Ok(())
    }

    /// Validates a call; returns the shape to launch.
    fn check(
        &self,
        srcs: &[&dyn KernelInput],
        m: Option<Matrix>,
        out: &dyn ReduceOutput,
    ) -> Result<Shape> {
        let inputs: Vec<(DType, usize)> = srcs.iter().map(|s| (s.dtype(), s.len())).collect();
        check_call(&self.spec, &inputs, m, (out.result_type(), out.len()))
    }
}

/// Checks a call of `spec`'s kernel, without a GPU: the inputs' (dtype, length),
/// the matrix shape (row and column kernels) and the output's (type, length).
/// Returns the shape to launch. Every launch goes through here.
pub fn check_call(
    spec: &ReduceSpec,
    inputs: &[(DType, usize)],
    m: Option<Matrix>,
    out: (ResultType, usize),
) -> Result<Shape> {
    let err = Error::launch_of(|| spec.name());
    let reads = spec.op.info().inputs;
    if inputs.len() != reads {
        return Err(err(
            "number of inputs",
            inputs.len().to_string(),
            format!("{} reads exactly {reads} input(s)", spec.op),
        ));
    }
    for (i, &(dtype, len)) in inputs.iter().enumerate() {
        if dtype != spec.input {
            return Err(err(
                "dtype",
                format!("src{i}: {dtype}"),
                format!("this kernel reads {}", spec.input),
            ));
        }
        if len != inputs[0].1 {
            return Err(err(
                "length",
                format!("src{i}: {len}"),
                format!("every input must have the length of src0 ({})", inputs[0].1),
            ));
        }
    }
    let want = ResultType::of(spec);
    if out.0 != want {
        return Err(err(
            "output type",
            format!("{:?}", out.0),
            format!("{} writes {}", spec.op, spec.result()),
        ));
    }
    let len = inputs[0].1;
    let (shape, results) = match (spec.axis, m) {
        (ReduceAxis::All, None) => {
            if len == 0 {
                return Err(err(
                    "n",
                    "0".into(),
                    "a reduction needs at least one element".into(),
                ));
            }
            (Shape::All { n: len as u64 }, 1)
        }
        (ReduceAxis::All, Some(m)) => {
            return Err(err(
                "matrix",
                format!("{m:?}"),
                "a full-array reduction takes no matrix shape; call launch".into(),
            ));
        }
        (axis, None) => {
            return Err(err(
                "matrix",
                "none".into(),
                format!("a {axis} reduction needs a matrix shape; call launch_matrix"),
            ));
        }
        (axis, Some(m)) => {
            if let Some((what, value, rule)) = m.shape_violation() {
                return Err(err(what, value, rule));
            }
            if m.extent().is_none_or(|e| e > len) {
                return Err(err(
                    "matrix",
                    format!("{m:?}"),
                    format!("(rows - 1) * ld + cols elements must fit the input's {len}"),
                ));
            }
            let (results, over) = if axis == ReduceAxis::Rows {
                (m.rows, m.cols)
            } else {
                (m.cols, m.rows)
            };
            // Results over no elements have no value (as a full-array reduction
            // of none); no results at all is an empty call.
            if results > 0 && over == 0 {
                return Err(err(
                    "matrix",
                    format!("{m:?}"),
                    format!(
                        "each of the {results} result(s) of a {axis} reduction would reduce no elements"
                    ),
                ));
            }
            (
                Shape::Matrix {
                    rows: m.rows as u64,
                    cols: m.cols as u64,
                    ld: m.ld as u64,
                },
                results,
            )
        }
    };
    if out.1 != results {
        return Err(err(
            "output length",
            out.1.to_string(),
            format!("this call has {results} result(s)"),
        ));
    }
    Ok(shape)
}
