//! redjit-candle's ops beside candle's own, on one GPU, in one run: each op
//! (the norms and softmax; the reductions of each row and of the whole
//! tensor) at the LLM shapes (1 to 4096 tokens x 4096 and 8192) and two odd
//! ones, f32 and bf16. Method (as `redjit bench`): back-to-back calls on candle's stream
//! timed with CUDA events, inputs rotated over more than 4x the L2 so no call
//! reads what the last one left in it, redjit's and candle's rounds
//! alternated, the median of the rounds (at most 64 sets: the smallest shapes
//! stay in the L2 on both sides). A call's time includes its host work
//! (candle's op dispatch, the output's allocation), as a model sees it.
//!
//! `cargo run --release --example bench -- [--quick] [--ops rms_norm,...]
//! [--tokens 1,16,...] [--out FILE]`: one JSON
//! object a line (FILE, else stdout), and a table on stderr.

use std::io::Write;
use std::time::Instant;

use candle_core::cuda_backend::cudarc::driver::sys::CUevent_flags;
use candle_core::{D, DType, Device, Result, Tensor};
use redjit_candle::Reduction;

const EPS: f32 = 1e-5;
const ROUNDS: usize = 9;
/// The time one round of calls should take at least.
const ROUND_SECONDS: f64 = 2e-3;

#[derive(Debug, Clone, Copy)]
enum Op {
    Softmax,
    LogSoftmax,
    RmsNorm,
    LayerNorm,
    AddRmsNorm,
    AddLayerNorm,
    /// A reduction of each row of the last dimension.
    Last(Reduction),
    /// A reduction of the whole tensor.
    All(Reduction),
    /// `round(f32(x) + acc)` to x's type, stochastically when true (bf16 only;
    /// candle's side is its cast, add and cast, to nearest: it has no other).
    ReduceCopy(bool),
}

const REDUCTIONS: [Reduction; 6] = [
    Reduction::Sum,
    Reduction::Max,
    Reduction::Min,
    Reduction::ArgMax,
    Reduction::Mean,
    Reduction::Var,
];

fn ops() -> Vec<Op> {
    let mut ops = vec![
        Op::Softmax,
        Op::LogSoftmax,
        Op::RmsNorm,
        Op::LayerNorm,
        Op::AddRmsNorm,
        Op::AddLayerNorm,
    ];
    ops.extend(REDUCTIONS.map(Op::Last));
    ops.extend(REDUCTIONS.map(Op::All));
    ops.extend([Op::ReduceCopy(false), Op::ReduceCopy(true)]);
    ops
}

impl Op {
    fn name(self) -> String {
        let reduction = |r: Reduction| format!("{r:?}").to_lowercase();
        match self {
            Op::Last(r) => format!("{}_last_dim", reduction(r)),
            Op::All(r) => format!("{}_all", reduction(r)),
            Op::ReduceCopy(false) => "reduce_copy".into(),
            Op::ReduceCopy(true) => "reduce_copy_sr".into(),
            _ => self.norm_name().to_string(),
        }
    }

