//! A small transformer block in candle (RMS norm, attention with its
//! softmax, the residual add and RMS norm, an MLP), run with candle's own
//! norms and softmax and then with redjit-candle's, in bf16, printing both
//! times. The matrix products are candle's (cuBLAS) in both runs.
//!
//! `cargo run --release --example block -- [TOKENS]` (default 1024).

use std::time::Instant;

use candle_core::{DType, Device, Result, Tensor};

const HIDDEN: usize = 4096;
const HEADS: usize = 32;
const HEAD_DIM: usize = HIDDEN / HEADS;
const FFN: usize = 4 * HIDDEN;
const EPS: f32 = 1e-6;

struct Weights {
    norm1: Tensor,
    norm2: Tensor,
    qkv: Tensor,
    out: Tensor,
    up: Tensor,
    down: Tensor,
}

/// The row ops a block calls: candle's or redjit-candle's.
#[derive(Clone, Copy, PartialEq)]
enum Ops {
    Candle,
    Redjit,
}

impl Ops {
    fn rms_norm(self, x: &Tensor, w: &Tensor) -> Result<Tensor> {
        match self {
            Ops::Candle => candle_nn::ops::rms_norm(x, w, EPS),
            Ops::Redjit => redjit_candle::rms_norm(x, w, EPS),
        }
    }
    fn add_rms_norm(self, x: &Tensor, r: &Tensor, w: &Tensor) -> Result<(Tensor, Tensor)> {
        match self {
            Ops::Candle => {
                let h = (x + r)?;
                Ok((candle_nn::ops::rms_norm(&h, w, EPS)?, h))
            }
            Ops::Redjit => redjit_candle::add_rms_norm(x, r, w, EPS),
        }
    }
    fn softmax(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Ops::Candle => candle_nn::ops::softmax_last_dim(x),
            Ops::Redjit => redjit_candle::softmax_last_dim(x),
        }
    }
}

fn block(ops: Ops, x: &Tensor, w: &Weights) -> Result<Tensor> {
    let (t, _) = x.dims2()?;
    let h = ops.rms_norm(x, &w.norm1)?;
    let qkv = h.matmul(&w.qkv)?;
    let heads = |i: usize| -> Result<Tensor> {
        qkv.narrow(1, i * HIDDEN, HIDDEN)?
            .reshape((t, HEADS, HEAD_DIM))?
            .transpose(0, 1)?
            .contiguous()
    };
    let (q, k, v) = (heads(0)?, heads(1)?, heads(2)?);
    let scores = (q.matmul(&k.t()?)? * (1.0 / (HEAD_DIM as f64).sqrt()))?;
    let attn = ops.softmax(&scores)?.matmul(&v)?;
    let attn = attn.transpose(0, 1)?.contiguous()?.reshape((t, HIDDEN))?;
    let o = attn.matmul(&w.out)?;
    let (y, resid) = ops.add_rms_norm(&o, x, &w.norm2)?;
    let up = candle_nn::ops::silu(&y.matmul(&w.up)?)?;
    up.matmul(&w.down)? + resid
}

fn main() -> Result<()> {
    let tokens: usize = std::env::args()
        .nth(1)
        .map_or(Ok(1024), |s| s.parse())
        .map_err(candle_core::Error::wrap)?;
    let dev = Device::new_cuda(0)?;
    let rand = |r: usize, c: usize, s: f64| -> Result<Tensor> {
        (Tensor::randn(0f32, 1.0, (r, c), &dev)? * s)?.to_dtype(DType::BF16)
    };
    let w = Weights {
        norm1: Tensor::ones(HIDDEN, DType::BF16, &dev)?,
        norm2: Tensor::ones(HIDDEN, DType::BF16, &dev)?,
        qkv: rand(HIDDEN, 3 * HIDDEN, 0.02)?,
        out: rand(HIDDEN, HIDDEN, 0.02)?,
        up: rand(HIDDEN, FFN, 0.02)?,
        down: rand(FFN, HIDDEN, 0.02)?,
    };
    let x = rand(tokens, HIDDEN, 1.0)?;
    // The two agree (bf16 rounding apart).
    let a = block(Ops::Candle, &x, &w)?;
    let b = block(Ops::Redjit, &x, &w)?;
    let diff = (a.to_dtype(DType::F32)? - b.to_dtype(DType::F32)?)?
        .abs()?
        .max_all()?
        .to_scalar::<f32>()?;
    let scale = a
        .to_dtype(DType::F32)?
        .abs()?
        .max_all()?
        .to_scalar::<f32>()?;
    println!(
        "block, {tokens} tokens x {HIDDEN}, bf16: largest difference {diff:.3e} (largest value {scale:.3e})"
    );
    let time = |ops: Ops| -> Result<f64> {
        let mut runs = Vec::new();
        for _ in 0..7 {
            dev.synchronize()?;
            let t0 = Instant::now();
            for _ in 0..10 {
                block(ops, &x, &w)?;
            }
            dev.synchronize()?;
            runs.push(t0.elapsed().as_secs_f64() * 1e6 / 10.0);
        }
        runs.sort_by(f64::total_cmp);
        Ok(runs[runs.len() / 2])
    };
    // Alternated, after one warm pass each.
    let (mut tc, mut tr) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        tc.push(time(Ops::Candle)?);
        tr.push(time(Ops::Redjit)?);
    }
    tc.sort_by(f64::total_cmp);
    tr.sort_by(f64::total_cmp);
    let (tc, tr) = (tc[1], tr[1]);
    println!("candle's norms and softmax: {tc:.1} µs a block");
    println!(
        "redjit-candle's:            {tr:.1} µs a block ({:.3}x)",
        tc / tr
    );
    println!(
        "{{\"example\":\"block\",\"tokens\":{tokens},\"hidden\":{HIDDEN},\"candle_us\":{tc:.1},\"redjit_us\":{tr:.1}}}"
    );
    Ok(())
}
