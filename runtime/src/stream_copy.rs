//! A device copy of a buffer, made on one stream for one launch and freed on
//! that stream after it: what an in-place call runs from where its kernel may
//! not read a row after writing it (`NormInPlace`).

use std::sync::Arc;

use cudarc::driver::{CudaStream, LaunchArgs, PushKernelArg, result, sys};
use redjit_codegen::DType;

use crate::elem::{KernelInput, KernelOutput};
use crate::error::{DriverContext, Result};

/// The first `len` elements of a buffer as they were when the copy was queued.
pub(crate) struct StreamCopy {
    stream: Arc<CudaStream>,
    ptr: sys::CUdeviceptr,
    dtype: DType,
    len: usize,
}

impl StreamCopy {
    /// Queues a copy of `src`'s first `len` elements (at most its length) on
    /// `stream`, after the buffer's pending work.
    pub(crate) fn of(
        stream: &Arc<CudaStream>,
        src: &mut dyn KernelOutput,
        len: usize,
        what: &str,
    ) -> Result<StreamCopy> {
        let len = len.min(src.len());
        let dtype = src.dtype();
        let bytes = (len * dtype.info().bytes as usize).max(1);
        stream
            .context()
            .bind_to_thread()
            .during(|| format!("copying {what}"))?;
        // SAFETY: a fresh allocation on `stream`, filled on the same stream
        // before any launch queued after it reads it.
        let ptr = unsafe { result::malloc_async(stream.cu_stream(), bytes) }
            .during(|| format!("allocating a copy of {what}"))?;
        let copy = StreamCopy {
            stream: stream.clone(),
            ptr,
            dtype,
            len,
        };
        // The guard orders the copy after the buffer's pending writes (and is
        // recorded as a write: the launch that follows writes it).
        let (from, _order) = src.write_address(stream);
        // SAFETY: both hold at least `bytes` bytes (`len` is at most the
        // source's length), on the stream's context.
        unsafe { result::memcpy_dtod_async(ptr, from, bytes, stream.cu_stream()) }
            .during(|| format!("copying {what}"))?;
        Ok(copy)
    }
}

// SAFETY: `ptr` holds `len` elements of `dtype` on the stream's context,
// readable until the copy is dropped, which frees it stream-ordered after the
// work queued with it.
unsafe impl KernelInput for StreamCopy {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push_input<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        args.arg(&self.ptr);
    }
    fn address(&self, _stream: &CudaStream) -> u64 {
        self.ptr
    }
}

impl Drop for StreamCopy {
    fn drop(&mut self) {
        // Stream-ordered: the launch queued with it finishes first. A failure
        // here (a context already torn down) leaves nothing to free.
        if self.stream.context().bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from `malloc_async` on this stream and is freed once.
            let _ = unsafe { result::free_async(self.ptr, self.stream.cu_stream()) };
        }
    }
}
