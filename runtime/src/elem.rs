//! Host element types and the device buffers a launcher accepts.
//!
//! ```
//! use redjit_runtime::{DType, DeviceElem};
//!
//! assert_eq!(<half::bf16 as DeviceElem>::DTYPE, DType::BF16);
//! assert_eq!(<f32 as DeviceElem>::DTYPE, DType::F32);
//! assert_eq!(<i8 as DeviceElem>::DTYPE, DType::I8);
//! assert_eq!(<redjit_runtime::F8E4M3 as DeviceElem>::DTYPE, DType::E4M3);
//! ```

use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceRepr, DeviceSlice,
    LaunchArgs, PushKernelArg, SyncOnDrop,
};
use redjit_codegen::DType;

/// A host type with a redjit dtype.
pub trait DeviceElem: DeviceRepr + Copy + Send + Sync + 'static {
    /// The registry dtype of this host type.
    const DTYPE: DType;
}

impl DeviceElem for f32 {
    const DTYPE: DType = DType::F32;
}
impl DeviceElem for half::bf16 {
    const DTYPE: DType = DType::BF16;
}
impl DeviceElem for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl DeviceElem for crate::fp8::F8E4M3 {
    const DTYPE: DType = DType::E4M3;
}
impl DeviceElem for crate::fp8::F8E5M2 {
    const DTYPE: DType = DType::E5M2;
}
impl DeviceElem for i8 {
    const DTYPE: DType = DType::I8;
}

/// A device buffer a kernel reads: `CudaSlice<T>` or `CudaView<T>`.
///
/// # Safety
///
/// Launchers trust the buffer's description: they check a call against
/// [`dtype`](KernelInput::dtype) and [`len`](KernelInput::len) and then hand
/// the kernel the pointer that [`push_input`](KernelInput::push_input) pushes
/// (or that [`address`](KernelInput::address) / `read_address` return). An
/// implementation must push and return the address of `len()` elements of
/// `dtype()` in device memory of the stream's context, readable until the
/// work issued on the stream with it completes. A wrong length or dtype lets a
/// kernel read out of bounds; hence `unsafe impl`.
pub unsafe trait KernelInput {
    /// The element type.
    fn dtype(&self) -> DType;
    /// Number of elements.
    fn len(&self) -> usize;
    /// No elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pushes the device pointer (with cudarc's stream tracking for reads).
    fn push_input<'a>(&'a self, args: &mut LaunchArgs<'a>);
    /// The device address of the first element (for the alignment check).
    fn address(&self, stream: &CudaStream) -> u64;
    /// The address for work that takes it raw (the all-reduce, NCCL), with
    /// cudarc's ordering for a read: `stream` waits for the buffer's last
    /// write, and the guard records the read when dropped, which must come
    /// after the work is issued (before it, a later writer on another stream
    /// would not wait for the work). By default the bare address: a buffer
    /// that cudarc does not track has nothing to order.
    fn read_address<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (self.address(stream), SyncOnDrop::Record(None))
    }
}

/// A device buffer a kernel writes: `CudaSlice<T>` or `CudaViewMut<T>`.
///
/// # Safety
///
/// As for [`KernelInput`], for writes: an implementation must push and return
/// the address of `len()` elements of `dtype()` that the work issued on the
/// stream with it may write, and nothing else may read or write them until
/// that work completes.
pub unsafe trait KernelOutput {
    /// The element type.
    fn dtype(&self) -> DType;
    /// Number of elements.
    fn len(&self) -> usize;
    /// No elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pushes the device pointer (with cudarc's stream tracking for writes).
    fn push_output<'a>(&'a mut self, args: &mut LaunchArgs<'a>);
    /// The device address of the first element (for the alignment check).
    fn address(&self, stream: &CudaStream) -> u64;
    /// The address for work that takes it raw, with cudarc's ordering for a
    /// write: `stream` waits for the buffer's last reads and write, and the
    /// guard records the write when dropped, after the work is issued. By
    /// default the bare address, as for [`KernelInput::read_address`].
    fn write_address<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        (self.address(stream), SyncOnDrop::Record(None))
    }
}

macro_rules! impl_input {
    ($($ty:ty),*) => {$(
        // SAFETY: cudarc's buffers push their own pointer, and their length
        // and element type are what they were allocated with.
        unsafe impl<T: DeviceElem> KernelInput for $ty {
            fn dtype(&self) -> DType {
                T::DTYPE
            }
            fn len(&self) -> usize {
                DeviceSlice::len(self)
            }
            fn push_input<'a>(&'a self, args: &mut LaunchArgs<'a>) {
                args.arg(self);
            }
            fn address(&self, stream: &CudaStream) -> u64 {
                DevicePtr::device_ptr(self, stream).0
            }
            fn read_address<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
                DevicePtr::device_ptr(self, stream)
            }
        }
    )*};
}
impl_input!(CudaSlice<T>, CudaView<'_, T>);

macro_rules! impl_output {
    ($($ty:ty),*) => {$(
        // SAFETY: as for the inputs; `&mut self` keeps other users off.
        unsafe impl<T: DeviceElem> KernelOutput for $ty {
            fn dtype(&self) -> DType {
                T::DTYPE
            }
            fn len(&self) -> usize {
                DeviceSlice::len(self)
            }
            fn push_output<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
                args.arg(self);
            }
            fn address(&self, stream: &CudaStream) -> u64 {
                DevicePtr::device_ptr(self, stream).0
            }
            fn write_address<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
                DevicePtrMut::device_ptr_mut(self, stream)
            }
        }
    )*};
}
impl_output!(CudaSlice<T>, CudaViewMut<'_, T>);
