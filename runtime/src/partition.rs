//! SM partitions (green contexts), the thin `Result` layer cudarc 0.19 lacks:
//! the SMs a stream's work runs on, and a partition of the device with a
//! stream of its own.
//!
//! A stream of a green context runs its kernels on that context's SMs only, as
//! serving engines partition a GPU to run communication beside compute. A kernel
//! whose blocks wait on each other (the norm family's split rows) must plan for
//! the blocks those SMs hold, not the device's: planned for the whole device, a
//! row could take more blocks than the partition holds, and its blocks would
//! wait for ever on blocks that never start.
//!
//! ```no_run
//! use redjit_runtime::{Runtime, partition::SmPartition};
//! # fn main() -> Result<(), redjit_runtime::Error> {
//! let rt = Runtime::new(0)?;
//! let part = SmPartition::new(&rt, 32)?;
//! // Launch on part.stream(): the norm launchers plan for part.sm_count() SMs.
//! # Ok(()) }
//! ```

use std::mem::MaybeUninit;
use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream};
use redjit_codegen::SpecError;

use crate::device::DeviceInfo;
use crate::error::{DriverContext, Result};
use crate::runtime::Runtime;

/// The first driver with green contexts (CUDA 12.4).
const GREEN_CONTEXT_DRIVER: i32 = 12040;

/// SMs of the stream's green context, or the device's (`device.sm_count`) for
/// any other stream, and on a driver without green contexts.
pub fn stream_sm_count(stream: &CudaStream, device: &DeviceInfo) -> Result<u32> {
    if device.driver_version < GREEN_CONTEXT_DRIVER {
        return Ok(device.sm_count);
    }
    let mut green: sys::CUgreenCtx = std::ptr::null_mut();
    // SAFETY: a live stream of this device; out-pointer to a live handle.
    unsafe { sys::cuStreamGetGreenCtx(stream.cu_stream(), &mut green) }
        .result()
        .during(|| "cuStreamGetGreenCtx".into())?;
    if green.is_null() {
        return Ok(device.sm_count);
    }
    // SAFETY: `green` is the live green context the driver just named.
    let sms = unsafe { green_sm_count(green) }?;
    Ok(sms.clamp(1, device.sm_count))
}

/// SMs of a green context.
///
/// # Safety
/// `green` is a live green context.
unsafe fn green_sm_count(green: sys::CUgreenCtx) -> Result<u32> {
    let mut res = MaybeUninit::<sys::CUdevResource>::zeroed();
    // SAFETY: the caller's; out-pointer to a zeroed resource.
    unsafe {
        sys::cuGreenCtxGetDevResource(
            green,
            res.as_mut_ptr(),
            sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
        )
    }
    .result()
    .during(|| "cuGreenCtxGetDevResource(SM)".into())?;
    // SAFETY: the driver filled an SM resource, whose union member is `sm`.
    Ok(unsafe { res.assume_init().__bindgen_anon_1.sm.smCount })
}

/// A green context of some of the device's SMs and a stream on it, whose
/// kernels run on those SMs only; buffers of the runtime's context serve it
/// as they are.
pub struct SmPartition {
    green: sys::CUgreenCtx,
    stream: Arc<CudaStream>,
    sm_count: u32,
}

// SAFETY: the handles are the driver's, usable from any thread; the stream is
// cudarc's wrapper, itself Send and Sync.
unsafe impl Send for SmPartition {}
unsafe impl Sync for SmPartition {}

