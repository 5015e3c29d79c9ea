//! `redjit bench all-reduce --fused-norm`: the fused all-reduce + residual +
//! RMS norm (issue 60) per call, bf16 or f16, beside what it replaces in the
//! same run: the plain all-reduce of the same bytes (the choice table's
//! kernel), and the two-launch pair, that all-reduce then the norm family's
//! in-place add + RMS norm on each rank's stream (vLLM's `fused_add_rms_norm`
//! pattern). Timed as `bench all-reduce` times calls (`--graph` replays them
//! from a CUDA graph), in one process or, with `--processes`, one per rank.

use cudarc::driver::CudaStream;
use redjit_codegen::spec::all_reduce::norm::ArNorm;
use redjit_codegen::{AllReduceAlgo, NormOp, NormSpec};
use redjit_runtime::all_reduce::{AddRmsNorm, ArFp8Scales, Communicator};
use redjit_runtime::{KernelInput, KernelOutput, Matrix, NormInPlace};

use super::{AllReduceBenchArgs, LegacyInput, time_calls};
use crate::cmd_report::fused_norm::{FusedNormReport, FusedNormRow};
use crate::devbuf::{DevBuf, Filler};
use crate::error::{CliResult, DriverContext};
use crate::report::{utc_date, write_json};
use crate::sizes::fmt_size;

/// One rank's buffers for a shape.
struct RankBufs {
    residual: DevBuf,
    weight: DevBuf,
    y: DevBuf,
    y8: DevBuf,
    scales: DevBuf,
    reduced: DevBuf,
}

