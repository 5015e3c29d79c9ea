//! The public ops: redjit's kernels for CUDA tensors of f32, bf16 and f16,
//! candle's own ops for everything else (CPU tensors, other dtypes, empty
//! tensors), with the same results within rounding. Reductions return f32
//! (argmax i64) on either path; `reduce_copy`'s CPU path is redjit's CPU twin.

use candle_core::{D, DType, Result, Tensor, bail};
use redjit_runtime::Stochastic;
use redjit_runtime::reference::{self, HostBuffer, Params};

use crate::norm::{Kind, RowOp};
use crate::reduce::{ReduceOp1, Reduction};
use crate::reduce_copy::ReduceCopyOp;
use crate::rows::Rows;

/// Whether redjit takes a call on these tensors: all on one CUDA device, of
/// one dtype redjit's norms have, and not empty.
fn on_redjit(x: &Tensor, others: &[&Tensor]) -> bool {
    x.device().is_cuda()
        && matches!(x.dtype(), DType::F32 | DType::BF16 | DType::F16)
        && x.rank() > 0
        && x.elem_count() > 0
        && others
            .iter()
            .all(|t| t.dtype() == x.dtype() && t.device().same_device(x.device()))
}

/// `t` itself where its rows are evenly spaced (contiguous or narrowed), else
/// a contiguous copy (transposed, broadcast).
fn as_rows(t: &Tensor) -> Result<Tensor> {
    match Rows::of(t.layout()) {
        Some(_) => Ok(t.clone()),
        None => t.contiguous(),
    }
}

/// Drops the gap a row wider than `cols` leaves in a result (a narrowed input's
/// row spacing).
fn to_cols(y: Tensor, cols: usize) -> Result<Tensor> {
    if y.dim(D::Minus1)? == cols {
        Ok(y)
    } else {
        y.narrow(D::Minus1, 0, cols)
    }
}

fn check_vector(what: &str, op: &str, v: &Tensor, cols: usize, x: &Tensor) -> Result<()> {
    if v.dims() != [cols] {
        bail!(
            "{op}: {what} must be one-dimensional with one element per column of x ({cols}); x is {:?}, {what} is {:?}",
            x.dims(),
            v.dims()
        );
    }
    Ok(())
}

fn row_op(kind: Kind, residual: bool, param: f32, bias: Option<Tensor>) -> RowOp {
    RowOp {
        kind,
        residual,
        param,
        bias,
    }
}

/// Softmax over the last dimension (candle-nn's `ops::softmax_last_dim`).
pub fn softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if !on_redjit(x, &[]) {
        return candle_nn::ops::softmax_last_dim(x);
    }
    let cols = x.dim(D::Minus1)?;
    to_cols(
        as_rows(x)?.apply_op1_no_bwd(&row_op(Kind::Softmax, false, 1.0, None))?,
        cols,
    )
}

/// Log-softmax over the last dimension (candle-nn's `ops::log_softmax(x,
/// D::Minus1)`, one kernel instead of five).
pub fn log_softmax_last_dim(x: &Tensor) -> Result<Tensor> {
    if !on_redjit(x, &[]) {
        return candle_nn::ops::log_softmax(x, D::Minus1);
    }
    let cols = x.dim(D::Minus1)?;
    to_cols(
        as_rows(x)?.apply_op1_no_bwd(&row_op(Kind::LogSoftmax, false, 1.0, None))?,
        cols,
    )
}

/// `x / sqrt(mean(x^2) + eps) * weight` over the last dimension (candle-nn's
/// `ops::rms_norm`).
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f32) -> Result<Tensor> {
    if !on_redjit(x, &[weight]) {
        return candle_nn::ops::rms_norm(x, weight, eps);
    }
    let cols = x.dim(D::Minus1)?;
    check_vector("weight", "rms_norm", weight, cols, x)?;
    let y = as_rows(x)?
        .apply_op2_no_bwd(&as_rows(weight)?, &row_op(Kind::RmsNorm, false, eps, None))?;
    to_cols(y, cols)
}

