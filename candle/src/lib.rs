//! candle's tensors on redjit's kernels.
//!
//! Softmax, log-softmax, RMS norm and layer norm over the last dimension, the
//! norms with a fused residual add, and reductions (sum, max, min, argmax,
//! mean, variance) over the last dimension or the whole tensor, for candle
//! CUDA tensors of f32, bf16 and f16, and the mixed-precision reduce+copy
//! step (`reduce_copy`, bf16/f16 + f32, stochastic rounding optional): one
//! redjit kernel each, laid out for the device by its tuning
//! table, launched on candle's stream of the device with no copy of the
//! tensors. Other tensors (on the CPU, of other dtypes, empty) take candle's
//! own op (`reduce_copy`: redjit's CPU twin, the same bits), so a model calls
//! these functions wherever it runs. Reductions return f32 values and i64
//! indices on either path, where candle's keep the input's type.
//!
//! Contiguous tensors and tensors narrowed along any dimension are read in
//! place; other layouts (transposed, broadcast) are made contiguous first.
//! Results are contiguous, but for a tensor narrowed along its last
//! dimension, whose result keeps its row spacing.
//!
//! Each CUDA device of candle gets one redjit runtime, made on its first use
//! and kept; kernels compile once (NVRTC) into redjit's disk cache.
//!
//! ```no_run
//! use candle_core::{DType, Device, Tensor};
//! # fn main() -> candle_core::Result<()> {
//! let dev = Device::new_cuda(0)?;
//! let x = Tensor::randn(0f32, 1.0, (16, 4096), &dev)?.to_dtype(DType::BF16)?;
//! let residual = x.ones_like()?;
//! let w = Tensor::ones(4096, DType::BF16, &dev)?;
//! let (y, h) = redjit_candle::add_rms_norm(&x, &residual, &w, 1e-6)?;
//! let p = redjit_candle::softmax_last_dim(&y)?;
//! # let _ = (h, p);
//! # Ok(())
//! # }
//! ```

mod device;
mod error;
mod norm;
mod ops;
mod reduce;
mod reduce_copy;
mod rows;

pub use device::{Redjit, redjit};
pub use ops::{
    add_layer_norm, add_rms_norm, layer_norm, log_softmax_last_dim, reduce_all, reduce_copy,
    reduce_last_dim, rms_norm, softmax_last_dim,
};
pub use redjit_runtime::Stochastic;
pub use reduce::Reduction;
