//! Typed device buffers for the launchers `#[reduce_copy]` generates: a
//! parameter written `x: &[bf16]` takes any `&impl SrcBuffer<bf16>`, so a buffer
//! of the wrong element type is a compile error at the call.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use redjit_runtime::{DeviceElem, KernelInput, KernelOutput};

/// A device buffer of `T` a kernel reads: `CudaSlice<T>` or `CudaView<T>`.
pub trait SrcBuffer<T: DeviceElem>: KernelInput {}

impl<T: DeviceElem> SrcBuffer<T> for CudaSlice<T> {}
impl<T: DeviceElem> SrcBuffer<T> for CudaView<'_, T> {}

/// A device buffer of `T` a kernel writes: `CudaSlice<T>` or `CudaViewMut<T>`.
pub trait DstBuffer<T: DeviceElem>: KernelOutput {}

impl<T: DeviceElem> DstBuffer<T> for CudaSlice<T> {}
impl<T: DeviceElem> DstBuffer<T> for CudaViewMut<'_, T> {}
