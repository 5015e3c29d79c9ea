//! The typed launcher of `norm` kernels (softmax, log-softmax, layer norm, RMS
//! norm): the one place they are launched, and the one place a call is checked.
//!
//! ```no_run
//! use redjit_runtime::{Matrix, NormArgs, NormInPlace, NormSpec, Runtime};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::new(0)?;
//! let s = rt.stream();
//! let (rows, cols) = (4, 1000);
//! let x = s.clone_htod(&vec![half::bf16::from_f32(0.5); rows * cols])?;
//! let mut y = s.alloc_zeros::<half::bf16>(rows * cols)?;
//! // The launcher's default layout for rows of 1000 (a warp per row, 8 packs a lane).
//! let spec = "norm_softmax_online_bf16_bf16_w32x1".parse::<NormSpec>()?.for_cols(cols as u64);
//! let k = rt.norm(&spec)?;
//! k.launch(s, NormArgs::softmax(&x, &mut y, Matrix { rows, cols, ld: cols }, 1.0))?;
//!
//! // In place, as serving code runs a layer: residual += x, then x = rms_norm(residual) * w.
//! let (mut h, mut residual) = (y, s.clone_htod(&vec![half::bf16::ONE; rows * cols])?);
//! let w = s.clone_htod(&vec![half::bf16::ONE; cols])?;
//! let spec = "norm_rmsnorm_res_bf16_bf16_w32x1".parse::<NormSpec>()?.for_cols(cols as u64);
//! let shape = Matrix { rows, cols, ld: cols };
//! rt.norm(&spec)?
//!     .launch_in_place(s, NormInPlace::norm(&mut h, Some(&mut residual), &w, None, shape, 1e-5))?;
//! # Ok(()) }
//! ```

use std::sync::{Arc, OnceLock};

use cudarc::driver::sys::{CUfunction_attribute, CUresult};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, SyncOnDrop};
use redjit_codegen::params::Param;
use redjit_codegen::spec::norm::{Fp8Scale, Plan};
use redjit_codegen::{DType, KernelSpec, NormLayout, NormSpec, SpecError};

use crate::elem::{KernelInput, KernelOutput};
use crate::error::{DriverContext, Error, Result};
use crate::launch_args::CheckedArgs;
use crate::partition;
use crate::reduce::Matrix;
use crate::runtime::{Runtime, blocks_per_sm};
use crate::stream_copy::StreamCopy;
use crate::workspace::Workspace;

/// The buffers and scalars of one norm launch. Row r of every row buffer (x,
/// residual, out, residual_out) starts at element r * ld.
pub struct NormArgs<'a> {
    /// The rows, in the spec's input type.
    pub x: &'a dyn KernelInput,
    /// Fused residual add (`_res` kernels): `h = x + residual` is written to
    /// `residual_out` (the input type) and normalised.
    pub residual: Option<&'a dyn KernelInput>,
    /// Norms: cols elements of the input type.
    pub weight: Option<&'a dyn KernelInput>,
    /// Layer norm: cols elements of the input type.
    pub bias: Option<&'a dyn KernelInput>,
    /// The result rows, in the spec's output type.
    pub out: &'a mut dyn KernelOutput,
    /// Fused residual add: receives `h`, the sum that was normalised.
    pub residual_out: Option<&'a mut dyn KernelOutput>,
    /// Layer norm, optional: each row's mean (rows f32).
    pub mean: Option<&'a mut dyn KernelOutput>,
    /// Norms, optional: each row's 1 / sqrt(var + eps) (rows f32).
    pub rstd: Option<&'a mut dyn KernelOutput>,
    /// Rows, columns and leading dimension of every row buffer.
    pub shape: Matrix,
    /// Softmax: the scale x is multiplied by (1 for plain softmax); norms: eps.
    pub param: f32,
    /// An FP8 (e4m3) output's scale buffer (`_qd` and `_qs` kernels only).
    pub scale: Option<Fp8Scales<'a>>,
}

/// The scale buffer of a norm with an FP8 (e4m3) output: `out` holds
/// e4m3(y / scale), saturated at +-448.
pub enum Fp8Scales<'a> {
    /// `_qd` kernels: receives each row's scale, max |y| / 448 but at least
    /// 1 / (448 x 512) (rows f32).
    PerRow(&'a mut dyn KernelOutput),
    /// `_qs` kernels: the one scale every row is divided by (1 f32, finite and
    /// above 0, read on the device).
    Given(&'a dyn KernelInput),
}

impl<'a> NormArgs<'a> {
    /// A softmax or log-softmax of `scale * x`.
    pub fn softmax(
        x: &'a dyn KernelInput,
        out: &'a mut dyn KernelOutput,
        shape: Matrix,
        scale: f32,
    ) -> NormArgs<'a> {
        NormArgs {
            x,
            residual: None,
            weight: None,
            bias: None,
            out,
            residual_out: None,
            mean: None,
            rstd: None,
            shape,
            param: scale,
            scale: None,
        }
    }

    /// A layer norm (`bias: Some`) or RMS norm (`bias: None`) without residual
    /// or statistics; set the other fields for those.
    pub fn norm(
        x: &'a dyn KernelInput,
        weight: &'a dyn KernelInput,
        bias: Option<&'a dyn KernelInput>,
        out: &'a mut dyn KernelOutput,
        shape: Matrix,
        eps: f32,
    ) -> NormArgs<'a> {
        NormArgs {
            x,
            residual: None,
            weight: Some(weight),
            bias,
            out,
            residual_out: None,
            mean: None,
            rstd: None,
            shape,
            param: eps,
            scale: None,
        }
    }
}