/// `(x - mean) / sqrt(var + eps) * weight + bias` over the last dimension,
/// population variance (candle-nn's `ops::layer_norm`).
pub fn layer_norm(x: &Tensor, weight: &Tensor, bias: &Tensor, eps: f32) -> Result<Tensor> {
    if !on_redjit(x, &[weight, bias]) {
        return candle_nn::ops::layer_norm(x, weight, bias, eps);
    }
    let cols = x.dim(D::Minus1)?;
    check_vector("weight", "layer_norm", weight, cols, x)?;
    check_vector("bias", "layer_norm", bias, cols, x)?;
    let y = as_rows(x)?.apply_op3_no_bwd(
        &as_rows(weight)?,
        &as_rows(bias)?,
        &row_op(Kind::LayerNorm, false, eps, None),
    )?;
    to_cols(y, cols)
}

/// x and the residual with one row spacing, as one launch reads both: each as
/// it is where they share it, else contiguous.
fn paired(op: &str, x: &Tensor, residual: &Tensor) -> Result<(Tensor, Tensor)> {
    if x.dims() != residual.dims() {
        bail!(
            "{op}: residual must have the shape of x; x is {:?}, residual is {:?}",
            x.dims(),
            residual.dims()
        );
    }
    let (a, b) = (as_rows(x)?, as_rows(residual)?);
    match (Rows::of(a.layout()), Rows::of(b.layout())) {
        (Some(ra), Some(rb)) if ra.matrix == rb.matrix => Ok((a, b)),
        _ => Ok((a.contiguous()?, b.contiguous()?)),
    }
}

/// The two results of a fused residual norm, split from the stacked output.
fn split(y: Tensor, cols: usize) -> Result<(Tensor, Tensor)> {
    Ok((to_cols(y.get(0)?, cols)?, to_cols(y.get(1)?, cols)?))
}

/// `h = x + residual`, then `(rms_norm(h, weight, eps), h)`: the residual
/// stream's update and the next layer's input in one kernel, as serving code
/// runs them at every layer.
pub fn add_rms_norm(
    x: &Tensor,
    residual: &Tensor,
    weight: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor)> {
    if !on_redjit(x, &[residual, weight]) {
        let h = (x + residual)?;
        return Ok((candle_nn::ops::rms_norm(&h, weight, eps)?, h));
    }
    let cols = x.dim(D::Minus1)?;
    check_vector("weight", "add_rms_norm", weight, cols, x)?;
    let (x, r) = paired("add_rms_norm", x, residual)?;
    let y = x.apply_op3_no_bwd(
        &r,
        &as_rows(weight)?,
        &row_op(Kind::RmsNorm, true, eps, None),
    )?;
    split(y, cols)
}

/// `h = x + residual`, then `(layer_norm(h, weight, bias, eps), h)`, in one
/// kernel.
pub fn add_layer_norm(
    x: &Tensor,
    residual: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    eps: f32,
) -> Result<(Tensor, Tensor)> {
    if !on_redjit(x, &[residual, weight, bias]) {
        let h = (x + residual)?;
        return Ok((candle_nn::ops::layer_norm(&h, weight, bias, eps)?, h));
    }
    let cols = x.dim(D::Minus1)?;
    check_vector("weight", "add_layer_norm", weight, cols, x)?;
    check_vector("bias", "add_layer_norm", bias, cols, x)?;
    let (x, r) = paired("add_layer_norm", x, residual)?;
    let y = x.apply_op3_no_bwd(
        &r,
        &as_rows(weight)?,
        &row_op(Kind::LayerNorm, true, eps, Some(as_rows(bias)?)),
    )?;
    split(y, cols)
}

/// Results of a reduction: f32 values (redjit's accumulator, not rounded
/// back to a 16-bit input's type) and i64 indices, wherever the tensor is.
fn as_result(y: Tensor, r: Reduction) -> Result<Tensor> {
    y.to_dtype(if r == Reduction::ArgMax {
        DType::I64
    } else {
        DType::F32
    })
}

