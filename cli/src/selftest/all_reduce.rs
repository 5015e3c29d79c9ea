//! all_reduce in selftest: two ranks placed on this one GPU (the test-only
//! placement: the same kernels and barrier as on two GPUs, two buffer sets and
//! two streams), every dtype x algorithm (one-shot, two-stage, two-stage with
//! cp.async) summing inputs made of small integers, so every partial sum is
//! exact in every dtype and the result independent of order (nccl-tests' `-c`
//! idea): compared bit for bit on both ranks, outputs between NaN poison.

use std::time::{Duration, Instant};

use redjit_codegen::{AllReduceSpec, KernelSpec, Op};
use redjit_runtime::all_reduce::{Call, CommOptions, Communicator, Placement};
use redjit_runtime::reference::HostBuffer;
use redjit_runtime::{KernelInput, KernelOutput};

use super::FamilyResult;
use crate::args::AnySpec;
use crate::devbuf::DevBuf;
use crate::error::CliResult;

/// Ranks on the one GPU.
const WORLD: u32 = 2;
/// NaN elements after each output.
const SLACK: usize = 3;

/// The sum kernels of two ranks.
pub fn specs() -> Vec<AllReduceSpec> {
    AllReduceSpec::matrix(WORLD)
        .into_iter()
        .filter(|s| s.op == Op::Sum)
        .collect()
}

pub fn compile_list(specs: &[AllReduceSpec]) -> Vec<AnySpec> {
    specs
        .iter()
        .map(|s| Box::new(s.clone()) as AnySpec)
        .collect()
}

/// Rank r's element i: a small integer, never all zero.
fn exact(rank: u32, i: usize) -> f32 {
    ((i * 7 + rank as usize * 3) % 17) as f32 - 8.0
}

pub fn check(n: usize, ordinal: usize) -> CliResult<FamilyResult> {
    let t0 = Instant::now();
    let specs = specs();
    let mut r = FamilyResult {
        kernels: specs.len(),
        ..FamilyResult::default()
    };
    let comm = Communicator::new(
        Placement::SameGpu {
            ordinal,
            world: WORLD,
        },
        CommOptions::default()
            .timeout(Duration::from_secs(10))
            .max_bytes(n * 4),
    )?;
    let s = comm.stream();
    for spec in &specs {
        let what = format!("{} n={n}", spec.name());
        let verdict = (|| -> CliResult<Result<(), String>> {
            let hosts: Vec<HostBuffer> = (0..WORLD)
                .map(|rank| HostBuffer::from_fn(spec.dtype, n, |i| exact(rank, i)))
                .collect();
            let ins = hosts
                .iter()
                .map(|h| DevBuf::upload_padded(s, h, 0, 0))
                .collect::<CliResult<Vec<_>>>()?;
            let poison = HostBuffer::from_fn(spec.dtype, 0, |_| 0.0);
            let mut outs = (0..WORLD)
                .map(|_| DevBuf::upload_padded(s, &poison, 0, n + SLACK))
                .collect::<CliResult<Vec<_>>>()?;
            {
                let in_views: Vec<_> = ins.iter().map(|d| d.view(0, n)).collect();
                let mut out_views: Vec<_> = outs.iter_mut().map(|d| d.view_mut(0, n)).collect();
                let inputs: Vec<&dyn KernelInput> = in_views.iter().map(|v| v.input()).collect();
                let mut outputs: Vec<&mut dyn KernelOutput> =
                    out_views.iter_mut().map(|v| v.output()).collect();
                let call = Call {
                    cp_async: spec.cp_async,
                    ..Call::sum(spec.algo)
                };
                comm.all_reduce(&inputs, &mut outputs, call)?;
            }
            comm.synchronize()?;
            let want = HostBuffer::from_fn(spec.dtype, n, |i| {
                (0..WORLD).map(|rank| exact(rank, i)).sum::<f32>()
            });
            for (rank, d) in outs.iter().enumerate() {
                let got = d.download(s)?;
                if let Some(i) = (0..n).find(|&i| got.bits(i) != want.bits(i)) {
                    return Ok(Err(format!(
                        "rank {rank} element {i}: {:#x}, want {:#x}",
                        got.bits(i),
                        want.bits(i)
                    )));
                }
                if let Some(i) = (n..n + SLACK).find(|&i| !got.get_f32(i).is_nan()) {
                    return Ok(Err(format!("rank {rank} wrote past its output at {i}")));
                }
            }
            Ok(Ok(()))
        })();
        r.record(&what, verdict);
    }
    r.time = t0.elapsed();
    Ok(r)
}