    fn norm_name(self) -> &'static str {
        match self {
            Op::Softmax => "softmax_last_dim",
            Op::LogSoftmax => "log_softmax_last_dim",
            Op::RmsNorm => "rms_norm",
            Op::LayerNorm => "layer_norm",
            Op::AddRmsNorm => "add_rms_norm",
            Op::AddLayerNorm => "add_layer_norm",
            Op::Last(_) | Op::All(_) | Op::ReduceCopy(_) => "",
        }
    }

    /// Row streams a call reads and writes (x, the residual, the results).
    fn streams(self) -> usize {
        match self {
            Op::AddRmsNorm | Op::AddLayerNorm => 4,
            Op::Last(_) | Op::All(_) => 1,
            // x (2 bytes an element) and acc (4) in, x's type out: 4 of x's size.
            Op::ReduceCopy(_) => 4,
            _ => 2,
        }
    }

    fn redjit(self, s: &Set, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        match self {
            Op::Softmax => redjit_candle::softmax_last_dim(&s.x),
            Op::LogSoftmax => redjit_candle::log_softmax_last_dim(&s.x),
            Op::RmsNorm => redjit_candle::rms_norm(&s.x, w, EPS),
            Op::LayerNorm => redjit_candle::layer_norm(&s.x, w, b, EPS),
            Op::AddRmsNorm => Ok(redjit_candle::add_rms_norm(&s.x, &s.r, w, EPS)?.0),
            Op::AddLayerNorm => Ok(redjit_candle::add_layer_norm(&s.x, &s.r, w, b, EPS)?.0),
            Op::Last(r) => redjit_candle::reduce_last_dim(&s.x, r),
            Op::All(r) => redjit_candle::reduce_all(&s.x, r),
            Op::ReduceCopy(sr) => redjit_candle::reduce_copy(
                &s.x,
                &s.acc,
                sr.then_some(redjit_candle::Stochastic { seed: 1, base: 0 }),
            ),
        }
    }

    /// candle's own: its fused kernels where it has them, its composite
    /// log-softmax, and the residual add as a separate op.
    fn candle(self, s: &Set, w: &Tensor, b: &Tensor) -> Result<Tensor> {
        match self {
            Op::Softmax => candle_nn::ops::softmax_last_dim(&s.x),
            Op::LogSoftmax => candle_nn::ops::log_softmax(&s.x, D::Minus1),
            Op::RmsNorm => candle_nn::ops::rms_norm(&s.x, w, EPS),
            Op::LayerNorm => candle_nn::ops::layer_norm(&s.x, w, b, EPS),
            Op::AddRmsNorm => candle_nn::ops::rms_norm(&(&s.x + &s.r)?, w, EPS),
            Op::AddLayerNorm => candle_nn::ops::layer_norm(&(&s.x + &s.r)?, w, b, EPS),
            Op::Last(r) => match r {
                Reduction::Sum => s.x.sum_keepdim(D::Minus1),
                Reduction::Max => s.x.max_keepdim(D::Minus1),
                Reduction::Min => s.x.min_keepdim(D::Minus1),
                Reduction::ArgMax => s.x.argmax_keepdim(D::Minus1),
                Reduction::Mean => s.x.mean_keepdim(D::Minus1),
                Reduction::Var => s.x.var_keepdim(D::Minus1),
            },
            Op::All(r) => match r {
                Reduction::Sum => s.x.sum_all(),
                Reduction::Max => s.x.max_all(),
                Reduction::Min => s.x.min_all(),
                Reduction::ArgMax => s.x.flatten_all()?.argmax(0),
                Reduction::Mean => s.x.mean_all(),
                Reduction::Var => s.x.flatten_all()?.var(0),
            },
            Op::ReduceCopy(_) => (s.x.to_dtype(DType::F32)? + &s.acc)?.to_dtype(s.x.dtype()),
        }
    }
}

/// One call's inputs; calls rotate over several sets.
struct Set {
    x: Tensor,
    r: Tensor,
    /// reduce_copy's f32 accumulator.
    acc: Tensor,
}

