//! The device scratch a reduce or norm kernel object keeps between launches:
//! u32 counters, rounded up to a whole partial slot, then the partial states.
//! It is allocated zeroed and grown on demand; every launch leaves its
//! counters at zero again (the last block to finish resets them), so only a
//! new buffer needs zeroing. Launches of one kernel object on several streams
//! share it (the kernel objects' docs say how they are ordered).

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut};

use crate::error::{DriverContext, Result};

/// A kernel object's counters-then-partials scratch buffer.
pub(crate) struct Workspace(Mutex<Option<CudaSlice<u8>>>);

/// The workspace, locked for one launch and large enough for it.
pub(crate) struct Held<'a> {
    buffer: MutexGuard<'a, Option<CudaSlice<u8>>>,
    counter_bytes: usize,
}

impl Workspace {
    pub(crate) fn new() -> Workspace {
        Workspace(Mutex::new(None))
    }

    /// Locks the workspace for a launch of `kernel` that needs `counters` u32
    /// counters and `partials` partial states of `slot` bytes each, replacing
    /// it with a larger zeroed buffer first when it is too small.
    pub(crate) fn hold(
        &self,
        stream: &Arc<CudaStream>,
        counters: usize,
        partials: usize,
        slot: usize,
        kernel: &str,
    ) -> Result<Held<'_>> {
        let counter_bytes = (counters * 4).next_multiple_of(slot);
        let need = counter_bytes + partials * slot;
        let mut buffer = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if buffer.as_ref().is_none_or(|w| w.len() < need.max(1)) {
            let ws = stream
                .alloc_zeros::<u8>(need.max(slot))
                .during(|| format!("allocating the workspace of {kernel}"))?;
            *buffer = Some(ws);
        }
        Ok(Held {
            buffer,
            counter_bytes,
        })
    }
}

impl Held<'_> {
    /// The counters and the partials behind them: the kernel's two workspace
    /// arguments.
    pub(crate) fn split(&mut self) -> (CudaViewMut<'_, u8>, CudaViewMut<'_, u8>) {
        let Some(ws) = self.buffer.as_mut() else {
            unreachable!("hold allocated the workspace")
        };
        let at = self.counter_bytes.min(ws.len());
        ws.split_at_mut(at)
    }
}