/// The buffers and scalars of one in-place norm launch: each row of `x` is
/// overwritten with its result, and the residual (if any) with `h = x +
/// residual`, the sum that was normalised, as serving engines update the
/// hidden state and the residual stream at every layer. The kernel's input and
/// output types must match. Whole-pack kernels run in place as they are: every
/// element of a row is read by the thread that writes it, before it writes it,
/// or before a barrier of all the row's threads that comes before any write.
/// A general twin (`_g`: rows or buffers off the pack grid) may read a
/// neighbour's words after the neighbour wrote them, so such a call first
/// copies the aliased buffers to scratch on the stream and runs from the
/// copy; its results are the same bits either way.
pub struct NormInPlace<'a> {
    /// The rows, in the kernel's input (and output) type: read, then
    /// overwritten with the result.
    pub x: &'a mut dyn KernelOutput,
    /// Fused residual add (`_res` kernels): read, then overwritten with `h`.
    pub residual: Option<&'a mut dyn KernelOutput>,
    /// Norms: cols elements of the input type.
    pub weight: Option<&'a dyn KernelInput>,
    /// Layer norm: cols elements of the input type.
    pub bias: Option<&'a dyn KernelInput>,
    /// Layer norm, optional: each row's mean (rows f32).
    pub mean: Option<&'a mut dyn KernelOutput>,
    /// Norms, optional: each row's 1 / sqrt(var + eps) (rows f32).
    pub rstd: Option<&'a mut dyn KernelOutput>,
    /// Rows, columns and leading dimension of x and the residual.
    pub shape: Matrix,
    /// Softmax: the scale x is multiplied by (1 for plain softmax); norms: eps.
    pub param: f32,
}

impl<'a> NormInPlace<'a> {
    /// A softmax or log-softmax of `scale * x`, over x.
    pub fn softmax(x: &'a mut dyn KernelOutput, shape: Matrix, scale: f32) -> NormInPlace<'a> {
        NormInPlace {
            x,
            residual: None,
            weight: None,
            bias: None,
            mean: None,
            rstd: None,
            shape,
            param: scale,
        }
    }

    /// A layer norm (`bias: Some`) or RMS norm (`bias: None`) over x, with the
    /// residual updated in place where given (`_res` kernels).
    pub fn norm(
        x: &'a mut dyn KernelOutput,
        residual: Option<&'a mut dyn KernelOutput>,
        weight: &'a dyn KernelInput,
        bias: Option<&'a dyn KernelInput>,
        shape: Matrix,
        eps: f32,
    ) -> NormInPlace<'a> {
        NormInPlace {
            x,
            residual,
            weight: Some(weight),
            bias,
            mean: None,
            rstd: None,
            shape,
            param: eps,
        }
    }
}

/// A row stream of a launch: read from one buffer and written to another
/// (either may be absent where the kernel takes none), or read and
/// overwritten in one.
enum RowStream<'a> {
    Apart(
        Option<&'a dyn KernelInput>,
        Option<&'a mut dyn KernelOutput>,
    ),
    Over(&'a mut dyn KernelOutput),
}

impl<'a> RowStream<'a> {
    fn read(&self) -> Option<(DType, usize)> {
        match self {
            RowStream::Apart(i, _) => i.map(|b| (b.dtype(), b.len())),
            RowStream::Over(b) => Some((b.dtype(), b.len())),
        }
    }

    fn written(&self) -> Option<(DType, usize)> {
        match self {
            RowStream::Apart(_, o) => o.as_deref().map(|b| (b.dtype(), b.len())),
            RowStream::Over(b) => Some((b.dtype(), b.len())),
        }
    }

    /// The read and written addresses, bound as [`Bound`] says (one buffer's
    /// in place, bound as a write).
    fn bind<'b>(self, stream: &'b CudaStream, order: &mut Vec<SyncOnDrop<'b>>) -> (u64, u64)
    where
        'a: 'b,
    {
        match self {
            RowStream::Apart(i, o) => (bind_read(i, stream, order), bind_write(o, stream, order)),
            RowStream::Over(b) => {
                let at = bind_write(Some(b), stream, order);
                (at, at)
            }
        }
    }
}

/// A call's buffers bound to its launch: each address taken once, with
/// cudarc's ordering (the stream waits for the buffer's pending work; each
/// guard records this launch's access when dropped, after the launch), so
/// that the pack check, an in-place copy and the kernel's arguments share one
/// lookup a buffer: each lookup costs driver calls where cudarc tracks the
/// buffers (`candle_bench --host`). 0 where a buffer is absent.
struct Bound<'a> {
    x: u64,
    residual: u64,
    weight: u64,
    bias: u64,
    out: u64,
    residual_out: u64,
    mean: u64,
    rstd: u64,
    scale: u64,
    _order: Vec<SyncOnDrop<'a>>,
}

fn bind_read<'b>(
    b: Option<&'b dyn KernelInput>,
    stream: &'b CudaStream,
    order: &mut Vec<SyncOnDrop<'b>>,
) -> u64 {
    b.map_or(0, |b| {
        let (at, guard) = b.read_address(stream);
        order.push(guard);
        at
    })
}

fn bind_write<'b, 'c: 'b>(
    b: Option<&'b mut (dyn KernelOutput + 'c)>,
    stream: &'b CudaStream,
    order: &mut Vec<SyncOnDrop<'b>>,
) -> u64 {
    b.map_or(0, |b| {
        let (at, guard) = b.write_address(stream);
        order.push(guard);
        at
    })
}

/// One launch's buffers, apart or in place; what `NormArgs` and
/// `NormInPlace` both become.
struct Call<'a> {
    rows: RowStream<'a>,
    residual: RowStream<'a>,
    weight: Option<&'a dyn KernelInput>,
    bias: Option<&'a dyn KernelInput>,
    mean: Option<&'a mut dyn KernelOutput>,
    rstd: Option<&'a mut dyn KernelOutput>,
    shape: Matrix,
    param: f32,
    scale: Option<Fp8Scales<'a>>,
}

impl<'a> From<NormArgs<'a>> for Call<'a> {
    fn from(a: NormArgs<'a>) -> Call<'a> {
        Call {
            rows: RowStream::Apart(Some(a.x), Some(a.out)),
            residual: RowStream::Apart(a.residual, a.residual_out),
            weight: a.weight,
            bias: a.bias,
            mean: a.mean,
            rstd: a.rstd,
            shape: a.shape,
            param: a.param,
            scale: a.scale,
        }
    }
}

