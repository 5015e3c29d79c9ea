//! Softmax, log-softmax, RMS norm and layer norm over the last dimension, and
//! the norms with a fused residual add, as candle custom ops on redjit's norm
//! kernels (laid out by the device's tuning table).

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::CudaView;
use candle_core::cuda_backend::{CudaDType, CudaStorageSlice};
use candle_core::{
    CpuStorage, CudaStorage, CustomOp1, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor, bail,
};
use half::{bf16, f16};
use redjit_runtime::{DeviceElem, NormArgs, NormOp, SoftmaxAlgo};

use crate::device::redjit;
use crate::error::wrap;
use crate::rows::Rows;

/// What a [`RowOp`] computes over each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Softmax,
    LogSoftmax,
    RmsNorm,
    LayerNorm,
}

impl Kind {
    fn name(self, residual: bool) -> &'static str {
        match (self, residual) {
            (Kind::Softmax, _) => "redjit-softmax-last-dim",
            (Kind::LogSoftmax, _) => "redjit-log-softmax-last-dim",
            (Kind::RmsNorm, false) => "redjit-rms-norm",
            (Kind::RmsNorm, true) => "redjit-add-rms-norm",
            (Kind::LayerNorm, false) => "redjit-layer-norm",
            (Kind::LayerNorm, true) => "redjit-add-layer-norm",
        }
    }

    /// redjit's op; the safe softmax, the faster of the two at the LLM shapes
    /// on the H200 (`benchmarks/h200/bench-norm.json`).
    fn op(self) -> (NormOp, Option<SoftmaxAlgo>) {
        match self {
            Kind::Softmax => (NormOp::Softmax, Some(SoftmaxAlgo::Safe)),
            Kind::LogSoftmax => (NormOp::LogSoftmax, Some(SoftmaxAlgo::Safe)),
            Kind::RmsNorm => (NormOp::RmsNorm, None),
            Kind::LayerNorm => (NormOp::LayerNorm, None),
        }
    }
}

/// One row operation as a candle custom op. Its tensors, by arity: softmax
/// `(x)`; RMS norm `(x, weight)`; layer norm `(x, weight, bias)`; with the
/// residual, `(x, residual, weight)` and layer norm's bias held here. With
/// the residual the output stacks `[normed, x + residual]` along a new first
/// dimension (one allocation, one launch), which the caller splits. Each
/// output row has the input rows' spacing (`Rows::matrix.ld`): the caller
/// narrows the last dimension where that is wider than the row.
pub(crate) struct RowOp {
    pub kind: Kind,
    pub residual: bool,
    /// Norms: eps; softmax: the scale of x (1).
    pub param: f32,
    /// `add_layer_norm`'s bias (a custom op takes at most three tensors).
    pub bias: Option<Tensor>,
}

/// A tensor's storage and layout, as a custom op is handed them.
type Part<'a> = (&'a CudaStorage, &'a Layout);

/// The parts of one call by role.
struct Parts<'a> {
    x: Part<'a>,
    residual: Option<Part<'a>>,
    weight: Option<Part<'a>>,
    bias: Option<Part<'a>>,
}

impl RowOp {
    fn cpu(&self) -> Result<(CpuStorage, Shape)> {
        bail!(
            "{} runs on CUDA tensors; redjit_candle's functions send other tensors to candle's own op",
            self.kind.name(self.residual)
        )
    }

    fn run(&self, p: Parts<'_>) -> Result<(CudaStorage, Shape)> {
        match &p.x.0.slice {
            CudaStorageSlice::F32(_) => self.launch::<f32>(p),
            CudaStorageSlice::BF16(_) => self.launch::<bf16>(p),
            CudaStorageSlice::F16(_) => self.launch::<f16>(p),
            _ => bail!(
                "{}: redjit's norms take f32, bf16 and f16, not {:?}",
                self.kind.name(self.residual),
                p.x.0.dtype()
            ),
        }
    }

