//! `redjit bench all-reduce`: the per-call time of the all-reduce kernels, with
//! the ranks on every GPU of this machine (one process, peer access proven at
//! start-up) or, with `--same-gpu R`, R ranks placed on GPU 0 (the test
//! placement: it times the kernels and the barrier through one GPU's memory,
//! not NVLink, and says nothing of a multi-GPU all-reduce's speed).
//!
//! Timing: `--batch` calls back to back between CUDA events on the
//! communicator's main stream (every call is ordered with it), the median over
//! `--iters` batches, per call; `--graph` replays the same calls captured in a
//! CUDA graph. Bandwidth as nccl-tests reports it: algbw = bytes / time, busbw
//! = algbw x 2 (R - 1) / R. `--compare` takes `scripts/torch_ref.py --families
//! all_reduce` (NCCL through `torch.distributed`, one process per GPU).

use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use cudarc::driver::CudaStream;
use cudarc::driver::sys::CUstreamCaptureMode;
use redjit_codegen::{AllReduceAlgo, DType};
use redjit_runtime::all_reduce::{Call, CommOptions, Communicator, Placement};
use redjit_runtime::{KernelInput, KernelOutput, gpu_available};
use serde::Serialize;

use crate::devbuf::{DevBuf, Filler};
use crate::error::{CliError, CliResult};
use crate::report::{utc_date, write_json};
use crate::sizes::{fmt_size, parse_sizes};
use crate::timing::{capture_batch, graph_us_per_call, median_us};
use crate::torch_ref::TorchTable;

#[derive(Debug, Clone, Args)]
pub struct AllReduceBenchArgs {
    /// Message sizes in bytes, comma-separated (N, NK, NM, NG binary or 2^P).
    #[arg(long, default_value = "8K,64K,256K,1M,4M,16M,64M,256M")]
    pub bytes: String,

    /// Element type.
    #[arg(long, value_parser = crate::args::parse_dtype, default_value_t = DType::BF16)]
    pub dtype: DType,

    /// Kernels, comma-separated: one-shot, two-stage, two-stage-cp.
    #[arg(long, value_delimiter = ',', default_values_t = vec!["one-shot".to_string(), "two-stage".to_string(), "two-stage-cp".to_string()])]
    pub algos: Vec<String>,

    /// Ranks on GPUs 0..R-1 [default: every GPU].
    #[arg(long)]
    pub ranks: Option<u32>,

    /// R ranks placed on GPU 0 instead (the test placement).
    #[arg(long, value_name = "R", conflicts_with = "ranks")]
    pub same_gpu: Option<u32>,

    /// Calls per pair of events.
    #[arg(long, default_value_t = 20)]
    pub batch: u32,

    /// Timed batches (the median is reported).
    #[arg(long, default_value_t = 20)]
    pub iters: usize,

    /// Untimed batches first.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,

    /// Replay the calls from a CUDA graph instead of issuing them.
    #[arg(long)]
    pub graph: bool,

    /// Inputs in the communicator's registered staging buffers (written there
    /// once, by a first call), so no call copies its input.
    #[arg(long)]
    pub registered: bool,

    /// cudarc's per-buffer event tracking off on the communicator's contexts
    /// (each tracked input and output costs an event wait and a record per call).
    #[arg(long)]
    pub untracked: bool,

    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,

    /// A JSON written by `scripts/torch_ref.py --families all_reduce`: adds NCCL's time.
    #[arg(long, value_name = "TORCH_JSON")]
    pub compare: Option<std::path::PathBuf>,
}

/// One measurement.
#[derive(Debug, Clone, Serialize)]
pub struct AllReduceRow {
    pub kernel: String,
    pub ranks: u32,
    pub placement: String,
    pub dtype: String,
    pub bytes: u64,
    pub timing: String,
    pub median_us: f64,
    /// Host time to issue one call (eager timing only): where it is close to
    /// `median_us`, the host, not the GPU, sets the pace.
    pub host_issue_us: Option<f64>,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    pub nccl_us: Option<f64>,
}

#[derive(Debug, Serialize)]
struct AllReduceReport {
    date: String,
    rows: Vec<AllReduceRow>,
}

fn parse_algo(s: &str) -> CliResult<(AllReduceAlgo, bool)> {
    match s {
        "one-shot" => Ok((AllReduceAlgo::OneShot, false)),
        "two-stage" => Ok((AllReduceAlgo::TwoStage, false)),
        "two-stage-cp" => Ok((AllReduceAlgo::TwoStage, true)),
        _ => Err(CliError::usage(format!(
            "unknown all-reduce kernel {s:?}: one of one-shot, two-stage, two-stage-cp"
        ))),
    }
}

