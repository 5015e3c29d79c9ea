//! Peer access and CUDA IPC, the thin `Result` layer cudarc 0.19 lacks (it has
//! only the raw `sys` calls), in cudarc's style: each function is one driver
//! call (or a short fixed sequence) with its safety contract stated once.
//!
//! ```no_run
//! use redjit_runtime::peer;
//! # fn main() -> Result<(), redjit_runtime::Error> {
//! let a = cudarc::driver::CudaContext::new(0).map_err(|e| redjit_runtime::Error::NoGpu(e.to_string()))?;
//! let b = cudarc::driver::CudaContext::new(1).map_err(|e| redjit_runtime::Error::NoGpu(e.to_string()))?;
//! // Enables access both ways, then proves it with a real write and read.
//! peer::enable_and_prove(&a, &b)?;
//! # Ok(()) }
//! ```
//!
//! Why a proof: `cuDeviceCanAccessPeer` has said yes on machines where peer
//! writes then failed or were silently lost (vLLM PR #4992, TensorRT-LLM PR
//! #17034), so a communicator trusts peer access only after a kernel-free copy
//! of a known pattern from one device's memory into the other's reads back
//! intact.

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, DevicePtr};

use crate::error::{DriverContext, Error, Result};

/// Whether `from` can map `to`'s memory, as the driver claims it.
pub fn can_access_peer(from: &CudaContext, to: &CudaContext) -> Result<bool> {
    let mut can = 0;
    // SAFETY: out-pointer to a live i32; both devices come from live contexts.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) }
        .result()
        .during(|| {
            format!(
                "cuDeviceCanAccessPeer({} -> {})",
                from.ordinal(),
                to.ordinal()
            )
        })?;
    Ok(can != 0)
}

/// Lets `from`'s kernels access `to`'s allocations. Already enabled is fine.
pub fn enable_peer_access(from: &CudaContext, to: &CudaContext) -> Result<()> {
    from.bind_to_thread()
        .during(|| format!("binding the context of device {}", from.ordinal()))?;
    // SAFETY: `from` is current on this thread; `to` is a live context.
    let r = unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) };
    match r {
        sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
            Ok(())
        }
        other => other.result().during(|| {
            format!(
                "cuCtxEnablePeerAccess({} -> {})",
                from.ordinal(),
                to.ordinal()
            )
        }),
    }
}

/// Enables access both ways and proves it: a pattern written on `a` is copied
/// device to device into `b`'s memory and back, and must read back unchanged.
pub fn enable_and_prove(a: &Arc<CudaContext>, b: &Arc<CudaContext>) -> Result<()> {
    for (x, y) in [(a, b), (b, a)] {
        if !can_access_peer(x, y)? {
            return Err(Error::Comm {
                what: "peer access".into(),
                rule: format!(
                    "device {} cannot access device {} (cuDeviceCanAccessPeer); use the NCCL backend",
                    x.ordinal(),
                    y.ordinal()
                ),
            });
        }
        enable_peer_access(x, y)?;
    }
    let pattern: Vec<u32> = (0..1024u32)
        .map(|i| i.wrapping_mul(0x9E37_79B9) ^ 0x5eed)
        .collect();
    let sa = a.default_stream();
    let sb = b.default_stream();
    let src = sa
        .clone_htod(&pattern)
        .during(|| "peer proof upload".into())?;
    let mut mid = sb
        .alloc_zeros::<u32>(pattern.len())
        .during(|| "peer proof allocation".into())?;
    let mut back = sa
        .alloc_zeros::<u32>(pattern.len())
        .during(|| "peer proof allocation".into())?;
    let bytes = pattern.len() * 4;
    {
        let (s, _gs) = src.device_ptr(&sa);
        let (m, _gm) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut mid, &sb);
        // SAFETY: both ranges are live allocations of `bytes` bytes in their
        // contexts; the copy is synchronous.
        unsafe { sys::cuMemcpyPeer(m, b.cu_ctx(), s, a.cu_ctx(), bytes) }
            .result()
            .during(|| "peer proof copy a -> b".into())?;
    }
    {
        let (m, _gm) = mid.device_ptr(&sb);
        let (k, _gk) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut back, &sa);
        // SAFETY: as above.
        unsafe { sys::cuMemcpyPeer(k, a.cu_ctx(), m, b.cu_ctx(), bytes) }
            .result()
            .during(|| "peer proof copy b -> a".into())?;
    }
    let got = sa
        .clone_dtoh(&back)
        .during(|| "peer proof readback".into())?;
    if got != pattern {
        return Err(Error::Comm {
            what: "peer access".into(),
            rule: format!(
                "devices {} and {} claim peer access but a peer copy came back changed",
                a.ordinal(),
                b.ordinal()
            ),
        });
    }
    Ok(())
}

/// An opaque CUDA IPC handle of a device allocation: 64 bytes to send to another
/// process of the same host.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct IpcHandle(pub [u8; 64]);

impl std::fmt::Debug for IpcHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IpcHandle({:02x?}..)", &self.0[..8])
    }
}

