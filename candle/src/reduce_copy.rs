//! The mixed-precision reduce+copy step on tensors: `round(f32(x) + acc)` to
//! x's 16-bit type, to nearest or stochastically (Philox), as the update of
//! low-precision weights or the transport step of a quantized collective
//! runs it, on redjit's reduce_copy kernel.

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::CudaStorageSlice;
use candle_core::{CpuStorage, CudaStorage, CustomOp2, DType, Layout, Result, Shape, bail};
use half::{bf16, f16};
use redjit_runtime::{ReduceCopyArgs, ReduceCopySpec, Stochastic};

use crate::device::redjit;
use crate::error::wrap;

/// `round(f32(x) + acc)` as a custom op on (x, acc): x bf16 or f16, acc f32,
/// both contiguous (from any offset) and of one shape.
pub(crate) struct ReduceCopyOp {
    pub stochastic: Option<Stochastic>,
}

/// The kernel's spec: x the transport source, acc the f32 accumulator, one
/// destination of x's type, summed, rounded as asked.
pub(crate) fn spec(dtype: DType, stochastic: bool) -> Result<ReduceCopySpec> {
    let t = match dtype {
        DType::BF16 => "bf16",
        DType::F16 => "f16",
        d => bail!("reduce_copy: x must be bf16 or f16 (the transport type), not {d:?}"),
    };
    let r = if stochastic { "sr" } else { "rn" };
    format!("reduce_copy_u4_f32_{t}_TA_T_sum_{r}")
        .parse()
        .map_err(|e: redjit_runtime::SpecError| candle_core::Error::wrap(e))
}

impl ReduceCopyOp {
    fn launch<T: redjit_runtime::DeviceElem + candle_core::cuda_backend::CudaDType>(
        &self,
        x: (&CudaStorage, &Layout),
        acc: (&CudaStorage, &Layout),
    ) -> Result<(CudaStorage, Shape)> {
        let range = |(_, l): (&CudaStorage, &Layout), what: &str| match l.contiguous_offsets() {
            Some(r) => Ok(r),
            None => bail!(
                "reduce_copy: {what} (shape {:?}, strides {:?}) must be contiguous",
                l.dims(),
                l.stride()
            ),
        };
        let (xa, xb) = range(x, "x")?;
        let (aa, ab) = range(acc, "acc")?;
        let dev = &x.0.device;
        let spec = spec(x.0.dtype(), self.stochastic.is_some())?;
        let kernel = redjit(dev)?.reduce_copy(&spec)?;
        let xv = x.0.as_cuda_slice::<T>()?.slice(xa..xb);
        let av = acc.0.as_cuda_slice::<f32>()?.slice(aa..ab);
        // SAFETY: the kernel writes every element.
        let mut out = unsafe { dev.alloc::<T>(xb - xa)? };
        kernel
            .launch_with(
                &dev.cuda_stream(),
                &[&xv, &av],
                &mut [&mut out],
                ReduceCopyArgs {
                    scalar: None,
                    stochastic: self.stochastic,
                },
                Default::default(),
            )
            .map_err(wrap)?;
        Ok((
            CudaStorage::wrap_cuda_slice(out, dev.clone()),
            x.1.shape().clone(),
        ))
    }
}

impl CustomOp2 for ReduceCopyOp {
    fn name(&self) -> &'static str {
        "redjit-reduce-copy"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        bail!(
            "redjit-reduce-copy runs on CUDA tensors; redjit_candle::reduce_copy takes the CPU path itself"
        )
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        if !matches!(s2.slice, CudaStorageSlice::F32(_)) {
            bail!("reduce_copy: acc must be f32, not {:?}", s2.dtype());
        }
        match &s1.slice {
            CudaStorageSlice::BF16(_) => self.launch::<bf16>((s1, l1), (s2, l2)),
            CudaStorageSlice::F16(_) => self.launch::<f16>((s1, l1), (s2, l2)),
            _ => bail!("reduce_copy: x must be bf16 or f16, not {:?}", s1.dtype()),
        }
    }
}
