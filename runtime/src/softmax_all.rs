//! The typed launcher of whole-array softmax (`softmax_all` kernels): the one
//! place its two kernels are launched, and the one place a call is checked.
//!
//! ```no_run
//! use redjit_runtime::{Runtime, SoftmaxAllSpec};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = Runtime::new(0)?;
//! let s = rt.stream();
//! let x = s.clone_htod(&vec![half::bf16::from_f32(0.5); 1 << 20])?;
//! let mut y = s.alloc_zeros::<f32>(1 << 20)?;
//! // y = softmax(2 x) over all 2^20 elements, bf16 in, f32 out.
//! let k = rt.softmax_all(&"softmax_all_softmax_bf16_f32".parse()?)?;
//! k.launch(s, &x, &mut y, 2.0)?;
//! // In place (input and output of one type): the buffer is both.
//! let mut z = s.clone_htod(&vec![1.0f32; 1000])?;
//! rt.softmax_all(&"softmax_all_logsoftmax_f32_f32".parse()?)?.launch_in_place(s, &mut z, 1.0)?;
//! # Ok(()) }
//! ```
//!
//! A call is two launches on the caller's stream: the stats stage writes the
//! array's (max, sum) state to the kernel object's workspace, the normalise
//! stage reads it there. The workspace is allocated once, when the kernel is
//! made (its size does not depend on n), so a call allocates nothing, copies
//! nothing to or from the host, and can be captured in a CUDA graph; while the
//! stream is capturing, the launcher pauses cudarc's event tracking for the
//! call, as the all-reduce does (a captured wait on an event recorded before
//! the capture would invalidate it). Calls of one kernel object share its
//! workspace: calls on one stream are ordered by it; calls on several streams
//! are ordered by cudarc's event tracking when it is on, and must not overlap
//! otherwise (make one kernel object per stream).
//!
//! Rules of a call (checked in [`check_call`], every call goes through it):
//! - x is the spec's input type, y its output type, and they have the same
//!   length n. n = 0 launches nothing.
//! - x and y are different memory, or exactly the same memory (in place, with
//!   [`SoftmaxAllKernel::launch_in_place`], input and output of one type):
//!   each element is then read and written by the same thread, read first. A
//!   partial overlap is refused (a thread's write could reach an element
//!   another thread has not read yet).
//! - The scale is finite (as the row softmax's).
//! - Results are deterministic: the same bits every run on one device (the
//!   stats stage's grid depends on the device and n only; no float atomics).

use std::sync::{Arc, Mutex};

use cudarc::driver::sys::CUstreamCaptureStatus;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig};
use redjit_codegen::params::Param;
use redjit_codegen::spec::reduce::{MAX_ALL_BLOCKS, PARTIAL_BYTES, Plan, THREADS};
use redjit_codegen::spec::softmax_all::STATS_BYTES;
use redjit_codegen::{DType, KernelSpec, SoftmaxAllSpec, SoftmaxAllStage};

use crate::elem::{KernelInput, KernelOutput};
use crate::error::{DriverContext, Error, Result};
use crate::launch_args::CheckedArgs;
use crate::runtime::{Runtime, blocks_per_sm};
use crate::tracking::TrackingPaused;

/// What [`check_call`] needs to know of a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoftmaxAllCall {
    /// x: (dtype, elements, device address of element 0).
    pub x: (DType, usize, u64),
    /// y: (dtype, elements, device address of element 0).
    pub y: (DType, usize, u64),
    /// The scale x is multiplied by.
    pub scale: f32,
}