    fn launch<T: DeviceElem + CudaDType>(&self, p: Parts<'_>) -> Result<(CudaStorage, Shape)> {
        let name = self.kind.name(self.residual);
        let rows = |(_, l): Part<'_>, what: &str| {
            Rows::of(l).ok_or_else(|| {
                candle_core::Error::msg(format!(
                    "{name}: the rows of {what} (shape {:?}, strides {:?}) are not evenly spaced; make it contiguous first",
                    l.dims(),
                    l.stride()
                ))
            })
        };
        let x = rows(p.x, "x")?;
        let m = x.matrix;
        fn view<'a, T: CudaDType>(part: Part<'a>, r: Rows) -> Result<CudaView<'a, T>> {
            let s = part.0.as_cuda_slice::<T>()?;
            Ok(s.slice(r.offset..r.offset + r.extent()))
        }
        let vector = |part: Part<'_>, what: &str| -> Result<Rows> {
            let r = rows(part, what)?;
            if r.matrix.rows != 1 || r.matrix.cols != m.cols {
                bail!(
                    "{name}: {what} must hold one element per column ({}), its shape is {:?}",
                    m.cols,
                    part.1.dims()
                );
            }
            Ok(r)
        };
        let residual = match p.residual {
            Some(part) => {
                let r = rows(part, "residual")?;
                if r.matrix != m || part.1.dims() != p.x.1.dims() {
                    bail!(
                        "{name}: residual (shape {:?}, strides {:?}) must have the shape and row spacing of x (shape {:?}, strides {:?})",
                        part.1.dims(),
                        part.1.stride(),
                        p.x.1.dims(),
                        p.x.1.stride()
                    );
                }
                Some((part, r))
            }
            None => None,
        };
        let weight = p
            .weight
            .map(|w| vector(w, "weight").map(|r| (w, r)))
            .transpose()?;
        let bias = p
            .bias
            .map(|b| vector(b, "bias").map(|r| (b, r)))
            .transpose()?;

        let dev = &p.x.0.device;
        let rj = redjit(dev)?;
        let (op, algo) = self.kind.op();
        let kernel = rj.norm((op, algo, self.residual, T::DTYPE, m.rows, m.cols))?;

        let rows_out = m.rows * m.ld;
        let copies = if self.residual { 2 } else { 1 };
        // SAFETY: every element a result tensor shows is written by the kernel
        // (the gap of a row wider than cols is narrowed away by the caller).
        let mut out = unsafe { dev.alloc::<T>(rows_out * copies)? };
        {
            let xv = view::<T>(p.x, x)?;
            let rv = residual.map(|(part, r)| view::<T>(part, r)).transpose()?;
            let wv = weight.map(|(part, r)| view::<T>(part, r)).transpose()?;
            let bv = bias.map(|(part, r)| view::<T>(part, r)).transpose()?;
            let (mut normed, mut sum) = out.split_at_mut(rows_out);
            let args = NormArgs {
                x: &xv,
                residual: rv.as_ref().map(|v| v as _),
                weight: wv.as_ref().map(|v| v as _),
                bias: bv.as_ref().map(|v| v as _),
                out: &mut normed,
                residual_out: if self.residual { Some(&mut sum) } else { None },
                mean: None,
                rstd: None,
                shape: m,
                param: self.param,
                scale: None,
            };
            kernel.launch(&dev.cuda_stream(), args).map_err(wrap)?;
        }
        let mut dims = p.x.1.dims().to_vec();
        match dims.last_mut() {
            Some(last) => *last = m.ld,
            None => dims.push(1),
        }
        if self.residual {
            dims.insert(0, 2);
        }
        Ok((
            CudaStorage::wrap_cuda_slice(out, dev.clone()),
            Shape::from(dims),
        ))
    }
}

impl CustomOp1 for RowOp {
    fn name(&self) -> &'static str {
        self.kind.name(self.residual)
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> Result<(CpuStorage, Shape)> {
        self.cpu()
    }
    fn cuda_fwd(&self, s: &CudaStorage, l: &Layout) -> Result<(CudaStorage, Shape)> {
        self.run(Parts {
            x: (s, l),
            residual: None,
            weight: None,
            bias: None,
        })
    }
}

impl CustomOp2 for RowOp {
    fn name(&self) -> &'static str {
        self.kind.name(self.residual)
    }
    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.cpu()
    }
    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        self.run(Parts {
            x: (s1, l1),
            residual: None,
            weight: Some((s2, l2)),
            bias: None,
        })
    }
}

impl CustomOp3 for RowOp {
    fn name(&self) -> &'static str {
        self.kind.name(self.residual)
    }
    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        self.cpu()
    }
    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
        s3: &CudaStorage,
        l3: &Layout,
    ) -> Result<(CudaStorage, Shape)> {
        if !self.residual {
            return self.run(Parts {
                x: (s1, l1),
                residual: None,
                weight: Some((s2, l2)),
                bias: Some((s3, l3)),
            });
        }
        let held = self.bias.as_ref().map(|b| b.storage_and_layout());
        let bias = match held.as_ref().map(|(s, l)| (&**s, *l)) {
            Some((candle_core::Storage::Cuda(s), l)) => Some((s, l)),
            Some(_) => bail!("{}: bias must be on the GPU of x", self.kind.name(true)),
            None => None,
        };
        self.run(Parts {
            x: (s1, l1),
            residual: Some((s2, l2)),
            weight: Some((s3, l3)),
            bias,
        })
    }
}