impl<'a> From<NormInPlace<'a>> for Call<'a> {
    fn from(a: NormInPlace<'a>) -> Call<'a> {
        Call {
            rows: RowStream::Over(a.x),
            residual: match a.residual {
                Some(r) => RowStream::Over(r),
                None => RowStream::Apart(None, None),
            },
            weight: a.weight,
            bias: a.bias,
            mean: a.mean,
            rstd: a.rstd,
            shape: a.shape,
            param: a.param,
            scale: None,
        }
    }
}

impl<'a> Call<'a> {
    /// Every buffer bound to the launch on `stream` (see [`Bound`]).
    fn bind<'b>(self, stream: &'b CudaStream) -> Bound<'b>
    where
        'a: 'b,
    {
        let mut order = Vec::with_capacity(9);
        let (x, out) = self.rows.bind(stream, &mut order);
        let (residual, residual_out) = self.residual.bind(stream, &mut order);
        let weight = bind_read(self.weight, stream, &mut order);
        let bias = bind_read(self.bias, stream, &mut order);
        let mean = bind_write(self.mean, stream, &mut order);
        let rstd = bind_write(self.rstd, stream, &mut order);
        let scale = match self.scale {
            Some(Fp8Scales::PerRow(b)) => bind_write(Some(b), stream, &mut order),
            Some(Fp8Scales::Given(b)) => bind_read(Some(b), stream, &mut order),
            None => 0,
        };
        Bound {
            x,
            residual,
            weight,
            bias,
            out,
            residual_out,
            mean,
            rstd,
            scale,
            _order: order,
        }
    }
}

/// What `check_call` needs to know of a call: each buffer's (dtype, length).
#[derive(Debug, Clone, PartialEq)]
pub struct NormCall {
    /// [`NormArgs::x`].
    pub x: (DType, usize),
    /// [`NormArgs::residual`].
    pub residual: Option<(DType, usize)>,
    /// [`NormArgs::weight`].
    pub weight: Option<(DType, usize)>,
    /// [`NormArgs::bias`].
    pub bias: Option<(DType, usize)>,
    /// [`NormArgs::out`].
    pub out: (DType, usize),
    /// [`NormArgs::residual_out`].
    pub residual_out: Option<(DType, usize)>,
    /// [`NormArgs::mean`].
    pub mean: Option<(DType, usize)>,
    /// [`NormArgs::rstd`].
    pub rstd: Option<(DType, usize)>,
    /// [`NormArgs::shape`].
    pub shape: Matrix,
    /// [`NormArgs::param`].
    pub param: f32,
    /// A [`NormInPlace`] call: x and out are one buffer (and the residual and
    /// residual_out, where given).
    pub in_place: bool,
    /// [`NormArgs::scale`]: the buffer's (dtype, length), and whether the
    /// kernel writes it (per-row scales) or reads it (a given scale).
    pub scale: Option<(DType, usize, Fp8Scale)>,
}

impl NormCall {
    fn of(a: &Call<'_>) -> NormCall {
        let i = |b: &dyn KernelInput| (b.dtype(), b.len());
        let o = |b: &dyn KernelOutput| (b.dtype(), b.len());
        NormCall {
            // Present by construction: both constructors give the rows.
            x: a.rows.read().unwrap_or((DType::F32, 0)),
            residual: a.residual.read(),
            weight: a.weight.map(i),
            bias: a.bias.map(i),
            out: a.rows.written().unwrap_or((DType::F32, 0)),
            residual_out: a.residual.written(),
            mean: a.mean.as_deref().map(o),
            rstd: a.rstd.as_deref().map(o),
            shape: a.shape,
            param: a.param,
            in_place: matches!(a.rows, RowStream::Over(_)),
            scale: a.scale.as_ref().map(|b| match b {
                Fp8Scales::PerRow(o) => (o.dtype(), o.len(), Fp8Scale::PerRow),
                Fp8Scales::Given(i) => (i.dtype(), i.len(), Fp8Scale::Given),
            }),
        }
    }
}

/// A loaded norm kernel, the spec it came from, its occupancy, its general
/// twins (`_g`: loaded on the first call the whole-pack kernel does not fit;
/// a deferred kernel's staging twins, `_p_g`, long and short, for such calls
/// of many rows) and
/// its ragged twin (an exact-length kernel's, loaded on the first call of other
/// rows). A cluster row (`_c<n>`), and a loop row but 16-bit layer norm's,
/// hands calls off the pack grid to another kernel (`NormSpec::off_grid_kernel`,
/// with its own twins), built on the first such call: its staging twins ran
/// faster there than the kernel's general twin (H100; commit 7eca7bb; the loop's
/// case in `off_grid_kernel`).
pub struct NormKernel<'rt> {
    rt: &'rt Runtime,
    spec: NormSpec,
    name: String,
    main: Loaded,
    general: OnceLock<Loaded>,
    staged: OnceLock<Loaded>,
    staged_short: OnceLock<Loaded>,
    ragged: OnceLock<Loaded>,
    hand_off: OnceLock<Box<NormKernel<'rt>>>,
}

/// A loaded function, the blocks of it an SM holds at once, and its workspace
/// (the split layout's counters and partial states, grown on demand). A
/// kernel and its twin keep theirs apart: a deferred split kernel (`_p`)
/// keeps its epoch in a counter that the twin's rows would reset.
struct Loaded {
    spec: NormSpec,
    /// `spec.params()`, what each launch pushes.
    params: Vec<Param>,
    func: CudaFunction,
    blocks_per_sm: u32,
    workspace: Workspace,
}

impl Loaded {
    fn new(rt: &Runtime, spec: &NormSpec) -> Result<Loaded> {
        let func = rt.function(spec)?;
        let stage = spec.stage_bytes();
        if stage > 0 {
            // A prefetching kernel's staged row is dynamic shared memory, past
            // the 48 KiB a launch gets without asking.
            let fixed = func
                .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
                .during(|| format!("reading the shared memory of {}", spec.name()))?;
            let limit = rt.device().max_shared_per_block;
            if stage + fixed.max(0) as u64 > limit {
                return Err(SpecError::Invalid {
                    field: "prefetch",
                    value: format!("{stage} bytes of staged row"),
                    rule: format!(
                        "{} needs {stage} bytes of shared memory for its staged row and {fixed} of its own; {} gives a block at most {limit}",
                        spec.name(),
                        rt.device().name
                    ),
                }
                .into());
            }
            func.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                stage as i32,
            )
            .during(|| format!("allowing {} {stage} bytes of shared memory", spec.name()))?;
        }
        let blocks_per_sm = blocks_per_sm(&func, spec.threads(), stage as usize, &spec.name())?;
        Ok(Loaded {
            spec: spec.clone(),
            params: spec.params(),
            func,
            blocks_per_sm,
            workspace: Workspace::new(),
        })
    }
}