/// Whether the allocation holding `ptr` can be shared with `cuIpcGetMemHandle`
/// (virtual-memory-management allocations cannot: vLLM issue #42609); the
/// communicator stages such buffers through its own registered memory.
pub fn is_legacy_ipc_capable(ptr: sys::CUdeviceptr) -> Result<bool> {
    let mut v: u32 = 0;
    // SAFETY: the attribute is a 32-bit boolean written to a live u32.
    unsafe {
        sys::cuPointerGetAttribute(
            (&mut v as *mut u32).cast(),
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
            ptr,
        )
    }
    .result()
    .during(|| format!("cuPointerGetAttribute(IS_LEGACY_CUDA_IPC_CAPABLE, {ptr:#x})"))?;
    Ok(v != 0)
}

/// The IPC handle of the allocation that starts at `ptr` (the context that owns
/// it must be current).
pub fn get_mem_handle(ptr: sys::CUdeviceptr) -> Result<IpcHandle> {
    if !is_legacy_ipc_capable(ptr)? {
        return Err(Error::Comm {
            what: "IPC handle".into(),
            rule: format!(
                "the allocation at {ptr:#x} is not legacy-IPC capable (a virtual-memory allocation?); register a buffer from cuMemAlloc or let the communicator stage it"
            ),
        });
    }
    let mut h = sys::CUipcMemHandle { reserved: [0; 64] };
    // SAFETY: out-pointer to a live handle; `ptr` was checked to be a device
    // allocation by the attribute query above.
    unsafe { sys::cuIpcGetMemHandle(&mut h, ptr) }
        .result()
        .during(|| format!("cuIpcGetMemHandle({ptr:#x})"))?;
    Ok(IpcHandle(h.reserved.map(|c| c as u8)))
}

/// A peer process's allocation, mapped into this context; unmapped on drop.
#[derive(Debug)]
pub struct OpenedIpc {
    ptr: sys::CUdeviceptr,
    ctx: Arc<CudaContext>,
}

impl OpenedIpc {
    /// Maps the allocation behind `handle` into `ctx` (peer access enabled lazily
    /// by the driver).
    pub fn open(ctx: &Arc<CudaContext>, handle: &IpcHandle) -> Result<OpenedIpc> {
        ctx.bind_to_thread()
            .during(|| "binding the context to open an IPC handle".into())?;
        let h = sys::CUipcMemHandle {
            reserved: handle.0.map(|b| b as _),
        };
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer to a live CUdeviceptr; the context is current.
        unsafe {
            sys::cuIpcOpenMemHandle_v2(
                &mut ptr,
                h,
                sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32,
            )
        }
        .result()
        .during(|| format!("cuIpcOpenMemHandle({handle:?})"))?;
        Ok(OpenedIpc {
            ptr,
            ctx: ctx.clone(),
        })
    }

    /// The mapped address in this process.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }
}

impl Drop for OpenedIpc {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from cuIpcOpenMemHandle in this context and is
            // closed once. A failure here cannot be returned; the mapping is
            // released with the context anyway.
            let _ = unsafe { sys::cuIpcCloseMemHandle(self.ptr) };
        }
    }
}

/// A device allocation from `cuMemAlloc`, zeroed, freed on drop: what the
/// communicator registers. cudarc's `alloc_zeros` takes memory from the
/// stream-ordered pool (`cuMemAllocAsync`) on devices that have one, and pool
/// memory is neither legacy-IPC capable (`cuIpcGetMemHandle` refuses it) nor
/// covered by `cuCtxEnablePeerAccess` (it needs `cuMemPoolSetAccess`).
#[derive(Debug)]
pub struct LegacyAlloc {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

impl LegacyAlloc {
    /// Allocates `bytes` (at least 1) on `ctx`'s device and zeroes them
    /// synchronously.
    pub fn zeroed(ctx: &Arc<CudaContext>, bytes: usize) -> Result<LegacyAlloc> {
        ctx.bind_to_thread()
            .during(|| "binding the context to allocate".into())?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: out-pointer to a live CUdeviceptr; the context is current.
        unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes.max(1)) }
            .result()
            .during(|| format!("cuMemAlloc({bytes})"))?;
        let a = LegacyAlloc {
            ptr,
            bytes,
            ctx: ctx.clone(),
        };
        // SAFETY: `ptr` holds `bytes` bytes; the memset is synchronous.
        unsafe { sys::cuMemsetD8_v2(ptr, 0, bytes) }
            .result()
            .during(|| format!("zeroing {bytes} bytes at {ptr:#x}"))?;
        Ok(a)
    }

    /// Zeroes the allocation in `stream`'s order (the caller synchronises).
    pub fn zero_async(&self, stream: &cudarc::driver::CudaStream) -> Result<()> {
        // SAFETY: `ptr` holds `bytes` bytes of this allocation, alive while self is.
        unsafe { sys::cuMemsetD8Async(self.ptr, 0, self.bytes, stream.cu_stream()) }
            .result()
            .during(|| format!("zeroing {} bytes at {:#x}", self.bytes, self.ptr))
    }

    /// The device address.
    pub fn ptr(&self) -> sys::CUdeviceptr {
        self.ptr
    }

    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for LegacyAlloc {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from cuMemAlloc in this context and is freed
            // once; cuMemFree waits for work that still uses it. A failure cannot
            // be returned here; the memory goes with the context anyway.
            let _ = unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}
