//! A device copy of a buffer, made on one stream for one launch and freed on
//! that stream after it: what an in-place call runs from where its kernel may
//! not read a row after writing it (`NormInPlace`).

use std::sync::Arc;

use cudarc::driver::{CudaStream, LaunchArgs, PushKernelArg, result};
use redjit_codegen::DType;

use crate::elem::KernelInput;
use crate::error::{DriverContext, Result};
use crate::workspace::StreamAlloc;

/// The first `len` elements of a buffer as they were when the copy was queued.
pub(crate) struct StreamCopy {
    buf: StreamAlloc,
    dtype: DType,
    len: usize,
}

impl StreamCopy {
    /// Queues a copy of the `len` elements of `dtype` at `from` on `stream`.
    /// The caller has bound the source to the launch that reads the copy
    /// (the stream waits for the source's pending writes, and the launch's
    /// access is recorded after it).
    pub(crate) fn of(
        stream: &Arc<CudaStream>,
        from: u64,
        dtype: DType,
        len: usize,
        what: &str,
    ) -> Result<StreamCopy> {
        let bytes = (len * dtype.info().bytes as usize).max(1);
        let copy = StreamCopy {
            buf: StreamAlloc::new(stream, bytes)
                .during(|| format!("allocating a copy of {what}"))?,
            dtype,
            len,
        };
        // SAFETY: the source holds `len` elements (the caller's bound buffer,
        // `len` at most its length) and the copy `bytes`, on the stream's
        // context (bound by the allocation).
        unsafe { result::memcpy_dtod_async(copy.buf.ptr, from, bytes, stream.cu_stream()) }
            .during(|| format!("copying {what}"))?;
        Ok(copy)
    }
}

// SAFETY: `buf` holds `len` elements of `dtype` on the stream's context,
// readable until the copy is dropped, which frees it stream-ordered after the
// work queued with it (`StreamAlloc`).
unsafe impl KernelInput for StreamCopy {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push_input<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        args.arg(&self.buf.ptr);
    }
    fn address(&self, _stream: &CudaStream) -> u64 {
        self.buf.ptr
    }
}