impl Runtime {
    /// Compiles (through the cache) and loads the norm kernel `spec`, exactly
    /// that layout; `spec.for_cols(cols)` is the default layout for a row length.
    /// Ask for the whole-pack kernel (not `general`): its launcher takes the
    /// general twin itself for a call with misaligned buffers, or `cols` or `ld`
    /// not a multiple of 4.
    ///
    /// A cluster row (`_c<n>`) needs sm_90: on an older device this loads
    /// `spec.unclustered()` instead (what the ladder gives there without
    /// clusters); `NormKernel::spec` says which.
    pub fn norm(&self, spec: &NormSpec) -> Result<NormKernel<'_>> {
        if spec.cluster.is_some() && self.device().arch < spec.min_arch() {
            return self.norm(&spec.unclustered());
        }
        Ok(NormKernel {
            rt: self,
            spec: spec.clone(),
            name: spec.name(),
            main: Loaded::new(self, spec)?,
            general: OnceLock::new(),
            staged: OnceLock::new(),
            staged_short: OnceLock::new(),
            ragged: OnceLock::new(),
            hand_off: OnceLock::new(),
        })
    }
}

/// Where a call goes: a kernel of this `NormKernel`, or the kernel it hands
/// calls off the pack grid to.
enum Route<'a, 'rt> {
    Here(&'a Loaded),
    HandOff(&'a NormKernel<'rt>),
}

/// The kernels of a `NormKernel` a call may take.
enum Which {
    Main,
    Ragged,
    Staged,
    /// A softmax's staging twin of short rows (the same for every row length
    /// it takes).
    StagedShort,
    General,
}

impl<'rt> NormKernel<'rt> {
    /// The spec the kernel was generated from.
    pub fn spec(&self) -> &NormSpec {
        &self.spec
    }

    /// The kernel's name (its CUDA symbol).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Blocks of this kernel (not its general twin) an SM holds at once.
    pub fn blocks_per_sm(&self) -> u32 {
        self.main.blocks_per_sm
    }

    /// Blocks of this kernel (not its general twin) the device holds at once.
    pub fn resident(&self) -> u64 {
        u64::from(self.rt.device().sm_count) * u64::from(self.main.blocks_per_sm)
    }

    /// The kernel for a call: this one, its general twin when the call's rows
    /// are not whole, aligned packs, or an exact kernel's ragged twin for whole
    /// packs of another length.
    fn for_call(&self, a: &NormCall, at: &Bound<'_>) -> Result<Route<'_, 'rt>> {
        if self.spec.general {
            return Ok(Route::Here(&self.main));
        }
        let (i, o) = (
            self.spec.input.info().bytes as u64,
            self.spec.output.info().bytes as u64,
        );
        // An absent buffer's 0 is aligned to anything.
        let buffers = [
            (at.x, i),
            (at.residual, i),
            (at.weight, i),
            (at.bias, i),
            (at.out, o),
            (at.residual_out, i),
        ];
        let m = a.shape;
        let whole = NormSpec::whole_packs_fit(m.cols as u64, m.ld as u64, buffers);
        if !whole && let Some(k) = self.hand_off()? {
            return Ok(Route::HandOff(k));
        }
        let pairs =
            !self.spec.pairs || NormSpec::whole_pairs_fit(m.cols as u64, m.ld as u64, buffers);
        let which = self.spec_for(m, whole, pairs);
        let cell = match which {
            Which::Main => return Ok(Route::Here(&self.main)),
            Which::Ragged => &self.ragged,
            Which::Staged => &self.staged,
            Which::StagedShort => &self.staged_short,
            Which::General => &self.general,
        };
        // A twin is loaded on its first call.
        if let Some(l) = cell.get() {
            return Ok(Route::Here(l));
        }
        let l = Loaded::new(self.rt, &self.spec_of(which, m.cols))?;
        Ok(Route::Here(cell.get_or_init(|| l)))
    }

    /// The kernel for the calls off the pack grid this one hands on, if it
    /// hands them on, built on the first.
    fn hand_off(&self) -> Result<Option<&NormKernel<'rt>>> {
        if let Some(k) = self.hand_off.get() {
            return Ok(Some(k));
        }
        let Some(spec) = self.spec.off_grid_kernel() else {
            return Ok(None);
        };
        let k = Box::new(self.rt.norm(&spec)?);
        Ok(Some(self.hand_off.get_or_init(|| k)))
    }

    /// The spec of kernel `which` for rows of `cols`.
    fn spec_of(&self, which: Which, cols: usize) -> NormSpec {
        match which {
            Which::Main => self.spec.clone(),
            Which::Ragged => self.spec.ragged_twin(),
            Which::Staged => self.spec.staged_twin(),
            Which::StagedShort => self.spec.staged_twin_for_cols(cols as u64),
            Which::General => self.spec.general_twin(),
        }
    }

    /// Which kernel a call of `m` takes, its buffers and rows whole,
    /// aligned packs (`whole`) or not, and on the grid of this kernel's pairs
    /// (`pairs`, true for a kernel in packs) or not.
    fn spec_for(&self, m: Matrix, whole: bool, pairs: bool) -> Which {
        if self.spec.general {
            Which::Main
        } else if whole {
            if pairs && (!self.spec.exact || self.spec.fills_exactly(m.cols as u64)) {
                Which::Main
            } else {
                Which::Ragged
            }
        } else {
            let twin = self
                .spec
                .general_twin_for(m.rows as u64, m.cols as u64, self.resident());
            if !twin.prefetch {
                Which::General
            } else if twin == self.spec.staged_twin() {
                Which::Staged
            } else {
                Which::StagedShort
            }
        }
    }