/// Checks a call of the whole-array softmax whose normalise stage is `spec`,
/// without a GPU. Returns n.
pub fn check_call(spec: &SoftmaxAllSpec, c: &SoftmaxAllCall) -> Result<u64> {
    spec.validate()?;
    let err = Error::launch_of(|| spec.name());
    if spec.stage != SoftmaxAllStage::Normalize {
        return Err(err(
            "spec",
            spec.name(),
            "Runtime::softmax_all takes the normalise stage's spec (e.g. softmax_all_softmax_bf16_f32); the stats stage comes with it".into(),
        ));
    }
    for (what, b, want) in [("x", c.x, spec.input), ("y", c.y, spec.output)] {
        if b.0 != want {
            return Err(err(
                what,
                b.0.to_string(),
                format!("this kernel's {what} is {want}"),
            ));
        }
    }
    if c.y.1 != c.x.1 {
        return Err(err(
            "y",
            format!("{} elements", c.y.1),
            format!("y must have x's length ({})", c.x.1),
        ));
    }
    let n = c.x.1 as u64;
    let bytes = |b: (DType, usize, u64)| (b.1 as u64).saturating_mul(u64::from(b.0.info().bytes));
    let (x0, x1) = (c.x.2, c.x.2.saturating_add(bytes(c.x)));
    let (y0, y1) = (c.y.2, c.y.2.saturating_add(bytes(c.y)));
    let overlap = n > 0 && x0 < y1 && y0 < x1;
    if overlap && !(x0 == y0 && spec.input == spec.output) {
        return Err(err(
            "y",
            format!("bytes {y0:#x}..{y1:#x}"),
            format!(
                "y overlaps x (bytes {x0:#x}..{x1:#x}); only exactly the same buffer with input and output of one type (in place) may"
            ),
        ));
    }
    if !c.scale.is_finite() {
        return Err(err(
            "scale",
            c.scale.to_string(),
            "the scale must be finite".into(),
        ));
    }
    Ok(n)
}

/// A loaded whole-array softmax: both stages' kernels (compiled as one
/// program) and the workspace they share (see the module doc).
pub struct SoftmaxAllKernel<'rt> {
    rt: &'rt Runtime,
    spec: SoftmaxAllSpec,
    stats: CudaFunction,
    normalize: CudaFunction,
    stats_blocks_per_sm: u32,
    /// The two stages' specs and `params()`: what each launch pushes.
    stages: [(SoftmaxAllSpec, Vec<Param>); 2],
    /// The state (`STATS_BYTES`, padded to `PARTIAL_BYTES`), the arrival
    /// counter (padded likewise), then `MAX_ALL_BLOCKS` partial slots. Locked
    /// for the span of a call's two launches (host side only).
    workspace: Mutex<CudaSlice<u8>>,
}

/// Workspace bytes before the counter: the (max, sum) state.
const STATE_AREA: usize = STATS_BYTES.next_multiple_of(PARTIAL_BYTES);
/// Workspace bytes of the arrival counter.
const COUNTER_AREA: usize = PARTIAL_BYTES;

impl Runtime {
    /// Compiles (through the cache, both stages as one program) and loads the
    /// whole-array softmax whose normalise stage is `spec`, and allocates its
    /// workspace (zeroed: the counter starts at 0, and each call's last block
    /// leaves it at 0).
    pub fn softmax_all(&self, spec: &SoftmaxAllSpec) -> Result<SoftmaxAllKernel<'_>> {
        check_call(
            spec,
            &SoftmaxAllCall {
                x: (spec.input, 0, 0),
                y: (spec.output, 0, 0),
                scale: 1.0,
            },
        )?;
        let stages = spec.pipeline();
        self.prepare(&stages)?;
        let stats = self.function(&stages[0])?;
        let normalize = self.function(&stages[1])?;
        let stats_blocks_per_sm = blocks_per_sm(&stats, THREADS, 0, &stages[0].name())?;
        let bytes = STATE_AREA + COUNTER_AREA + MAX_ALL_BLOCKS as usize * PARTIAL_BYTES;
        let workspace = self
            .stream()
            .alloc_zeros::<u8>(bytes)
            .during(|| format!("allocating the workspace of {}", spec.name()))?;
        Ok(SoftmaxAllKernel {
            rt: self,
            spec: *spec,
            stats,
            normalize,
            stats_blocks_per_sm,
            stages: spec.pipeline().map(|s| (s, s.params())),
            workspace: Mutex::new(workspace),
        })
    }
}