/// Checks what needs no GPU, then runs.
pub fn all_reduce_cmd(a: &AllReduceBenchArgs) -> CliResult {
    let sizes = parse_sizes(&a.bytes).map_err(CliError::usage)?;
    let elem = a.dtype.info().bytes as usize;
    if let Some(&bad) = sizes.iter().find(|&&b| b == 0 || b % elem != 0) {
        return Err(CliError::usage(format!(
            "--bytes {bad}: a message is a positive whole number of {} ({elem} bytes)",
            a.dtype
        )));
    }
    if !matches!(a.dtype, DType::F32 | DType::BF16 | DType::F16) {
        return Err(CliError::usage(format!(
            "--dtype {}: the all-reduce takes f32, bf16 or f16",
            a.dtype
        )));
    }
    let algos: Vec<(AllReduceAlgo, bool)> = a
        .algos
        .iter()
        .map(|s| parse_algo(s))
        .collect::<CliResult<_>>()?;
    if a.batch == 0 || a.iters == 0 {
        return Err(CliError::usage("--batch and --iters must be at least 1"));
    }
    let torch = a.compare.as_deref().map(TorchTable::load).transpose()?;
    let gpus = gpu_available()
        .map_err(|e| CliError::failure(format!("`redjit bench all-reduce` cannot run: {e}")))?;
    let placement = match (a.same_gpu, a.ranks) {
        (Some(world), _) => Placement::SameGpu { ordinal: 0, world },
        (None, ranks) => {
            let world = ranks.unwrap_or(gpus as u32);
            if world < 2 || world as usize > gpus {
                return Err(CliError::failure(format!(
                    "{world} rank(s) on {gpus} GPU(s): a multi-GPU all-reduce needs 2 to {gpus} GPUs here (--same-gpu R places R ranks on GPU 0 instead)"
                )));
            }
            Placement::Devices {
                ordinals: (0..world as usize).collect(),
            }
        }
    };
    let largest = sizes.iter().copied().max().unwrap_or(0);
    // Every captured call takes a graph slot for the communicator's life.
    let captured = if a.graph {
        (sizes.len() * algos.len()) as u32 * a.batch
    } else {
        0
    };
    let comm = Communicator::new(
        placement.clone(),
        CommOptions {
            max_bytes: largest,
            timeout: Duration::from_secs(30),
            graph_slots: captured.max(1),
            no_event_tracking: a.untracked,
            ..CommOptions::default()
        },
    )?;
    let world = comm.world();
    let where_ = match &placement {
        Placement::SameGpu { .. } => format!("{world} ranks on GPU 0 (test placement)"),
        _ => format!("{world} GPUs"),
    };
    println!(
        "all-reduce {} on {where_}, {} calls per pair of events, median of {} after {} warm-up{}{}{}",
        a.dtype,
        a.batch,
        a.iters,
        a.warmup,
        if a.graph {
            ", replayed from a CUDA graph"
        } else {
            ""
        },
        if a.untracked {
            ", cudarc event tracking off"
        } else {
            ""
        },
        if a.registered {
            ", inputs in the registered buffers"
        } else {
            ""
        }
    );
    println!(
        "{:<26} {:>10} {:>10} {:>10} {:>12} {:>12} {:>10} {:>10}",
        "kernel", "bytes", "us", "host us", "algbw GB/s", "busbw GB/s", "NCCL us", "vs NCCL"
    );
    let mut rows = Vec::new();
    for &bytes in &sizes {
        let n = bytes / elem;
        // Each rank's input and output on its own device.
        let mut ins: Vec<DevBuf> = Vec::new();
        let mut outs: Vec<DevBuf> = Vec::new();
        for r in 0..world as usize {
            let s = comm.runtime(r).stream();
            let filler = Filler::new(s, 0x5eed_0000 + r as u64)?;
            ins.push(filler.alloc(a.dtype, n)?);
            outs.push(filler.alloc(a.dtype, n)?);
        }
        // The fills ran on each rank's runtime stream; untracked buffers are
        // not ordered with the communicator's streams by cudarc.
        for r in 0..world as usize {
            comm.runtime(r)
                .stream()
                .synchronize()
                .map_err(|e| CliError::failure(format!("waiting for rank {r}'s inputs: {e}")))?;
        }
        for &(algo, cp_async) in &algos {
            let call = Call {
                cp_async,
                ..Call::sum(algo)
            };
            let kernel = format!(
                "{}{}",
                match algo {
                    AllReduceAlgo::OneShot => "one-shot",
                    AllReduceAlgo::TwoStage => "two-stage",
                },
                if cp_async { "-cp" } else { "" }
            );
            // Built once, outside the timed calls.
            let views: Vec<_> = ins.iter().map(|b| b.view(0, n)).collect();
            let copied: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
            let regs = (0..world as usize)
                .map(|r| comm.registered(r, a.dtype, n))
                .collect::<Result<Vec<_>, _>>()?;
            let in_place: Vec<&dyn KernelInput> =
                regs.iter().map(|r| r as &dyn KernelInput).collect();
            let mut issue_with = |inputs: &[&dyn KernelInput]| -> CliResult {
                let mut out_views: Vec<_> = outs.iter_mut().map(|b| b.view_mut(0, n)).collect();
                let mut outputs: Vec<&mut dyn KernelOutput> =
                    out_views.iter_mut().map(|v| v.output()).collect();
                comm.all_reduce(inputs, &mut outputs, call)?;
                Ok(())
            };
            // An eager call copies each input into its rank's staging buffer:
            // with --registered that copy, made once here, is the input.
            if a.registered {
                issue_with(&copied)?;
            }
            let inputs = if a.registered { &in_place } else { &copied };
            let mut issue = || issue_with(inputs);
            let (us, host_us) = time_calls(&comm, comm.stream(), a, &mut issue)?;
            let algbw = bytes as f64 / us / 1e3;
            let busbw = algbw * 2.0 * f64::from(world - 1) / f64::from(world);
            let nccl_us = torch.as_ref().and_then(|t| {
                t.get_named(&format!("all_reduce_nccl_{}", a.dtype), n as u64, None)
                    .and_then(|e| e.eager_us)
            });
            println!(
                "{:<26} {:>10} {:>10.2} {:>10} {:>12.1} {:>12.1} {:>10} {:>10}",
                kernel,
                fmt_size(bytes as u64),
                us,
                host_us.map_or("-".into(), |v| format!("{v:.2}")),
                algbw,
                busbw,
                nccl_us.map_or("-".into(), |v| format!("{v:.2}")),
                nccl_us.map_or("-".into(), |v| format!("{:.2}x", v / us))
            );
            rows.push(AllReduceRow {
                kernel,
                ranks: world,
                placement: where_.clone(),
                dtype: a.dtype.to_string(),
                bytes: bytes as u64,
                timing: if a.graph { "graph" } else { "back-to-back" }.into(),
                median_us: us,
                host_issue_us: host_us,
                algbw_gbps: algbw,
                busbw_gbps: busbw,
                nccl_us,
            });
        }
    }
    if let Some(path) = &a.json {
        write_json(
            path,
            &AllReduceReport {
                date: utc_date(),
                rows,
            },
        )?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// Median microseconds per call: `a.batch` calls per pair of events on the
/// main stream, issued or replayed from a graph; for issued calls also the
/// median host time to issue one (wall clock over a batch, the GPU drained
/// between batches).
fn time_calls(
    comm: &Communicator,
    stream: &Arc<CudaStream>,
    a: &AllReduceBenchArgs,
    issue: &mut dyn FnMut() -> CliResult,
) -> CliResult<(f64, Option<f64>)> {
    let ctx = comm.runtime(0).context();
    let batch = a.batch as usize;
    if !a.graph {
        let us = median_us(ctx, stream, a.warmup, a.iters, || {
            (0..batch).try_for_each(|_| issue())
        })?;
        let mut host = Vec::with_capacity(a.iters);
        for _ in 0..a.iters {
            let t = std::time::Instant::now();
            (0..batch).try_for_each(|_| issue())?;
            host.push(t.elapsed().as_secs_f64() * 1e6 / batch as f64);
            comm.synchronize()?;
        }
        return Ok((us / batch as f64, Some(crate::timing::median(&mut host))));
    }
    // Outside the capture first: kernels load, nothing allocates inside.
    for _ in 0..a.warmup.max(1) {
        issue()?;
    }
    comm.synchronize()?;
    comm.begin_capture()?;
    let graph = match capture_batch(
        stream,
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        batch,
        issue,
    ) {
        Ok(g) => g,
        Err(e) => {
            comm.cancel_capture();
            return Err(e);
        }
    };
    // The stream's capture has ended: register what it captured.
    comm.end_capture()?;
    Ok((
        graph_us_per_call(ctx, stream, a.iters, batch, &graph)?,
        None,
    ))
}
