//! GPU timing with CUDA events: warm-up, then each iteration timed on its own.
//!
//! A timed launch on an idle GPU counts the host's time to issue it: the start
//! event is passed at once, and the GPU waits for the launch to arrive (3.5 to
//! 11 us a launch on the H100, commit bb57a3f). With
//! [`LaunchGap::Hidden`] a [`Hold`] kernel keeps the stream busy while the
//! host issues the start event, the work and the end event, so the events
//! bracket the GPU's time alone, as NVIDIA's nvbench does with its blocking
//! kernel and Triton's `do_bench` with its cache flush before each launch.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::ValueEnum;
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaGraph, CudaStream, LaunchConfig, PushKernelArg,
};
use serde::{Deserialize, Serialize};

use crate::error::{CliError, CliResult, DriverContext};

/// Whether a timed launch counts the host's time to issue it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LaunchGap {
    /// The GPU is held busy while the launch is issued: the events time the
    /// GPU's work alone.
    #[default]
    Hidden,
    /// The launch is issued to an idle GPU: the events count the host's
    /// issue time too (the benchmarks' method before commit df9f5d7).
    Counted,
}

impl LaunchGap {
    /// What a JSON file written before the field timed with (`serde(default)`).
    pub fn before_the_field() -> LaunchGap {
        LaunchGap::Counted
    }
}

/// How long a [`Hold`] keeps the stream busy: well above what the host takes
/// to issue one timed launch (at most 11 us measured through cudarc with
/// event tracking on; PyTorch's reference holds as long, and some of its
/// calls, several kernels or a compiled graph's guards, took over 200 us).
pub const HOLD_US: u64 = 1000;

/// The spin of a [`Hold`], in PTX (no NVRTC needed): one thread reads the
/// global timer until `ns` nanoseconds have passed.
const HOLD_KERNEL_PTX: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\
.visible .entry rj_hold(.param .u64 ns)\n{\n\t.reg .u64 %t0, %t, %d, %ns;\n\t.reg .pred %p;\n\
\tld.param.u64 %ns, [ns];\n\tmov.u64 %t0, %globaltimer;\nSPIN:\n\tmov.u64 %t, %globaltimer;\n\
\tsub.u64 %d, %t, %t0;\n\tsetp.lt.u64 %p, %d, %ns;\n\t@%p bra SPIN;\n\tret;\n}\n";

/// A kernel that keeps a stream busy for a fixed time, launched before a
/// timed launch's start event ([`LaunchGap::Hidden`]).
pub struct Hold {
    func: CudaFunction,
    duration: Duration,
}

/// The kernel `name` of hand-written PTX (the driver JIT-compiles it for the
/// GPU; no NVRTC needed), loaded in `ctx`; `what` names it in errors.
pub fn load_ptx_kernel(
    ctx: &Arc<CudaContext>,
    ptx: &str,
    name: &str,
    what: &str,
) -> CliResult<CudaFunction> {
    ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx))
        .during(|| format!("loading the {what}'s PTX"))?
        .load_function(name)
        .during(|| format!("loading the {what}"))
}

impl Hold {
    /// The hold kernel loaded in `ctx`, spinning for `us` microseconds.
    pub fn new(ctx: &Arc<CudaContext>, us: u64) -> CliResult<Hold> {
        let func = load_ptx_kernel(ctx, HOLD_KERNEL_PTX, "rj_hold", "hold kernel")?;
        Ok(Hold {
            func,
            duration: Duration::from_micros(us),
        })
    }

    /// The hold for `gap` (none where the gap is counted).
    pub fn for_gap(ctx: &Arc<CudaContext>, gap: LaunchGap) -> CliResult<Option<Hold>> {
        match gap {
            LaunchGap::Hidden => Hold::new(ctx, HOLD_US).map(Some),
            LaunchGap::Counted => Ok(None),
        }
    }

    fn launch(&self, stream: &Arc<CudaStream>) -> CliResult {
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        let ns = self.duration.as_nanos() as u64;
        // SAFETY: the kernel takes one u64 by value and touches no memory.
        unsafe { stream.launch_builder(&self.func).arg(&ns).launch(cfg) }
            .during(|| "launching the hold kernel".into())?;
        Ok(())
    }
}

/// Runs `op` `warmup` times, then `iters` times between two events each (after
/// `hold`'s kernel, if given); returns the median in microseconds. Warns when
/// the host took longer than the hold to issue an iteration: that iteration
/// counted host time.
pub fn median_us(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    hold: Option<&Hold>,
    warmup: usize,
    iters: usize,
    mut op: impl FnMut() -> CliResult,
) -> CliResult<f64> {
    for _ in 0..warmup {
        op()?;
    }
    stream.synchronize().during(|| "the warm-up".into())?;
    let event = || {
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .during(|| "creating a timing event".into())
    };
    let (start, end) = (event()?, event()?);
    let mut times = Vec::with_capacity(iters);
    let mut leaked = 0usize;
    for _ in 0..iters {
        let issued = Instant::now();
        if let Some(h) = hold {
            h.launch(stream)?;
        }
        start
            .record(stream)
            .during(|| "recording an event".into())?;
        op()?;
        end.record(stream).during(|| "recording an event".into())?;
        if hold.is_some_and(|h| issued.elapsed() >= h.duration) {
            leaked += 1;
        }
        let ms = start
            .elapsed_ms(&end)
            .during(|| "reading an event time".into())?;
        times.push(f64::from(ms) * 1e3);
    }
    if let (Some(h), true) = (hold, leaked > 0) {
        eprintln!(
            "redjit: warning: the host took longer than the {} us hold to issue {leaked} of {iters} timed launches; those count host time",
            h.duration.as_micros()
        );
    }
    Ok(median(&mut times))
}

/// `batch` calls of `issue` captured on `stream` (in `mode`) into a CUDA graph.
/// The capture is ended whatever happened, so the stream stays usable.
pub fn capture_batch(
    stream: &Arc<CudaStream>,
    mode: CUstreamCaptureMode,
    batch: usize,
    issue: &mut dyn FnMut() -> CliResult,
) -> CliResult<CudaGraph> {
    stream
        .begin_capture(mode)
        .during(|| "beginning a graph capture".into())?;
    let issued = (0..batch).try_for_each(|_| issue());
    let graph = stream
        .end_capture(CUgraphInstantiate_flags(0))
        .during(|| "ending a graph capture".into());
    issued?;
    graph?.ok_or_else(|| CliError::failure("the graph capture was empty"))
}

/// Median microseconds per call of a `graph` of `batch` calls: uploaded, one
/// warm-up replay, then `iters` replays each between two events.
pub fn graph_us_per_call(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    hold: Option<&Hold>,
    iters: usize,
    batch: usize,
    graph: &CudaGraph,
) -> CliResult<f64> {
    graph.upload().during(|| "uploading the graph".into())?;
    let us = median_us(ctx, stream, hold, 1, iters, || {
        graph.launch().during(|| "launching the graph".into())
    })?;
    Ok(us / batch as f64)
}

/// The median (mean of the two middle values for an even count); 0 when empty.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