/// `r` of each row of the last dimension, which the result keeps (of size 1),
/// as candle's `sum_keepdim(D::Minus1)`, `max_keepdim`, `min_keepdim`,
/// `argmax_keepdim`, `mean_keepdim` and `var_keepdim` (the sample variance)
/// compute it, but accumulated and returned in f32 whatever the input's
/// type (argmax: i64 indices, the first of equal maxima): no extra launch
/// rounds a 16-bit input's result back to its type.
pub fn reduce_last_dim(x: &Tensor, r: Reduction) -> Result<Tensor> {
    if !on_redjit(x, &[]) {
        let x = x.to_dtype(DType::F32)?;
        let y = match r {
            Reduction::Sum => x.sum_keepdim(D::Minus1),
            Reduction::Max => x.max_keepdim(D::Minus1),
            Reduction::Min => x.min_keepdim(D::Minus1),
            Reduction::ArgMax => x.argmax_keepdim(D::Minus1),
            Reduction::Mean => x.mean_keepdim(D::Minus1),
            Reduction::Var => x.var_keepdim(D::Minus1),
        }?;
        return as_result(y, r);
    }
    as_rows(x)?.apply_op1_no_bwd(&ReduceOp1 {
        reduction: r,
        whole: false,
    })
}

/// `r` of every element of the tensor, a scalar (candle's `sum_all`,
/// `max_all`, `min_all`, `mean_all`; argmax and variance as over the
/// flattened tensor), f32 (argmax: i64) as [`reduce_last_dim`]. A tensor that
/// is not contiguous is made so first.
pub fn reduce_all(x: &Tensor, r: Reduction) -> Result<Tensor> {
    if !on_redjit(x, &[]) {
        let x = x.to_dtype(DType::F32)?;
        let y = match r {
            Reduction::Sum => x.sum_all(),
            Reduction::Max => x.max_all(),
            Reduction::Min => x.min_all(),
            Reduction::ArgMax => x.flatten_all()?.argmax(0),
            Reduction::Mean => x.mean_all(),
            Reduction::Var => x.flatten_all()?.var(0),
        }?;
        return as_result(y, r);
    }
    x.contiguous()?.apply_op1_no_bwd(&ReduceOp1 {
        reduction: r,
        whole: true,
    })
}

/// The mixed-precision reduce+copy step: `f32(x) + acc`, rounded to x's type
/// (bf16 or f16) to nearest, or stochastically with `stochastic`'s Philox
/// key and counter offset (element i draws from counter `(base + i) / 4`), as
/// a low-precision weight update or a quantized collective's transport step
/// runs it. One kernel on the GPU, where candle would take three (a cast,
/// the add, a cast). On the CPU the same bits, from redjit's CPU twin.
pub fn reduce_copy(x: &Tensor, acc: &Tensor, stochastic: Option<Stochastic>) -> Result<Tensor> {
    if x.dims() != acc.dims() {
        bail!(
            "reduce_copy: acc must have the shape of x; x is {:?}, acc is {:?}",
            x.dims(),
            acc.dims()
        );
    }
    if !matches!(x.dtype(), DType::BF16 | DType::F16) || acc.dtype() != DType::F32 {
        bail!(
            "reduce_copy: x must be bf16 or f16 and acc f32; x is {:?}, acc is {:?}",
            x.dtype(),
            acc.dtype()
        );
    }
    if !x.device().same_device(acc.device()) {
        bail!("reduce_copy: x and acc must be on one device");
    }
    if x.device().is_cuda() && x.elem_count() > 0 {
        return x
            .contiguous()?
            .apply_op2_no_bwd(&acc.contiguous()?, &ReduceCopyOp { stochastic });
    }
    // The CPU twin of the kernel: the same bits for either rounding.
    let spec = crate::reduce_copy::spec(x.dtype(), stochastic.is_some())?;
    let host_x = match x.dtype() {
        DType::BF16 => HostBuffer::BF16(x.flatten_all()?.to_vec1::<half::bf16>()?),
        _ => HostBuffer::F16(x.flatten_all()?.to_vec1::<half::f16>()?),
    };
    let host_acc = HostBuffer::F32(acc.flatten_all()?.to_vec1::<f32>()?);
    let params = Params {
        op_arg: 0.0,
        sr_seed: stochastic.map_or(0, |s| s.seed),
        sr_base: stochastic.map_or(0, |s| s.base),
    };
    let out = reference::reduce_copy(
        &spec,
        &[&host_x, &host_acc],
        &[0, 0],
        x.elem_count(),
        params,
    );
    let dev = x.device();
    match out.into_iter().next() {
        Some(HostBuffer::BF16(v)) => Tensor::from_vec(v, x.shape(), dev),
        Some(HostBuffer::F16(v)) => Tensor::from_vec(v, x.shape(), dev),
        _ => bail!("reduce_copy: the CPU twin gave no {:?} result", x.dtype()),
    }
}
