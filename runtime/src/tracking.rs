//! Pausing cudarc's per-buffer event tracking for the span of a captured
//! call: what the all-reduce and the whole-array softmax both need.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::runtime::Runtime;

/// cudarc's event tracking paused on the communicator's contexts while a
/// capturing call issues. A tracked slice's address makes the stream wait on
/// the slice's last write event; that event was recorded before the capture
/// began, and a captured wait on uncaptured work is illegal
/// (CUDA_ERROR_STREAM_CAPTURE_ISOLATION invalidates the whole capture). The
/// captured call is ordered by the capturing stream itself, so the waits are
/// not needed. Another thread using these contexts meanwhile sees tracking off
/// for that span; tracking is restored on drop, where it was on.
pub(crate) struct TrackingPaused {
    paused: Vec<Arc<CudaContext>>,
}

impl TrackingPaused {
    /// Pauses tracking on the contexts of `runtimes` that have it on.
    pub(crate) fn new(runtimes: &[Runtime]) -> TrackingPaused {
        let mut paused: Vec<Arc<CudaContext>> = Vec::new();
        for rt in runtimes {
            let ctx = rt.context();
            if ctx.is_event_tracking() && !paused.iter().any(|c| Arc::ptr_eq(c, ctx)) {
                // SAFETY: only the span of one captured call, whose work the
                // capturing stream orders; slices are neither freed nor
                // created by it.
                unsafe { ctx.disable_event_tracking() };
                paused.push(ctx.clone());
            }
        }
        TrackingPaused { paused }
    }
}

impl Drop for TrackingPaused {
    fn drop(&mut self) {
        for ctx in &self.paused {
            // SAFETY: restores the state found in `new`.
            unsafe { ctx.enable_event_tracking() };
        }
    }
}
