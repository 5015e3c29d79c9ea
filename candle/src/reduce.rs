//! Reductions over the last dimension and over the whole tensor as candle
//! custom ops on redjit's reduce kernels (laid out by the device's tuning
//! table): sum, max, min, argmax, mean and (sample) variance.

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::CudaView;
use candle_core::cuda_backend::{CudaDType, CudaStorageSlice};
use candle_core::{CpuStorage, CudaStorage, CustomOp1, Layout, Result, Shape, bail};
use half::{bf16, f16};
use redjit_runtime::{DType as RjType, DeviceElem, ReduceAxis, ReduceOp, ReduceSpec};

use crate::device::redjit;
use crate::error::wrap;
use crate::rows::Rows;

/// A reduction, as candle names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    /// Sum of the elements.
    Sum,
    /// Largest element (NaN if any is NaN).
    Max,
    /// Smallest element (NaN if any is NaN).
    Min,
    /// Index of the largest element (the first of equals).
    ArgMax,
    /// Mean of the elements.
    Mean,
    /// Sample variance (divided by n - 1), as candle's `var`.
    Var,
}

impl Reduction {
    /// redjit's kernel for this reduction of each row (`whole: false`) or of
    /// the whole tensor, of `input` elements, accumulated in f32.
    pub fn spec(self, input: RjType, whole: bool) -> ReduceSpec {
        ReduceSpec {
            axis: if whole {
                ReduceAxis::All
            } else {
                ReduceAxis::Rows
            },
            op: self.op(),
            input,
            accum: RjType::F32,
            warp_per_row: false,
            cluster: false,
            split_rows: false,
            strategy: None,
        }
    }

    fn op(self) -> ReduceOp {
        match self {
            Reduction::Sum => ReduceOp::Sum,
            Reduction::Max => ReduceOp::Max,
            Reduction::Min => ReduceOp::Min,
            Reduction::ArgMax => ReduceOp::ArgMax,
            Reduction::Mean => ReduceOp::Mean,
            Reduction::Var => ReduceOp::VarSamp,
        }
    }

    fn name(self, whole: bool) -> &'static str {
        match (self, whole) {
            (Reduction::Sum, false) => "redjit-sum-last-dim",
            (Reduction::Max, false) => "redjit-max-last-dim",
            (Reduction::Min, false) => "redjit-min-last-dim",
            (Reduction::ArgMax, false) => "redjit-argmax-last-dim",
            (Reduction::Mean, false) => "redjit-mean-last-dim",
            (Reduction::Var, false) => "redjit-var-last-dim",
            (Reduction::Sum, true) => "redjit-sum-all",
            (Reduction::Max, true) => "redjit-max-all",
            (Reduction::Min, true) => "redjit-min-all",
            (Reduction::ArgMax, true) => "redjit-argmax-all",
            (Reduction::Mean, true) => "redjit-mean-all",
            (Reduction::Var, true) => "redjit-var-all",
        }
    }
}

/// One reduction as a candle custom op: of each row of the last dimension
/// (`whole: false`, the result keeps the dimension, of size 1) or of the
/// whole tensor (a scalar, from a contiguous tensor). Results are f32 (i64 for
/// argmax), redjit's accumulator and index types.
pub(crate) struct ReduceOp1 {
    pub reduction: Reduction,
    pub whole: bool,
}

impl ReduceOp1 {
    fn launch<T: DeviceElem + CudaDType>(
        &self,
        s: &CudaStorage,
        l: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        let name = self.reduction.name(self.whole);
        let dev = &s.device;
        let rj = redjit(dev)?;
        let spec = self.reduction.spec(T::DTYPE, self.whole);
        let kernel = rj.reduce(&spec)?;
        let slice = s.as_cuda_slice::<T>()?;
        let stream = dev.cuda_stream();
        let (view, matrix, shape): (CudaView<'_, T>, _, Shape) = if self.whole {
            let Some((a, b)) = l.contiguous_offsets() else {
                bail!(
                    "{name}: the tensor must be contiguous (shape {:?}, strides {:?})",
                    l.dims(),
                    l.stride()
                );
            };
            (slice.slice(a..b), None, Shape::from(()))
        } else {
            let Some(r) = Rows::of(l) else {
                bail!(
                    "{name}: the rows of the tensor (shape {:?}, strides {:?}) are not evenly spaced; make it contiguous first",
                    l.dims(),
                    l.stride()
                );
            };
            let mut dims = l.dims().to_vec();
            if let Some(last) = dims.last_mut() {
                *last = 1;
            }
            (
                slice.slice(r.offset..r.offset + r.extent()),
                Some(r.matrix),
                Shape::from(dims),
            )
        };
        let results = matrix.map_or(1, |m| m.rows);
        let launch = |out: &mut dyn redjit_runtime::ReduceOutput| -> Result<()> {
            match matrix {
                Some(m) => kernel.launch_matrix(&stream, &[&view], m, out),
                None => kernel.launch(&stream, &[&view], out),
            }
            .map_err(wrap)
        };
        let slice = if self.reduction == Reduction::ArgMax {
            // SAFETY: the kernel writes every result.
            let mut out = unsafe { dev.alloc::<i64>(results)? };
            launch(&mut out)?;
            CudaStorage::wrap_cuda_slice(out, dev.clone())
        } else {
            // SAFETY: as above.
            let mut out = unsafe { dev.alloc::<f32>(results)? };
            launch(&mut out)?;
            CudaStorage::wrap_cuda_slice(out, dev.clone())
        };
        Ok((slice, shape))
    }
}

impl CustomOp1 for ReduceOp1 {
    fn name(&self) -> &'static str {
        self.reduction.name(self.whole)
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        bail!(
            "{} runs on CUDA tensors; redjit_candle's functions send other tensors to candle's own op",
            self.reduction.name(self.whole)
        )
    }

    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> Result<(CudaStorage, Shape)> {
        match &s.slice {
            CudaStorageSlice::F32(_) => self.launch::<f32>(s, l),
            CudaStorageSlice::BF16(_) => self.launch::<bf16>(s, l),
            CudaStorageSlice::F16(_) => self.launch::<f16>(s, l),
            _ => bail!(
                "{}: redjit's reductions here take f32, bf16 and f16, not {:?}",
                self.reduction.name(self.whole),
                s.dtype()
            ),
        }
    }
}