    /// The kernel a call of `m` from buffers aligned to 16 bytes runs: this
    /// one, its ragged twin, (rows off the pack grid) a general twin, or the
    /// choice of the kernel it hands such calls to (which this loads).
    pub fn spec_for_aligned(&self, m: Matrix) -> Result<NormSpec> {
        let (cols, ld) = (m.cols as u64, m.ld as u64);
        let whole = NormSpec::whole_packs_fit(cols, ld, []);
        if !whole && let Some(k) = self.hand_off()? {
            return k.spec_for_aligned(m);
        }
        let pairs = !self.spec.pairs || NormSpec::whole_pairs_fit(cols, ld, []);
        Ok(self.spec_of(self.spec_for(m, whole, pairs), m.cols))
    }

    /// The launch layout for `rows` x `cols` on this device.
    pub fn plan(&self, rows: usize, cols: usize) -> Plan {
        self.on_this_device(self.spec.plan(
            rows as u64,
            cols as u64,
            self.rt.device().sm_count,
            self.main.blocks_per_sm,
        ))
    }

    /// `plan` as this runtime launches it: by ticket where it launches
    /// nothing cooperatively (`DeviceInfo::cooperative_launch`).
    fn on_this_device(&self, plan: Plan) -> Plan {
        if self.rt.device().cooperative_launch {
            plan
        } else {
            plan.by_ticket()
        }
    }

    /// Checks the call, then launches it on `stream`.
    pub fn launch(&self, stream: &Arc<CudaStream>, a: NormArgs<'_>) -> Result<()> {
        self.launch_call(stream, a.into())
    }

    /// Checks the in-place call, then launches it on `stream`: x is
    /// overwritten with the result, the residual (if any) with `h` (see
    /// [`NormInPlace`]).
    pub fn launch_in_place(&self, stream: &Arc<CudaStream>, a: NormInPlace<'_>) -> Result<()> {
        self.launch_call(stream, a.into())
    }

    fn launch_call(&self, stream: &Arc<CudaStream>, a: Call<'_>) -> Result<()> {
        let call = NormCall::of(&a);
        if a.shape.is_empty() {
            // Checked as any call, then nothing to launch.
            check_loaded_call(&self.spec, &call, self.resident())?;
            return Ok(());
        }
        // Dropped after the launch below: its guards record the launch's
        // accesses.
        let bound = a.bind(stream);
        self.launch_bound(stream, &call, &bound)
    }

    fn launch_bound(&self, stream: &Arc<CudaStream>, a: &NormCall, at: &Bound<'_>) -> Result<()> {
        let k = match self.for_call(a, at)? {
            Route::Here(k) => k,
            Route::HandOff(k) => return k.launch_bound(stream, a, at),
        };
        // A stream of an SM partition (green context) holds that many blocks,
        // not the device's: a split row's blocks wait on each other, so its
        // plan and check count on the stream's SMs. The other layouts' blocks
        // wait on none (a grid past the partition only queues), and their
        // launches skip the driver call.
        let dev = self.rt.device();
        let sms = if k.spec.layout == NormLayout::Split {
            partition::stream_sm_count(stream, dev)?
        } else {
            dev.sm_count
        };
        let resident = u64::from(sms) * u64::from(k.blocks_per_sm);
        let Some(plan) = check_loaded_call(&k.spec, a, resident)? else {
            return Ok(());
        };
        let plan = self.on_this_device(plan);
        // In place, a general twin (any alignment) runs from a copy of the
        // aliased rows: its lanes may read a neighbour's words of a row after
        // the neighbour stored over them. A whole-pack kernel's thread reads
        // its own packs before it stores them (see `NormInPlace`).
        let extent = a.shape.extent().unwrap_or(usize::MAX);
        let copy_of = |from: u64, (dtype, len): (DType, usize), what: &str| {
            if a.in_place && k.spec.general {
                StreamCopy::of(stream, from, dtype, extent.min(len), what).map(Some)
            } else {
                Ok(None)
            }
        };
        let rows_copy = copy_of(at.x, a.x, "the rows")?;
        let residual_copy = match a.residual {
            Some(r) => copy_of(at.residual, r, "the residual")?,
            None => None,
        };
        let ws = k.workspace.hold(
            stream,
            plan.counters,
            plan.partials,
            k.spec.partial_bytes(),
            &self.name,
        )?;
        let (counters, partials) = ws.addresses();
        // Where a stream is overwritten in place, its read slot gets the
        // copy's address where there is one, else the buffer's.
        let read_at = |bound: u64, copy: &Option<StreamCopy>| {
            copy.as_ref().map_or(bound, |c| c.address(stream))
        };
        let (rows_at, residual_at) = (
            read_at(at.x, &rows_copy),
            read_at(at.residual, &residual_copy),
        );
        let (rows, cols, ld) = (a.shape.rows as u64, a.shape.cols as u64, a.shape.ld as u64);
        let mut args = CheckedArgs::new(stream, &k.func, &k.spec, &k.params);
        args.ptr(&rows_at)
            .ptr(&at.weight)
            .ptr(&at.out)
            .u64(&rows)
            .u64(&cols)
            .u64(&ld)
            .f32(&a.param)
            .u32(&plan.splits)
            .u32(&plan.span);
        for b in [
            &residual_at,
            &at.residual_out,
            &at.bias,
            &at.mean,
            &at.rstd,
            &counters,
            &partials,
        ] {
            args.ptr(b);
        }
        // `check_call` proved a `_qd` or `_qs` kernel has its scale buffer and
        // any other kernel none.
        if a.scale.is_some() {
            args.ptr(&at.scale);
        }
        let mut args = args.ready()?;
        let cfg = LaunchConfig {
            grid_dim: (plan.grid, 1, 1),
            block_dim: (k.spec.threads(), 1, 1),
            shared_mem_bytes: k.spec.stage_bytes() as u32,
        };
        // SAFETY: the kernel was generated from `k.spec` (this spec, or its
        // general twin: the same signature) with the signature
        // (x, weight, out: pointers; rows, cols, ld: u64; param: f32; splits,
        // span: u32; residual, residual_out, bias, mean, rstd, counters,
        // partials: pointers; an FP8 output's kernel then its scale pointer),
        // in that order; absent
        // buffers are null and the kernel never touches them. Every present
        // buffer's address was bound on this stream (`Bound`: the stream waits
        // for its pending work, and its access is recorded after this launch).
        // An in-place stream's read and write slots hold one buffer only for a
        // whole-pack kernel (a general twin reads from a copy), whose threads
        // read their packs of a row before they store them.
        // `check_call` proved each present buffer has its dtype and holds the
        // shape (row buffers (rows - 1) * ld + cols, vectors cols, statistics
        // rows), the row fits the kernel, and a split launch's blocks of a row
        // fit the launch's SMs at once; the workspace holds `plan.counters` zeroed
        // counters and `plan.partials` slots. A whole-pack kernel runs only when
        // `for_call` found cols and ld multiples of 4 and every buffer aligned to
        // 4 elements. A cooperative plan's grid is every item of a one-pass
        // split kernel, at most the blocks resident at once; its ticket plan
        // (`Plan::by_ticket`) the same kernel with one block more, which
        // takes every item by ticket.
        let launched = if plan.cooperative {
            match unsafe { args.launch_cooperative(cfg) } {
                // A partition of the device (MPS) may hold fewer blocks than
                // the occupancy its SM count gives; the ticket needs only a
                // row's blocks at once. Nothing ran: the workspace is as it was.
                Err(e) if e.0 == CUresult::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE => {
                    let grid_dim = (plan.by_ticket().grid, 1, 1);
                    unsafe { args.launch(LaunchConfig { grid_dim, ..cfg }) }
                }
                r => r,
            }
        } else {
            unsafe { args.launch(cfg) }
        };
        launched.during(|| format!("launching {}", k.spec.name()))?;
        Ok(())
    }
}

