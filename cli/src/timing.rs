//! GPU timing with CUDA events: warm-up, then each iteration timed on its own.

use std::sync::Arc;

use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{CudaContext, CudaGraph, CudaStream};

use crate::error::{CliError, CliResult, DriverContext};

/// Runs `op` `warmup` times, then `iters` times between two events each; returns
/// the median in microseconds.
pub fn median_us(
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
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
    for _ in 0..iters {
        start
            .record(stream)
            .during(|| "recording an event".into())?;
        op()?;
        end.record(stream).during(|| "recording an event".into())?;
        let ms = start
            .elapsed_ms(&end)
            .during(|| "reading an event time".into())?;
        times.push(f64::from(ms) * 1e3);
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
    iters: usize,
    batch: usize,
    graph: &CudaGraph,
) -> CliResult<f64> {
    graph.upload().during(|| "uploading the graph".into())?;
    let us = median_us(ctx, stream, 1, iters, || {
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