impl SoftmaxAllKernel<'_> {
    /// The normalise stage's spec the kernel was made from.
    pub fn spec(&self) -> &SoftmaxAllSpec {
        &self.spec
    }

    /// The stats stage's launch for n elements on this device (the tests derive
    /// tolerances from its `chain`).
    pub fn stats_plan(&self, n: u64) -> Plan {
        self.spec
            .stats_plan(n, self.rt.device().sm_count, self.stats_blocks_per_sm)
    }

    /// y = softmax (log-softmax) of `scale * x` over the whole array, on
    /// `stream`.
    pub fn launch(
        &self,
        stream: &Arc<CudaStream>,
        x: &dyn KernelInput,
        y: &mut dyn KernelOutput,
        scale: f32,
    ) -> Result<()> {
        self.run(stream, Some(x), y, scale)
    }

    /// xy = softmax (log-softmax) of `scale * xy`, in place (the spec's input
    /// and output must be one type).
    pub fn launch_in_place(
        &self,
        stream: &Arc<CudaStream>,
        xy: &mut dyn KernelOutput,
        scale: f32,
    ) -> Result<()> {
        self.run(stream, None, xy, scale)
    }

    fn run(
        &self,
        stream: &Arc<CudaStream>,
        x: Option<&dyn KernelInput>,
        y: &mut dyn KernelOutput,
        scale: f32,
    ) -> Result<()> {
        let name = self.spec.name();
        // Asked before any buffer is touched: reading a tracked slice's address
        // inside a capture would wait on an event recorded before it.
        let capturing = stream
            .capture_status()
            .during(|| format!("querying the capture status of the stream of {name}"))?
            == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE;
        let _paused = capturing.then(|| TrackingPaused::new(std::slice::from_ref(self.rt)));
        let y_buf = (y.dtype(), y.len(), y.address(stream));
        let x_buf = x.map_or(y_buf, |x| (x.dtype(), x.len(), x.address(stream)));
        let n = check_call(
            &self.spec,
            &SoftmaxAllCall {
                x: x_buf,
                y: y_buf,
                scale,
            },
        )?;
        if n == 0 {
            return Ok(());
        }
        let plan = self.stats_plan(n);
        let cfg = |grid: u32| LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let [stats_spec, _] = self.spec.pipeline();
        let mut guard = self.workspace.lock().unwrap_or_else(|p| p.into_inner());
        let (mut state, mut rest) = guard.split_at_mut(STATE_AREA);
        {
            let (mut counter, mut partials) = rest.split_at_mut(COUNTER_AREA);
            let (stats, params) = &self.stages[0];
            let mut a = CheckedArgs::new(stream, &self.stats, stats, params);
            match x {
                Some(x) => a.input(x),
                // In place: y is x (pushed as an output, so a write elsewhere
                // on another stream is waited for).
                None => a.output(&mut *y),
            };
            a.ptr(&mut state)
                .ptr(&mut counter)
                .ptr(&mut partials)
                .u64(&n)
                .f32(&scale);
            let mut a = a.ready()?;
            // SAFETY: softmax_all_stats_<in>(x, stats, counters, partials:
            // pointers; n: u64; scale: f32). check_call proved x holds n
            // elements of the input type (in place: y, the same buffer); the
            // state area holds 8 bytes, the counter starts at 0 (zeroed at
            // allocation, reset by each launch's last block), and the partials
            // hold MAX_ALL_BLOCKS slots of PARTIAL_BYTES, which bounds the
            // plan's grid. The kernel writes only the state, the counter and
            // the partials.
            unsafe { a.launch(cfg(plan.grid.0)) }
                .during(|| format!("launching {}", stats_spec.name()))?;
        }
        let grid = self.spec.normalize_grid(n, self.rt.device().sm_count);
        let (normalize, params) = &self.stages[1];
        let mut a = CheckedArgs::new(stream, &self.normalize, normalize, params);
        match x {
            Some(x) => a.input(x),
            // In place: x is y's own address (y is pushed, tracked, next).
            None => a.ptr(&y_buf.2),
        };
        a.output(y);
        a.ptr(&mut state).u64(&n).f32(&scale);
        let mut a = a.ready()?;
        // SAFETY: softmax_all_<op>_<in>_<out>(x, y, stats: pointers; n: u64;
        // scale: f32). check_call proved x holds n elements of the input type
        // and y n of the output type, apart or exactly the same memory with one
        // type (each element is then read before it is written, by the same
        // thread, with coherent loads); the state was written by the stats
        // launch just before on this stream.
        unsafe { a.launch(cfg(grid)) }.during(|| format!("launching {name}"))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(x: (DType, usize, u64), y: (DType, usize, u64)) -> SoftmaxAllCall {
        SoftmaxAllCall { x, y, scale: 1.0 }
    }

    #[test]
    fn every_rule_is_checked_naming_the_value() {
        let spec: SoftmaxAllSpec = "softmax_all_softmax_bf16_f32".parse().unwrap();
        let ok = call((DType::BF16, 10, 0x1000), (DType::F32, 10, 0x2000));
        assert_eq!(check_call(&spec, &ok).unwrap(), 10);
        let msg = |c: SoftmaxAllCall| check_call(&spec, &c).unwrap_err().to_string();
        let e = msg(call((DType::F32, 10, 0x1000), (DType::F32, 10, 0x2000)));
        assert!(e.contains("x = f32") && e.contains("x is bf16"), "{e}");
        let e = msg(call((DType::BF16, 10, 0x1000), (DType::BF16, 10, 0x2000)));
        assert!(e.contains("y = bf16") && e.contains("y is f32"), "{e}");
        let e = msg(call((DType::BF16, 10, 0x1000), (DType::F32, 9, 0x2000)));
        assert!(
            e.contains("y = 9 elements") && e.contains("x's length (10)"),
            "{e}"
        );
        // Overlap: x is 20 bytes, y starts inside it.
        let e = msg(call((DType::BF16, 10, 0x1000), (DType::F32, 10, 0x1010)));
        assert!(e.contains("overlaps x") && e.contains("in place"), "{e}");
        // Adjacent is fine.
        assert!(
            check_call(
                &spec,
                &call((DType::BF16, 10, 0x1000), (DType::F32, 10, 0x1014))
            )
            .is_ok()
        );
        // The same address with two types is still an overlap.
        let e = msg(call((DType::BF16, 10, 0x1000), (DType::F32, 10, 0x1000)));
        assert!(e.contains("overlaps x"), "{e}");
        let e = check_call(
            &spec,
            &SoftmaxAllCall {
                scale: f32::NAN,
                ..ok
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("scale = NaN") && e.contains("finite"), "{e}");
        // The stats stage is not what a caller hands over.
        let e = check_call(&spec.stats(), &ok).unwrap_err().to_string();
        assert!(
            e.contains("spec = softmax_all_stats_bf16") && e.contains("normalise stage"),
            "{e}"
        );
        // In place with one type; and n = 0.
        let same: SoftmaxAllSpec = "softmax_all_logsoftmax_f16_f16".parse().unwrap();
        let buf = (DType::F16, 7, 0x4002);
        assert_eq!(check_call(&same, &call(buf, buf)).unwrap(), 7);
        let e = check_call(&same, &call(buf, (DType::F16, 7, 0x4004)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("overlaps x"), "{e}");
        assert_eq!(
            check_call(
                &same,
                &call((DType::F16, 0, 0x4000), (DType::F16, 0, 0x4000))
            )
            .unwrap(),
            0
        );
    }
}