/// Times every (tokens, hidden) of `a.tokens` x `a.hidden` on `comm`, the
/// fused kernels of `wanted` (the checked `--algos`), whose ranks are placed
/// as `placement` says; `aligned`: one process per rank (each batch starts on
/// every rank together). Rank 0's process prints and writes.
pub fn run_fused(
    comm: &Communicator,
    a: &AllReduceBenchArgs,
    wanted: &[AllReduceAlgo],
    aligned: bool,
    placement: String,
) -> CliResult {
    let dtype = a.dtype;
    let world = comm.world();
    let ranks = comm.local_ranks().len();
    let leader = comm.local_ranks().contains(&0);
    macro_rules! say {
        ($($t:tt)*) => { if leader { println!($($t)*) } };
    }
    say!(
        "fused all-reduce + residual + RMS norm, {dtype}, {placement}, {} calls per pair of events, median of {}{}",
        a.batch,
        a.iters,
        if a.graph {
            ", replayed from a CUDA graph"
        } else {
            ""
        }
    );
    say!(
        "{:>7} {:>7} {:>9} {:>8} {:>14} {:>9} {:>9} {:>9} {:>9} {:>10} {:>11}",
        "tokens",
        "hidden",
        "bytes",
        "plain",
        "fused kernel",
        "plain us",
        "pair us",
        "fused us",
        "fp8 us",
        "pair/fused",
        "fused-plain"
    );
    let mut rows = Vec::new();
    for &hidden in &a.hidden {
        for &tokens in &a.tokens {
            let n = tokens * hidden;
            let bytes = n * dtype.info().bytes as usize;
            let mut bufs = Vec::with_capacity(ranks);
            let mut xs = Vec::with_capacity(ranks);
            for li in 0..ranks {
                let s = comm.runtime(li).stream();
                let f = Filler::new(s, 0x5eed_1000 + li as u64)?;
                // In cuMemAlloc memory: a graph's replays read it in place.
                xs.push(LegacyInput::copy_of(s, &f.alloc(dtype, n)?, dtype, n)?);
                bufs.push(RankBufs {
                    residual: f.alloc(dtype, n)?,
                    weight: f.alloc(dtype, hidden)?,
                    y: f.alloc(dtype, n)?,
                    y8: f.alloc(redjit_codegen::DType::E4M3, n)?,
                    scales: f.alloc(redjit_codegen::DType::F32, tokens)?,
                    reduced: f.alloc(dtype, n)?,
                });
            }
            for li in 0..ranks {
                comm.runtime(li)
                    .stream()
                    .synchronize()
                    .during(|| format!("waiting for rank {li}'s inputs"))?;
            }
            let call = comm.choose(bytes)?;
            let views: Vec<_> = xs.iter().filter_map(|b| b.view(n)).collect();
            let x: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
            let fused = |fp8: bool,
                         layout: ArNorm,
                         algo: AllReduceAlgo,
                         bufs: &mut [RankBufs]|
             -> CliResult {
                let (mut res, mut y, mut sc, mut w) =
                    (Vec::new(), Vec::new(), Vec::new(), Vec::new());
                for b in bufs.iter_mut() {
                    res.push(b.residual.output());
                    y.push(if fp8 { b.y8.output() } else { b.y.output() });
                    sc.push(b.scales.output());
                    w.push(b.weight.input());
                }
                comm.all_reduce_add_rms_norm(AddRmsNorm {
                    x: &x,
                    residual: &mut res,
                    weight: &w,
                    out: &mut y,
                    scale: fp8.then_some(ArFp8Scales::PerRow(&mut sc)),
                    cols: hidden,
                    eps: 1e-6,
                    layout: Some(layout),
                    algo: Some(algo),
                    skip_rank: None,
                })?;
                Ok(())
            };
            let plain = |bufs: &mut [RankBufs]| -> CliResult {
                let mut out: Vec<&mut dyn KernelOutput> =
                    bufs.iter_mut().map(|b| b.reduced.output()).collect();
                comm.all_reduce(&x, &mut out, call)?;
                Ok(())
            };
            let spec = NormSpec::with((NormOp::RmsNorm, None, true), dtype, dtype, hidden as u64);
            let kernels = (0..ranks)
                .map(|li| comm.runtime(li).norm(&spec))
                .collect::<Result<Vec<_>, _>>()?;
            let main = comm.stream().clone();
            let pair = |bufs: &mut [RankBufs]| -> CliResult {
                plain(bufs)?;
                let shape = Matrix {
                    rows: tokens,
                    cols: hidden,
                    ld: hidden,
                };
                for (li, b) in bufs.iter_mut().enumerate() {
                    let s: &std::sync::Arc<CudaStream> = comm.runtime(li).stream();
                    s.join(&main)
                        .during(|| "ordering a rank's norm after the all-reduce".into())?;
                    let RankBufs {
                        reduced,
                        residual,
                        weight,
                        ..
                    } = b;
                    kernels[li].launch_in_place(
                        s,
                        NormInPlace::norm(
                            reduced.output(),
                            Some(residual.output()),
                            weight.input(),
                            None,
                            shape,
                            1e-6,
                        ),
                    )?;
                    main.join(s)
                        .during(|| "ordering the main stream after a rank's norm".into())?;
                }
                Ok(())
            };
            let (plain_us, _) = time_calls(comm, a, aligned, &mut || plain(&mut bufs))?;
            let (pair_us, _) = time_calls(comm, a, aligned, &mut || pair(&mut bufs))?;
            for layout in ArNorm::candidates(world, dtype, hidden, None) {
                for algo in layout.algos(world, dtype) {
                    if !wanted.contains(&algo) {
                        continue;
                    }
                    let (fused_us, _) = time_calls(comm, a, aligned, &mut || {
                        fused(false, layout, algo, &mut bufs)
                    })?;
                    let (fp8_us, _) = time_calls(comm, a, aligned, &mut || {
                        fused(true, layout, algo, &mut bufs)
                    })?;
                    let kernel = format!("{algo} {}", layout.layout_name());
                    say!(
                        "{tokens:>7} {hidden:>7} {:>9} {:>8} {kernel:>14} {plain_us:>9.2} {pair_us:>9.2} {fused_us:>9.2} {fp8_us:>9.2} {:>9.2}x {:>+11.2}",
                        fmt_size(bytes as u64),
                        call.algo.to_string(),
                        pair_us / fused_us,
                        fused_us - plain_us
                    );
                    rows.push(FusedNormRow {
                        tokens,
                        hidden,
                        bytes: bytes as u64,
                        plain_kernel: call.algo.to_string(),
                        plain_us,
                        pair_us,
                        kernel,
                        fused_us,
                        fp8_us,
                    });
                }
            }
        }
    }
    if let (true, Some(path)) = (leader, &a.json) {
        write_json(
            path,
            &FusedNormReport {
                date: utc_date(),
                gpu: comm.runtime(0).device().name.clone(),
                dtype: dtype.to_string(),
                world,
                placement,
                timing: if a.graph { "graph" } else { "back-to-back" }.into(),
                batch: a.batch,
                rows,
            },
        )?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