/// µs a call, median of the rounds, for each side (redjit first, then candle),
/// their rounds alternated.
fn time_pair(
    dev: &Device,
    calls: usize,
    mut a: impl FnMut(usize) -> Result<Tensor>,
    mut b: impl FnMut(usize) -> Result<Tensor>,
) -> Result<(f64, f64)> {
    let stream = dev.as_cuda_device()?.cuda_stream();
    let flags = Some(CUevent_flags::CU_EVENT_DEFAULT);
    let round = |f: &mut dyn FnMut(usize) -> Result<Tensor>| -> Result<f64> {
        let start = stream
            .record_event(flags)
            .map_err(candle_core::Error::wrap)?;
        for i in 0..calls {
            f(i)?;
        }
        let end = stream
            .record_event(flags)
            .map_err(candle_core::Error::wrap)?;
        end.synchronize().map_err(candle_core::Error::wrap)?;
        let ms = start.elapsed_ms(&end).map_err(candle_core::Error::wrap)?;
        Ok(f64::from(ms) * 1e3 / calls as f64)
    };
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        ta.push(round(&mut a)?);
        tb.push(round(&mut b)?);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok((median(ta), median(tb)))
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out_path = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1));
    let mut out: Box<dyn Write> = match out_path {
        Some(p) => Box::new(std::fs::File::create(p)?),
        None => Box::new(std::io::stdout()),
    };
    let dev = Device::new_cuda(0)?;
    let rj = redjit_candle::redjit(dev.as_cuda_device()?)?;
    let info = rj.runtime().device().clone();
    eprintln!(
        "{} ({} SMs, {} MiB L2), tuning table: {}",
        info.name,
        info.sm_count,
        info.l2_bytes >> 20,
        rj.runtime().tuning().why
    );
    if args.iter().any(|a| a == "--host") {
        return host_costs(&dev);
    }
    // `--ops a,b` and `--tokens 1,16`: a subset, for A/B runs of one change.
    let list = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(|v| v.split(',').map(str::to_string).collect::<Vec<_>>())
    };
    let only_ops = list("--ops");
    let only_tokens = list("--tokens");
    let tokens: Vec<usize> = match &only_tokens {
        Some(t) => t
            .iter()
            .map(|v| v.parse().map_err(candle_core::Error::wrap))
            .collect::<Result<_>>()?,
        None if quick => vec![1, 4096],
        None => vec![1, 16, 128, 512, 4096],
    };
    let mut shapes: Vec<(usize, usize)> = tokens
        .iter()
        .flat_map(|&t| [4096, 8192].map(|h| (t, h)))
        .collect();
    if only_tokens.is_none() {
        shapes.extend([(3, 100_003), (4097, 257)]);
    }
    eprintln!(
        "{:<22} {:>5} {:>14} {:>10} {:>10} {:>7}",
        "op", "dtype", "shape", "redjit µs", "candle µs", "ratio"
    );
    for dtype in [DType::BF16, DType::F32] {
        for &(rows, cols) in &shapes {
            let bytes = rows * cols * dtype.size_in_bytes();
            // Enough sets that one pass over them is 4x the L2, at most 64.
            let sets = (4 * info.l2_bytes as usize)
                .div_ceil(2 * bytes)
                .clamp(2, 64);
            let sets: Vec<Set> = (0..sets)
                .map(|_| -> Result<Set> {
                    Ok(Set {
                        x: Tensor::randn(0f32, 1.0, (rows, cols), &dev)?.to_dtype(dtype)?,
                        r: Tensor::randn(0f32, 1.0, (rows, cols), &dev)?.to_dtype(dtype)?,
                        acc: Tensor::randn(0f32, 1e-3, (rows, cols), &dev)?,
                    })
                })
                .collect::<Result<_>>()?;
            let w = (Tensor::randn(0f32, 0.5, cols, &dev)? + 1.0)?.to_dtype(dtype)?;
            let b = Tensor::randn(0f32, 0.5, cols, &dev)?.to_dtype(dtype)?;
            for op in ops() {
                if matches!(op, Op::ReduceCopy(_)) && dtype != DType::BF16 {
                    continue;
                }
                if only_ops.as_ref().is_some_and(|o| !o.contains(&op.name())) {
                    continue;
                }
                // Warm-up (compiles redjit's kernel once, loads candle's) and an
                // estimate of the call count a round needs.
                op.redjit(&sets[0], &w, &b)?;
                op.candle(&sets[0], &w, &b)?;
                dev.synchronize()?;
                let t0 = Instant::now();
                for s in &sets {
                    op.candle(s, &w, &b)?;
                }
                dev.synchronize()?;
                let per = t0.elapsed().as_secs_f64() / sets.len() as f64;
                let calls = ((ROUND_SECONDS / per).ceil() as usize).clamp(sets.len(), 20_000);
                let (ours, theirs) = time_pair(
                    &dev,
                    calls,
                    |i| op.redjit(&sets[i % sets.len()], &w, &b),
                    |i| op.candle(&sets[i % sets.len()], &w, &b),
                )?;
                let moved = op.streams() * bytes;
                eprintln!(
                    "{:<22} {:>5} {:>14} {:>10.2} {:>10.2} {:>6.2}x",
                    op.name(),
                    format!("{dtype:?}").to_lowercase(),
                    format!("{rows}x{cols}"),
                    ours,
                    theirs,
                    theirs / ours
                );
                writeln!(
                    out,
                    "{{\"op\":\"{}\",\"dtype\":\"{}\",\"rows\":{rows},\"cols\":{cols},\"redjit_us\":{ours:.3},\"candle_us\":{theirs:.3},\"bytes\":{moved},\"calls\":{calls},\"sets\":{},\"gpu\":\"{}\"}}",
                    op.name(),
                    format!("{dtype:?}").to_lowercase(),
                    sets.len(),
                    info.name
                )?;
            }
        }
    }
    Ok(())
}

