//! CPU tensors (and dtypes redjit lacks) take candle's own ops: the same bits
//! as calling candle directly. Runs everywhere, no GPU needed.

use candle_core::{D, DType, Device, Tensor};

fn same(a: &Tensor, b: &Tensor) {
    assert_eq!(a.dims(), b.dims());
    let a = a
        .to_dtype(DType::F64)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    let b = b
        .to_dtype(DType::F64)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f64>()
        .unwrap();
    assert!(
        a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()),
        "results differ"
    );
}

#[test]
fn cpu_tensors_take_candles_ops() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let x = Tensor::randn(0f32, 1.0, (5, 37), &dev)?.to_dtype(dtype)?;
        let r = Tensor::randn(0f32, 1.0, (5, 37), &dev)?.to_dtype(dtype)?;
        let w = Tensor::randn(1f32, 0.5, 37, &dev)?.to_dtype(dtype)?;
        let b = Tensor::randn(0f32, 0.5, 37, &dev)?.to_dtype(dtype)?;
        same(
            &redjit_candle::softmax_last_dim(&x)?,
            &candle_nn::ops::softmax_last_dim(&x)?,
        );
        same(
            &redjit_candle::log_softmax_last_dim(&x)?,
            &candle_nn::ops::log_softmax(&x, D::Minus1)?,
        );
        same(
            &redjit_candle::rms_norm(&x, &w, 1e-5)?,
            &candle_nn::ops::rms_norm(&x, &w, 1e-5)?,
        );
        same(
            &redjit_candle::layer_norm(&x, &w, &b, 1e-5)?,
            &candle_nn::ops::layer_norm(&x, &w, &b, 1e-5)?,
        );
        let h = (&x + &r)?;
        let (y, s) = redjit_candle::add_rms_norm(&x, &r, &w, 1e-5)?;
        same(&s, &h);
        same(&y, &candle_nn::ops::rms_norm(&h, &w, 1e-5)?);
        let (y, s) = redjit_candle::add_layer_norm(&x, &r, &w, &b, 1e-5)?;
        same(&s, &h);
        same(&y, &candle_nn::ops::layer_norm(&h, &w, &b, 1e-5)?);
    }
    Ok(())
}

#[test]
fn bad_cpu_calls_are_candles_errors_not_panics() {
    let x = Tensor::ones((4, 8), DType::F32, &Device::Cpu).unwrap();
    let w = Tensor::ones(7, DType::F32, &Device::Cpu).unwrap();
    assert!(redjit_candle::rms_norm(&x, &w, 1e-5).is_err());
    let r = Tensor::ones((4, 7), DType::F32, &Device::Cpu).unwrap();
    assert!(redjit_candle::add_rms_norm(&x, &r, &w, 1e-5).is_err());
}

#[test]
fn cpu_reductions_take_candles_ops() -> candle_core::Result<()> {
    use redjit_candle::{Reduction, reduce_all, reduce_last_dim};
    let x = Tensor::randn(0f32, 1.0, (6, 41), &Device::Cpu)?;
    same(
        &reduce_last_dim(&x, Reduction::Sum)?,
        &x.sum_keepdim(D::Minus1)?,
    );
    same(
        &reduce_last_dim(&x, Reduction::Var)?,
        &x.var_keepdim(D::Minus1)?,
    );
    same(
        &reduce_last_dim(&x, Reduction::ArgMax)?,
        &x.argmax_keepdim(D::Minus1)?,
    );
    same(&reduce_all(&x, Reduction::Max)?, &x.max_all()?);
    same(&reduce_all(&x, Reduction::Mean)?, &x.mean_all()?);
    Ok(())
}

#[test]
fn cpu_reduce_copy_is_candles_cast_add_cast_to_nearest() -> candle_core::Result<()> {
    use redjit_candle::{Stochastic, reduce_copy};
    let x = Tensor::randn(0f32, 1.0, (7, 33), &Device::Cpu)?.to_dtype(DType::BF16)?;
    let acc = (Tensor::randn(0f32, 1.0, (7, 33), &Device::Cpu)? * 1e-3)?;
    let rn = reduce_copy(&x, &acc, None)?;
    same(
        &rn,
        &(x.to_dtype(DType::F32)? + &acc)?.to_dtype(DType::BF16)?,
    );
    // Stochastic: each result one of the two bf16 neighbours of the exact sum,
    // and the same for the same key.
    let key = Some(Stochastic { seed: 3, base: 0 });
    let sr = reduce_copy(&x, &acc, key)?;
    same(&sr, &reduce_copy(&x, &acc, key)?);
    let exact = (x.to_dtype(DType::F32)? + &acc)?
        .flatten_all()?
        .to_vec1::<f32>()?;
    let got = sr.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    for (e, g) in exact.iter().zip(&got) {
        let lo = half::bf16::from_f32(*e);
        let step = f32::from(half::bf16::from_bits(lo.to_bits() + 1)) - f32::from(lo);
        assert!(
            (g - e).abs() <= step.abs() * 1.01 + f32::EPSILON,
            "{g} is not a neighbour of {e}"
        );
    }
    assert!(reduce_copy(&x, &x, None).is_err());
    Ok(())
}