/// Checks a call of `spec`'s kernel without a GPU (`resident`: blocks of the
/// kernel the SMs the launch runs on hold at once, the device's or an SM
/// partition's): the spec's rules, then the call's.
/// Returns the launch plan, or `None` for an empty call (no rows, or rows of
/// no elements), which launches nothing.
pub fn check_call(spec: &NormSpec, c: &NormCall, resident: u64) -> Result<Option<Plan>> {
    spec.validate()?;
    check_loaded_call(spec, c, resident)
}

/// [`check_call`] for a loaded kernel's spec, which validated when it
/// compiled: the call's rules only. Every launch goes through here. (A
/// paired layout's validation looks its launch bound up by formatted keys,
/// hundreds of nanoseconds a launch.)
fn check_loaded_call(spec: &NormSpec, c: &NormCall, resident: u64) -> Result<Option<Plan>> {
    let err = Error::launch_of(|| spec.name());
    let m = c.shape;
    if let Some((what, value, rule)) = m.shape_violation() {
        return Err(err(what, value, rule));
    }
    // Positions within a row are 32-bit on the device.
    if m.cols > (1 << 31) {
        return Err(err(
            "cols",
            m.cols.to_string(),
            "a row holds at most 2^31 elements".into(),
        ));
    }
    let extent = m.extent();
    let row_buffer = |what: &'static str, b: (DType, usize), want: DType| -> Result<()> {
        if b.0 != want {
            return Err(err(
                what,
                b.0.to_string(),
                format!("this kernel's {what} is {want}"),
            ));
        }
        if extent.is_none_or(|e| e > b.1) {
            return Err(err(
                what,
                format!("{} elements", b.1),
                format!("(rows - 1) * ld + cols elements of {m:?} must fit it"),
            ));
        }
        Ok(())
    };
    if c.in_place && spec.input != spec.output {
        return Err(err(
            "x",
            "in place".into(),
            format!(
                "an in-place call writes each row over itself, so the kernel's input and output types must match; this one reads {} and writes {}",
                spec.input, spec.output
            ),
        ));
    }
    row_buffer("x", c.x, spec.input)?;
    row_buffer("out", c.out, spec.output)?;
    let presence = |what: &'static str, b: Option<(DType, usize)>, wanted: bool, why: &str| match (
        b.is_some(),
        wanted,
    ) {
        (true, false) => Err(err(
            what,
            "given".into(),
            format!("{} takes no {what}{why}", spec.name()),
        )),
        (false, true) => Err(err(
            what,
            "none".into(),
            format!("{} needs a {what}", spec.name()),
        )),
        _ => Ok(()),
    };
    presence(
        "residual",
        c.residual,
        spec.residual,
        " (its name has no _res)",
    )?;
    presence(
        "residual_out",
        c.residual_out,
        spec.residual,
        " (its name has no _res)",
    )?;
    if let (Some(r), Some(ro)) = (c.residual, c.residual_out) {
        row_buffer("residual", r, spec.input)?;
        row_buffer("residual_out", ro, spec.input)?;
    }
    let info = spec.op.info();
    presence("weight", c.weight, !info.softmax, "")?;
    presence("bias", c.bias, info.bias, "")?;
    for (what, b) in [("weight", c.weight), ("bias", c.bias)] {
        if let Some(b) = b
            && (b.0 != spec.input || b.1 != m.cols)
        {
            return Err(err(
                what,
                format!("{} x {}", b.1, b.0),
                format!("a {what} is cols ({}) elements of {}", m.cols, spec.input),
            ));
        }
    }
    if c.mean.is_some() && !info.mean {
        return Err(err(
            "mean",
            "given".into(),
            format!("{} writes no mean", spec.op),
        ));
    }
    if c.rstd.is_some() && info.softmax {
        return Err(err(
            "rstd",
            "given".into(),
            format!("{} writes no rstd", spec.op),
        ));
    }
    for (what, b) in [("mean", c.mean), ("rstd", c.rstd)] {
        if let Some(b) = b
            && (b.0 != DType::F32 || b.1 != m.rows)
        {
            return Err(err(
                what,
                format!("{} x {}", b.1, b.0),
                format!("row statistics are rows ({}) f32", m.rows),
            ));
        }
    }
    if m.rows > 0 && m.cols == 0 && (c.mean.is_some() || c.rstd.is_some()) {
        return Err(err(
            "cols",
            "0".into(),
            "row statistics of rows of no elements have no value".into(),
        ));
    }
    if !c.param.is_finite() || (!info.softmax && c.param < 0.0) {
        let rule = if info.softmax {
            "the scale must be finite"
        } else {
            "eps must be finite and at least 0"
        };
        return Err(err("param", c.param.to_string(), rule.into()));
    }
    match (spec.fp8, c.scale) {
        (None, None) => {}
        (None, Some(_)) => {
            return Err(err(
                "scale",
                "given".into(),
                format!(
                    "{} writes no FP8 output (its name has no _qd or _qs)",
                    spec.name()
                ),
            ));
        }
        (Some(q), got) => {
            let (want, role) = match q {
                Fp8Scale::PerRow => (m.rows, "rows (r) f32 as Fp8Scales::PerRow, which it writes"),
                Fp8Scale::Given => (1, "1 (r) f32 as Fp8Scales::Given, which it reads"),
            };
            if got != Some((DType::F32, want, q)) {
                let value = match got {
                    None => "none".to_string(),
                    Some((dtype, len, given)) => format!("{given:?}: {len} x {dtype}"),
                };
                return Err(err(
                    "scale",
                    value,
                    format!(
                        "{} takes {}",
                        spec.name(),
                        role.replace("(r)", &format!("({want})"))
                    ),
                ));
            }
        }
    }
    if m.is_empty() {
        return Ok(None);
    }
    if let Some(cap) = spec.capacity()
        && m.cols as u64 > cap
    {
        return Err(err(
            "cols",
            m.cols.to_string(),
            format!(
                "this kernel holds rows of at most {cap}; use NormSpec::for_cols ({})",
                spec.for_cols(m.cols as u64).name()
            ),
        ));
    }
    // The launcher hands other rows to the ragged twin; this guards the kernel.
    if spec.exact && !spec.fills_exactly(m.cols as u64) {
        let rule = match spec.capacity() {
            Some(_) => format!("rows of exactly {}", spec.chunk()),
            None => format!("rows whose length is a multiple of {}", spec.chunk()),
        };
        return Err(err(
            "cols",
            m.cols.to_string(),
            format!(
                "{} takes {rule} (its ragged twin, {}, takes the others)",
                spec.name(),
                spec.ragged_twin().name()
            ),
        ));
    }
    let plan = spec.plan(
        m.rows as u64,
        m.cols as u64,
        1,
        resident.clamp(1, u32::MAX.into()) as u32,
    );
    if spec.layout == NormLayout::Split {
        if u64::from(plan.splits) > resident {
            return Err(err(
                "cols",
                m.cols.to_string(),
                format!(
                    "a row takes {} blocks and the SMs the launch runs on hold {resident} of this kernel at once; the blocks of a row must all be resident",
                    plan.splits
                ),
            ));
        }
        let tickets = (m.rows as u64).saturating_mul(u64::from(plan.splits)) + u64::from(plan.grid);
        if tickets > u64::from(u32::MAX) {
            return Err(err(
                "matrix",
                format!("{m:?}"),
                "rows x splits must stay below 2^32 (the work ticket is 32-bit)".into(),
            ));
        }
    }
    Ok(Some(plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(spec: &NormSpec, rows: usize, cols: usize) -> NormCall {
        let norm = !spec.op.info().softmax;
        let n = rows * cols;
        NormCall {
            x: (spec.input, n),
            residual: spec.residual.then_some((spec.input, n)),
            weight: norm.then_some((spec.input, cols)),
            bias: spec.op.info().bias.then_some((spec.input, cols)),
            out: (spec.output, n),
            residual_out: spec.residual.then_some((spec.input, n)),
            mean: None,
            rstd: None,
            shape: Matrix {
                rows,
                cols,
                ld: cols,
            },
            param: 1e-5,
            in_place: false,
            scale: spec.fp8.map(|q| {
                let len = if q == Fp8Scale::PerRow { rows } else { 1 };
                (DType::F32, len, q)
            }),
        }
    }

    #[test]
    fn a_cluster_row_takes_rows_up_to_its_clusters_chunks() {
        let spec: NormSpec = "norm_layernorm_bf16_bf16_s256x8_c7_p".parse().unwrap();
        let p = check_call(&spec, &call(&spec, 4096, 7 * 8192), 396)
            .unwrap()
            .expect("a plan");
        assert_eq!((p.splits, p.grid % 7, p.span), (7, 0, 8192));
        let e = check_call(&spec, &call(&spec, 4096, 7 * 8192 + 4), 396)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cols = 57348") && e.contains("at most 57344"),
            "{e}"
        );
        // Its general twin's chunks reach 3 elements before the row.
        let twin = spec.general_twin();
        assert!(check_call(&twin, &call(&twin, 5, 7 * 8192 - 3), 396).is_ok());
        assert!(check_call(&twin, &call(&twin, 5, 7 * 8192 - 2), 396).is_err());
    }

    #[test]
    fn an_exact_kernel_takes_rows_of_its_length_only() {
        let spec: NormSpec = "norm_softmax_online_bf16_bf16_b512x16_p_x".parse().unwrap();
        assert!(check_call(&spec, &call(&spec, 3, 32768), 132).is_ok());
        let e = check_call(&spec, &call(&spec, 3, 32764), 132)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cols = 32764")
                && e.contains("exactly 32768")
                && e.contains("norm_softmax_online_bf16_bf16_b512x16_p"),
            "{e}"
        );
    }

    #[test]
    fn an_exact_split_kernel_takes_whole_chunks_only() {
        let spec: NormSpec = "norm_layernorm_bf16_bf16_s512x8_p_x".parse().unwrap();
        assert_eq!(spec.chunk(), 16384);
        for cols in [16384, 2 * 16384, 1 << 20] {
            assert!(
                check_call(&spec, &call(&spec, 3, cols), 132).is_ok(),
                "{cols}"
            );
        }
        for cols in [2 * 16384 + 4, (1 << 20) - 4] {
            let e = check_call(&spec, &call(&spec, 3, cols), 132)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(&format!("cols = {cols}"))
                    && e.contains("a multiple of 16384")
                    && e.contains("norm_layernorm_bf16_bf16_s512x8_p,"),
                "{e}"
            );
        }
    }

    #[test]
    fn good_calls_pass_and_plan() {
        for name in [
            "norm_softmax_online_bf16_f32_w32x8",
            "norm_layernorm_res_f16_f16_b256x4",
            "norm_rmsnorm_bf16_bf16_s512x8",
        ] {
            let spec: NormSpec = name.parse().unwrap();
            let cols = spec.capacity().unwrap_or(1 << 20) as usize;
            let p = check_call(&spec, &call(&spec, 3, cols), 264)
                .unwrap()
                .expect("a plan");
            assert!(p.grid >= 1, "{name}");
        }
    }

    #[test]
    fn bad_calls_name_the_value_and_the_rule() {
        let spec: NormSpec = "norm_layernorm_res_f16_f16_b256x4".parse().unwrap();
        let ok = call(&spec, 3, 1000);
        let cases: Vec<(NormCall, &str)> = vec![
            (
                NormCall {
                    x: (DType::F32, 3000),
                    ..ok.clone()
                },
                "x = f32",
            ),
            (
                NormCall {
                    out: (DType::F16, 2999),
                    ..ok.clone()
                },
                "out = 2999 elements",
            ),
            (
                NormCall {
                    residual: None,
                    ..ok.clone()
                },
                "residual = none",
            ),
            (
                NormCall {
                    bias: None,
                    ..ok.clone()
                },
                "bias = none",
            ),
            (
                NormCall {
                    weight: Some((DType::F16, 999)),
                    ..ok.clone()
                },
                "weight = 999 x f16",
            ),
            (
                NormCall {
                    mean: Some((DType::F32, 2)),
                    ..ok.clone()
                },
                "mean = 2 x f32",
            ),
            (
                NormCall {
                    param: -1.0,
                    ..ok.clone()
                },
                "param = -1",
            ),
            (call(&spec, 3, 4097), "cols = 4097"),
            (
                NormCall {
                    shape: Matrix {
                        rows: 3,
                        cols: 1000,
                        ld: 999,
                    },
                    ..ok.clone()
                },
                "ld = 999",
            ),
        ];
        for (c, want) in cases {
            let e = check_call(&spec, &c, 264)
                .map(|p| format!("{want}: passed with {p:?}"))
                .expect_err(want)
                .to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        // No rows: an empty call (the crate's rule), checked, nothing to launch.
        let empty = NormCall {
            shape: Matrix {
                rows: 0,
                cols: 1000,
                ld: 1000,
            },
            ..ok.clone()
        };
        assert_eq!(check_call(&spec, &empty, 264).unwrap(), None);
        let soft: NormSpec = "norm_softmax_safe_f32_f32_w32x1".parse().unwrap();
        let mut c = call(&soft, 2, 128);
        c.weight = Some((DType::F32, 128));
        assert!(
            check_call(&soft, &c, 264)
                .unwrap_err()
                .to_string()
                .contains("takes no weight")
        );
        // In place: one buffer is read in the input type and written in the
        // output type, so they must match.
        let mixed: NormSpec = "norm_rmsnorm_bf16_f32_b256x4".parse().unwrap();
        let mut c = call(&mixed, 2, 1024);
        c.out = c.x;
        c.in_place = true;
        let e = check_call(&mixed, &c, 264).unwrap_err().to_string();
        assert!(
            e.contains("x = in place") && e.contains("reads bf16 and writes f32"),
            "{e}"
        );
        let same: NormSpec = "norm_rmsnorm_res_f16_f16_b256x4".parse().unwrap();
        let mut c = call(&same, 2, 1024);
        c.in_place = true;
        assert!(check_call(&same, &c, 264).unwrap().is_some());
        // An FP8 output's scale buffer: per row it writes rows f32, given it
        // reads 1; other kernels take none.
        let qd: NormSpec = "norm_rmsnorm_res_bf16_e4m3_b256x4_qd".parse().unwrap();
        let mut c = call(&qd, 3, 1024);
        assert!(check_call(&qd, &c, 264).unwrap().is_some());
        for (scale, want) in [
            (None, "scale = none"),
            (
                Some((DType::F32, 2, Fp8Scale::PerRow)),
                "scale = PerRow: 2 x f32",
            ),
            (
                Some((DType::F32, 3, Fp8Scale::Given)),
                "scale = Given: 3 x f32",
            ),
            (
                Some((DType::BF16, 3, Fp8Scale::PerRow)),
                "scale = PerRow: 3 x bf16",
            ),
        ] {
            c.scale = scale;
            let e = check_call(&qd, &c, 264).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("takes rows (3) f32"), "{e}");
        }
        let qs: NormSpec = "norm_layernorm_f32_e4m3_w32x2_qs".parse().unwrap();
        let mut c = call(&qs, 3, 200);
        assert!(check_call(&qs, &c, 264).unwrap().is_some());
        c.scale = Some((DType::F32, 3, Fp8Scale::Given));
        let e = check_call(&qs, &c, 264).unwrap_err().to_string();
        assert!(e.contains("takes 1 (1) f32 as Fp8Scales::Given"), "{e}");
        let plain: NormSpec = "norm_rmsnorm_bf16_bf16_b256x4".parse().unwrap();
        let mut c = call(&plain, 3, 1024);
        c.scale = Some((DType::F32, 3, Fp8Scale::PerRow));
        let e = check_call(&plain, &c, 264).unwrap_err().to_string();
        assert!(e.contains("writes no FP8 output"), "{e}");
        let split: NormSpec = "norm_rmsnorm_f32_f32_s512x8".parse().unwrap();
        let e = check_call(&split, &call(&split, 2, 1 << 20), 32)
            .unwrap_err()
            .to_string();
        assert!(e.contains("must all be resident"), "{e}");
    }
}
