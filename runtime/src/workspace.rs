//! The device scratch a reduce or norm kernel object keeps between launches:
//! u32 counters, rounded up to a whole partial slot, then the partial states.
//!
//! One buffer per stream the kernel object is launched on, allocated zeroed and
//! grown on demand; every launch leaves its counters as the next one expects
//! them (the last block to finish resets them to zero; a split norm kernel of
//! flagged states advances its epoch, and its zeroed slots never match a flag). The
//! counters' size follows the call (the counted split norm rows take two a row), so a
//! call with more counters than the last one finds partial states where its
//! extra counters go: those bytes, and only those, are zeroed before it. The kernel
//! gets the buffer's raw addresses, not a tracked cudarc slice: with one buffer
//! per stream the stream itself orders every use, and a replaced buffer is freed
//! stream-ordered on that same stream, after the launches that used it. Tracked
//! slices would cost two event waits and two event records per launch (driver
//! calls, about a microsecond of host time each pair) to order what the stream
//! already orders.

use std::sync::{Arc, Mutex, MutexGuard};

use cudarc::driver::{CudaStream, result, sys};

use crate::error::{DriverContext, Result};

/// A kernel object's counters-then-partials scratch buffers, one per stream.
pub(crate) struct Workspace(Mutex<Vec<StreamScratch>>);

/// `len` bytes of device memory allocated on one stream and freed on it,
/// stream-ordered, when dropped: after the launches queued with it.
pub(crate) struct StreamAlloc {
    stream: Arc<CudaStream>,
    pub(crate) ptr: sys::CUdeviceptr,
    pub(crate) len: usize,
}

impl StreamAlloc {
    /// `len` bytes (uninitialised) on `stream`, its context bound first.
    pub(crate) fn new(
        stream: &Arc<CudaStream>,
        len: usize,
    ) -> Result<StreamAlloc, result::DriverError> {
        stream.context().bind_to_thread()?;
        // SAFETY: a fresh allocation on `stream`; whoever queues work on it
        // after this call is ordered after the allocation.
        let ptr = unsafe { result::malloc_async(stream.cu_stream(), len) }?;
        Ok(StreamAlloc {
            stream: stream.clone(),
            ptr,
            len,
        })
    }
}

impl Drop for StreamAlloc {
    fn drop(&mut self) {
        // Stream-ordered: launches already queued on the stream finish first.
        // A failure here (a context already torn down) leaves nothing to free.
        if self.stream.context().bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from `malloc_async` on this stream and is freed once.
            let _ = unsafe { result::free_async(self.ptr, self.stream.cu_stream()) };
        }
    }
}

/// A zeroed-on-allocation device buffer used on one stream only.
struct StreamScratch {
    buf: StreamAlloc,
    /// Leading bytes that hold counters as the last launch left them (all of
    /// a fresh buffer); past them lie its partial states.
    counters_at_rest: usize,
}

/// The workspace of one stream, locked for one launch and large enough for it.
pub(crate) struct Held<'a> {
    _guard: MutexGuard<'a, Vec<StreamScratch>>,
    ptr: sys::CUdeviceptr,
    counter_bytes: usize,
}

impl Workspace {
    pub(crate) fn new() -> Workspace {
        Workspace(Mutex::new(Vec::new()))
    }

    /// Locks the workspace for a launch of `kernel` on `stream` that needs
    /// `counters` u32 counters and `partials` partial states of `slot` bytes
    /// each, replacing the stream's buffer with a larger zeroed one first when
    /// it is too small.
    pub(crate) fn hold(
        &self,
        stream: &Arc<CudaStream>,
        counters: usize,
        partials: usize,
        slot: usize,
        kernel: &str,
    ) -> Result<Held<'_>> {
        let counter_bytes = (counters * 4).next_multiple_of(slot);
        let need = (counter_bytes + partials * slot).max(slot).max(1);
        let mut all = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let at = all
            .iter()
            .position(|s| s.buf.stream.cu_stream() == stream.cu_stream());
        let i = match at {
            Some(i) if all[i].buf.len >= need => i,
            _ => {
                let fresh = zeroed(stream, need)
                    .during(|| format!("allocating the workspace of {kernel}"))?;
                match at {
                    Some(i) => {
                        all[i] = fresh;
                        i
                    }
                    None => {
                        all.push(fresh);
                        all.len() - 1
                    }
                }
            }
        };
        let scratch = &mut all[i];
        let ptr = scratch.buf.ptr;
        if counter_bytes > scratch.counters_at_rest {
            let rest = scratch.counters_at_rest;
            stream
                .context()
                .bind_to_thread()
                .during(|| format!("zeroing the counters of {kernel}"))?;
            // SAFETY: [rest, counter_bytes) lies inside the buffer's `len` bytes
            // (counter_bytes <= need <= len), zeroed on the stream of the launch
            // that follows.
            unsafe {
                result::memset_d8_async(
                    ptr + rest as u64,
                    0,
                    counter_bytes - rest,
                    stream.cu_stream(),
                )
            }
            .during(|| format!("zeroing the counters of {kernel}"))?;
        }
        // The launch leaves counters up to here and its partial states past them.
        scratch.counters_at_rest = counter_bytes;
        Ok(Held {
            _guard: all,
            ptr,
            counter_bytes,
        })
    }
}

fn zeroed(stream: &Arc<CudaStream>, len: usize) -> Result<StreamScratch, result::DriverError> {
    let buf = StreamAlloc::new(stream, len)?;
    // SAFETY: `buf` holds `len` bytes, zeroed on its stream before any launch
    // that is queued after it can read it.
    unsafe { result::memset_d8_async(buf.ptr, 0, len, stream.cu_stream()) }?;
    Ok(StreamScratch {
        buf,
        counters_at_rest: len,
    })
}

impl Held<'_> {
    /// The device addresses of the counters and of the partials behind them:
    /// the kernel's two workspace arguments.
    pub(crate) fn addresses(&self) -> (u64, u64) {
        (self.ptr, self.ptr + self.counter_bytes as u64)
    }
}