impl SmPartition {
    /// At least `sms` of the runtime's device's SMs (the driver rounds up to
    /// its partition granularity: [`sm_count`](Self::sm_count) says how many).
    pub fn new(rt: &Runtime, sms: u32) -> Result<SmPartition> {
        let dev = rt.device();
        if sms == 0 || sms > dev.sm_count {
            return Err(SpecError::Invalid {
                field: "sms",
                value: sms.to_string(),
                rule: format!(
                    "a partition of {} takes 1 to {} SMs",
                    dev.name, dev.sm_count
                ),
            }
            .into());
        }
        if dev.driver_version < GREEN_CONTEXT_DRIVER {
            return Err(SpecError::Invalid {
                field: "driver",
                value: dev.driver_version.to_string(),
                rule: "green contexts need a CUDA 12.4 driver (12040) or later".into(),
            }
            .into());
        }
        let ctx: &Arc<CudaContext> = rt.context();
        ctx.bind_to_thread()
            .during(|| "binding the runtime's context".into())?;
        let mut whole = MaybeUninit::<sys::CUdevResource>::zeroed();
        // SAFETY: the context's device; out-pointer to a zeroed resource.
        unsafe {
            sys::cuDeviceGetDevResource(
                ctx.cu_device(),
                whole.as_mut_ptr(),
                sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM,
            )
        }
        .result()
        .during(|| "cuDeviceGetDevResource(SM)".into())?;
        let mut part = MaybeUninit::<sys::CUdevResource>::zeroed();
        let mut rest = MaybeUninit::<sys::CUdevResource>::zeroed();
        let mut groups: std::ffi::c_uint = 1;
        // SAFETY: one group asked for, into one resource; the device's SMs as
        // the input, filled above.
        unsafe {
            sys::cuDevSmResourceSplitByCount(
                part.as_mut_ptr(),
                &mut groups,
                whole.as_ptr(),
                rest.as_mut_ptr(),
                0,
                sms,
            )
        }
        .result()
        .during(|| format!("cuDevSmResourceSplitByCount({sms} SMs)"))?;
        if groups != 1 {
            return Err(SpecError::Invalid {
                field: "sms",
                value: sms.to_string(),
                rule: format!("{} could not set apart one group of {sms} SMs", dev.name),
            }
            .into());
        }
        let mut desc: sys::CUdevResourceDesc = std::ptr::null_mut();
        // SAFETY: one resource, filled by the split.
        unsafe { sys::cuDevResourceGenerateDesc(&mut desc, part.as_mut_ptr(), 1) }
            .result()
            .during(|| "cuDevResourceGenerateDesc".into())?;
        let mut green: sys::CUgreenCtx = std::ptr::null_mut();
        // SAFETY: the descriptor just made, the context's device.
        unsafe {
            sys::cuGreenCtxCreate(
                &mut green,
                desc,
                ctx.cu_device(),
                sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM as std::ffi::c_uint,
            )
        }
        .result()
        .during(|| format!("cuGreenCtxCreate({sms} SMs)"))?;
        let mut raw: sys::CUstream = std::ptr::null_mut();
        // SAFETY: the green context just made; a green context's streams are
        // non-blocking.
        let made = unsafe {
            sys::cuGreenCtxStreamCreate(
                &mut raw,
                green,
                sys::CUstream_flags_enum::CU_STREAM_NON_BLOCKING as std::ffi::c_uint,
                0,
            )
        }
        .result()
        .during(|| "cuGreenCtxStreamCreate".into());
        let sm_count = made.and_then(|()| {
            // SAFETY: the green context just made.
            unsafe { green_sm_count(green) }
        });
        let sm_count = match sm_count {
            Ok(n) => n,
            Err(e) => {
                // SAFETY: made above, never shared.
                unsafe {
                    if !raw.is_null() {
                        sys::cuStreamDestroy_v2(raw);
                    }
                    sys::cuGreenCtxDestroy(green);
                }
                return Err(e);
            }
        };
        // SAFETY: the stream belongs to a green context of this context's
        // device, whose memory it shares; `Drop` destroys it only when no
        // clone of the wrapper is left.
        let stream = unsafe { ctx.wrap_borrowed_stream(raw) };
        Ok(SmPartition {
            green,
            stream,
            sm_count,
        })
    }

    /// The partition's stream: its kernels run on the partition's SMs.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// SMs of the partition.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }
}

impl Drop for SmPartition {
    fn drop(&mut self) {
        // A clone of the stream's wrapper may still be used: then the stream
        // and its context stay (leaked), never destroyed under it.
        if Arc::strong_count(&self.stream) > 1 {
            return;
        }
        let raw = self.stream.cu_stream();
        // SAFETY: no other wrapper of the stream is left; the stream's work
        // finishes before it and its green context are destroyed.
        unsafe {
            sys::cuStreamSynchronize(raw);
            sys::cuStreamDestroy_v2(raw);
            sys::cuGreenCtxDestroy(self.green);
        }
    }
}