/// A custom op that allocates its output and launches nothing (`--host`).
struct AllocOnly;

impl candle_core::CustomOp2 for AllocOnly {
    fn name(&self) -> &'static str {
        "alloc-only"
    }
    fn cpu_fwd(
        &self,
        _: &candle_core::CpuStorage,
        _: &candle_core::Layout,
        _: &candle_core::CpuStorage,
        _: &candle_core::Layout,
    ) -> Result<(candle_core::CpuStorage, candle_core::Shape)> {
        candle_core::bail!("alloc-only runs on CUDA tensors")
    }
    fn cuda_fwd(
        &self,
        s: &candle_core::CudaStorage,
        l: &candle_core::Layout,
        _: &candle_core::CudaStorage,
        _: &candle_core::Layout,
    ) -> Result<(candle_core::CudaStorage, candle_core::Shape)> {
        let dev = &s.device;
        // SAFETY: never read.
        let out = unsafe { dev.alloc::<half::bf16>(l.shape().elem_count())? };
        Ok((
            candle_core::CudaStorage::wrap_cuda_slice(out, dev.clone()),
            l.shape().clone(),
        ))
    }
}

/// `--host`: where a small call's time goes. The host's time to issue 200
/// calls (no wait inside, the GPU keeps up or queues), and the time until
/// they finish, µs a call, median of 5 rounds, each side.
fn host_costs(dev: &Device) -> Result<()> {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let calls = 200;
    for (rows, cols) in [(1, 4096), (16, 4096), (128, 8192)] {
        let set = Set {
            x: Tensor::randn(0f32, 1.0, (rows, cols), dev)?.to_dtype(DType::BF16)?,
            r: Tensor::randn(0f32, 1.0, (rows, cols), dev)?.to_dtype(DType::BF16)?,
            acc: Tensor::randn(0f32, 1e-3, (rows, cols), dev)?,
        };
        let w = Tensor::ones(cols, DType::BF16, dev)?;
        let b = Tensor::zeros(cols, DType::BF16, dev)?;
        for op in [
            Op::RmsNorm,
            Op::LayerNorm,
            Op::Softmax,
            Op::AddRmsNorm,
            Op::Last(Reduction::Sum),
        ] {
            let mut line = format!("{:<22} {rows}x{cols}", op.name());
            for side in 0..2 {
                let call = |s: &Set| {
                    if side == 0 {
                        op.redjit(s, &w, &b)
                    } else {
                        op.candle(s, &w, &b)
                    }
                };
                for _ in 0..50 {
                    call(&set)?;
                }
                let (mut issue, mut done) = (Vec::new(), Vec::new());
                for _ in 0..5 {
                    dev.synchronize()?;
                    let t0 = Instant::now();
                    for _ in 0..calls {
                        call(&set)?;
                    }
                    issue.push(t0.elapsed().as_secs_f64() * 1e6 / calls as f64);
                    dev.synchronize()?;
                    done.push(t0.elapsed().as_secs_f64() * 1e6 / calls as f64);
                }
                line += &format!(
                    "  {}: issue {:.2} done {:.2}",
                    if side == 0 { "redjit" } else { "candle" },
                    median(issue),
                    median(done)
                );
            }
            eprintln!("{line}");
        }
    }
    // One RMS norm (1x4096 bf16) three ways, buffers allocated once: redjit's
    // launcher, cudarc's launch of the same function with the same arguments
    // (what the launcher adds is the difference), and the launcher's check.
    {
        use candle_core::cuda_backend::cudarc::driver::{LaunchConfig, PushKernelArg};
        use redjit_runtime::{KernelSpec, Matrix, NormArgs, NormOp, NormSpec};
        let rt = redjit_candle::redjit(dev.as_cuda_device()?)?.runtime();
        let stream = dev.as_cuda_device()?.cuda_stream();
        let spec = NormSpec::with(
            (NormOp::RmsNorm, None, false),
            redjit_runtime::DType::BF16,
            redjit_runtime::DType::BF16,
            4096,
        )
        .for_shape(Some(1), 4096, &rt.tuning().tuning);
        let kernel = rt.norm(&spec).map_err(candle_core::Error::wrap)?;
        let x = stream
            .alloc_zeros::<half::bf16>(4096)
            .map_err(candle_core::Error::wrap)?;
        let w = stream
            .alloc_zeros::<half::bf16>(4096)
            .map_err(candle_core::Error::wrap)?;
        let mut y = stream
            .alloc_zeros::<half::bf16>(4096)
            .map_err(candle_core::Error::wrap)?;
        let m = Matrix {
            rows: 1,
            cols: 4096,
            ld: 4096,
        };
        let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
            let mut v = Vec::new();
            for _ in 0..5 {
                dev.synchronize()?;
                let t0 = Instant::now();
                for _ in 0..calls {
                    f()?;
                }
                v.push(t0.elapsed().as_secs_f64() * 1e6 / calls as f64);
            }
            dev.synchronize()?;
            Ok(median(v))
        };
        let launcher = time(&mut || {
            kernel
                .launch(&stream, NormArgs::norm(&x, &w, None, &mut y, m, 1e-5))
                .map_err(candle_core::Error::wrap)
        })?;
        let func = rt.function(&spec).map_err(candle_core::Error::wrap)?;
        let plan = kernel.plan(1, 4096);
        let (null, rows, cols, ld, eps) = (0u64, 1u64, 4096u64, 4096u64, 1e-5f32);
        let ws = stream
            .alloc_zeros::<u8>(4096)
            .map_err(candle_core::Error::wrap)?;
        let cfg = LaunchConfig {
            grid_dim: (plan.grid, 1, 1),
            block_dim: (spec.threads(), 1, 1),
            shared_mem_bytes: spec.stage_bytes() as u32,
        };
        let raw = time(&mut || {
            let mut b = stream.launch_builder(&func);
            // The signature's order (`KernelSpec::params`): x, weight, out,
            // rows, cols, ld, eps, splits, span, then residual, residual_out,
            // bias, mean, rstd (absent: null), counters and partials.
            b.arg(&x)
                .arg(&w)
                .arg(&mut y)
                .arg(&rows)
                .arg(&cols)
                .arg(&ld)
                .arg(&eps)
                .arg(&plan.splits)
                .arg(&plan.span);
            b.arg(&null)
                .arg(&null)
                .arg(&null)
                .arg(&null)
                .arg(&null)
                .arg(&ws)
                .arg(&ws);
            // SAFETY: `func` is `spec`'s kernel, its parameters pushed in
            // order; x, w and y hold the one row of 4096, and a block row
            // takes no counters or partials from the workspace.
            unsafe { b.launch(cfg) }
                .map(|_| ())
                .map_err(candle_core::Error::wrap)
        })?;
        // The launcher's driver calls without its checks: each buffer's
        // address taken once with its ordering guard (recorded after the
        // launch), raw addresses pushed. The launcher less this is redjit's
        // own host work.
        use candle_core::cuda_backend::cudarc::driver::{DevicePtr, DevicePtrMut};
        let ws_at = ws.device_ptr(&stream).0;
        let taken = time(&mut || {
            let (xa, _xg) = x.device_ptr(&stream);
            let (wa, _wg) = w.device_ptr(&stream);
            let (ya, _yg) = y.device_ptr_mut(&stream);
            let mut b = stream.launch_builder(&func);
            b.arg(&xa)
                .arg(&wa)
                .arg(&ya)
                .arg(&rows)
                .arg(&cols)
                .arg(&ld)
                .arg(&eps)
                .arg(&plan.splits)
                .arg(&plan.span);
            b.arg(&null)
                .arg(&null)
                .arg(&null)
                .arg(&null)
                .arg(&null)
                .arg(&ws_at)
                .arg(&ws_at);
            // SAFETY: `func` is `spec`'s kernel, its parameters pushed in
            // order; x, w and y hold the one row of 4096, and a block row
            // takes no counters or partials from the workspace.
            unsafe { b.launch(cfg) }
                .map(|_| ())
                .map_err(candle_core::Error::wrap)
        })?;
        let call = redjit_runtime::NormCall {
            x: (redjit_runtime::DType::BF16, 4096),
            residual: None,
            weight: Some((redjit_runtime::DType::BF16, 4096)),
            bias: None,
            out: (redjit_runtime::DType::BF16, 4096),
            residual_out: None,
            mean: None,
            rstd: None,
            shape: m,
            param: 1e-5,
            in_place: false,
            scale: None,
        };
        let t0 = Instant::now();
        for _ in 0..100_000 {
            std::hint::black_box(
                redjit_runtime::check_norm_call(&spec, std::hint::black_box(&call), 264).ok(),
            );
        }
        let check = t0.elapsed().as_secs_f64() * 1e6 / 1e5;
        let t0 = Instant::now();
        for i in 0..100_000u64 {
            std::hint::black_box(
                NormSpec::with(
                    (NormOp::RmsNorm, None, false),
                    redjit_runtime::DType::BF16,
                    redjit_runtime::DType::BF16,
                    4096,
                )
                .for_shape(Some(1 + i % 2), 4096, &rt.tuning().tuning)
                .name(),
            );
        }
        let resolve = t0.elapsed().as_secs_f64() * 1e6 / 1e5;
        eprintln!(
            "{}: redjit launcher {launcher:.2} µs, cudarc launch {raw:.2} µs, cudarc launch of addresses taken once {taken:.2} µs, check_call {check:.3} µs, layout + name {resolve:.3} µs",
            spec.name()
        );
        // candle's own RMS norm kernel through cudarc, on the same buffers
        // (what candle's op pays for its launch), beside redjit's above.
        let cuda = dev.as_cuda_device()?;
        let func =
            cuda.get_or_load_func("rmsnorm_bf16", &candle_core::cuda_backend::kernels::REDUCE)?;
        let (ncols, block, eps) = (4096i32, 1024i32, 1e-5f32);
        let candle_cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1024, 1, 1),
            shared_mem_bytes: 0,
        };
        let candle_raw = time(&mut || {
            let mut b = func.builder();
            b.arg(&x)
                .arg(&mut y)
                .arg(&w)
                .arg(&ncols)
                .arg(&block)
                .arg(&eps);
            // SAFETY: candle's rmsnorm(src, dst, alpha, ncols, block_size,
            // eps) on one row of 4096 in x, y and w, as candle-nn launches it.
            unsafe { b.launch(candle_cfg) }
                .map(|_| ())
                .map_err(candle_core::Error::wrap)
        })?;
        // A custom op of two tensors that only allocates its output: candle's
        // dispatch and the allocation, which both sides' calls pay.
        let (xt, wt) = (
            Tensor::randn(0f32, 1.0, (1, 4096), dev)?.to_dtype(DType::BF16)?,
            Tensor::ones(4096, DType::BF16, dev)?,
        );
        let dispatch = time(&mut || xt.apply_op2_no_bwd(&wt, &AllocOnly).map(|_| ()))?;
        eprintln!(
            "candle's rmsnorm_bf16: cudarc launch {candle_raw:.2} µs; a custom op that only allocates: {dispatch:.2} µs"
        );
    }
    // The parts of a redjit call that are not the launch.
    let cuda = dev.as_cuda_device()?;
    let t0 = Instant::now();
    for _ in 0..10_000 {
        std::hint::black_box(redjit_candle::redjit(cuda)?);
    }
    eprintln!(
        "runtime lookup: {:.3} µs",
        t0.elapsed().as_secs_f64() * 1e6 / 1e4
    );
    let t0 = Instant::now();
    for _ in 0..10_000 {
        // SAFETY: never read.
        std::hint::black_box(unsafe { cuda.alloc::<half::bf16>(4096)? });
    }
    dev.synchronize()?;
    eprintln!(
        "alloc + free of 4096 bf16: {:.3} µs",
        t0.elapsed().as_secs_f64() * 1e6 / 1e4
    );
    Ok(())
}
