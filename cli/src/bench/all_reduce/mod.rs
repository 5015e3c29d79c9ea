//! `redjit bench all-reduce`: the per-call time of the all-reduce kernels, with
//! the ranks on every GPU of this machine (one process, peer access proven at
//! start-up) or, with `--same-gpu R`, R ranks placed on GPU 0 (the test
//! placement: it times the kernels and the barrier through one GPU's memory,
//! not NVLink, and says nothing of a multi-GPU all-reduce's speed).
//!
//! With `--processes`, one process per rank, as NCCL, vLLM and SGLang run: this
//! binary starts itself once per rank with the same arguments and a hidden
//! `--as-rank RANK,WORLD,SOCKET`; each rank process drives rank RANK on GPU
//! RANK (GPU 0 with `--same-gpu`) through `Placement::Process`, the ranks meet
//! at the Unix socket and open each other's buffers through CUDA IPC. Rank 0
//! prints the table and writes the JSON; the parent forwards the ranks' output,
//! waits for them (`--child-timeout`) and fails, quoting their stderr, if any
//! rank fails.
//!
//! Timing: `--batch` calls back to back between CUDA events on the
//! communicator's main stream (every call is ordered with it), the median over
//! `--iters` batches, per call; `--graph` replays the same calls captured in a
//! CUDA graph. With one process per rank each process times its own stream, so
//! the ranks are brought into step before every timed batch. Bandwidth as
//! nccl-tests reports it: algbw = bytes / time, busbw = algbw x 2 (R - 1) / R.
//! `--compare` takes `scripts/torch_ref.py --families all_reduce` (NCCL through
//! `torch.distributed` and PyTorch symmetric memory's one-shot and two-shot
//! all-reduce, one process per GPU); "vs best" is the fastest of the three over
//! ours.

mod norm;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::Args;
use cudarc::driver::sys::CUstreamCaptureMode;
use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr};
use redjit_codegen::spec::all_reduce::{MAX_WORLD, MIN_WORLD};
use redjit_codegen::{AllReduceAlgo, DType};
use redjit_runtime::all_reduce::{
    Call, CommOptions, Communicator, DEFAULT_MAX_BLOCKS, Placement, Quantize,
};
use redjit_runtime::peer::LegacyAlloc;
use redjit_runtime::reference::HostBuffer;
use redjit_runtime::{KernelInput, KernelOutput, gpu_available};
use serde::Serialize;

use crate::devbuf::{DevBuf, DevView, Filler};
use crate::error::{CliError, CliResult, DriverContext};
use crate::report::{utc_date, write_json};
use crate::sizes::{fmt_size, parse_sizes};
use crate::timing::{capture_batch, load_ptx_kernel, median, median_us};
use crate::torch_ref::TorchTable;

#[derive(Debug, Clone, Args)]
pub struct AllReduceBenchArgs {
    /// Message sizes in bytes, comma-separated (N, NK, NM, NG binary or 2^P).
    #[arg(long, default_value = "8K,64K,256K,1M,4M,16M,64M,256M")]
    pub bytes: String,

    /// Element type.
    #[arg(long, value_parser = crate::args::parse_dtype, default_value_t = DType::BF16)]
    pub dtype: DType,

    /// Kernels, comma-separated: one-shot, two-stage, two-stage-cp, push,
    /// push-ll (a push kernel's window is then the largest size); with
    /// --fused-norm, the fused kernels of these.
    #[arg(long, value_delimiter = ',', default_values_t = vec!["one-shot".to_string(), "two-stage".to_string(), "two-stage-cp".to_string(), "push".to_string(), "push-ll".to_string()])]
    pub algos: Vec<String>,

    /// Ranks on GPUs 0..R-1 [default: every GPU].
    #[arg(long)]
    pub ranks: Option<u32>,

    /// R ranks placed on GPU 0 instead (the test placement).
    #[arg(long, value_name = "R", conflicts_with = "ranks")]
    pub same_gpu: Option<u32>,

    /// One process per rank (rank r on GPU r, or on GPU 0 with --same-gpu),
    /// their buffers shared through CUDA IPC, as NCCL, vLLM and SGLang run.
    #[arg(long)]
    pub processes: bool,

    /// With --processes: seconds the rank processes may take in all before
    /// they are killed.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub child_timeout: u64,

    /// Set by --processes on the processes it starts: this process is rank
    /// RANK of WORLD and meets its peers at the Unix socket SOCKET.
    #[arg(
        long,
        value_name = "RANK,WORLD,SOCKET",
        hide = true,
        requires = "processes"
    )]
    pub as_rank: Option<String>,

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

    /// Time the fused all-reduce + residual + RMS norm instead (bf16 or
    /// f16): rows of --tokens x --hidden, beside the plain all-reduce of the
    /// same bytes and the two-launch pair.
    #[arg(long, conflicts_with_all = ["quantized", "registered"])]
    pub fused_norm: bool,

    /// With --fused-norm: tokens (rows), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1usize, 16, 128, 512, 2048])]
    pub tokens: Vec<usize>,

    /// With --fused-norm: hidden sizes (columns), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![4096usize, 8192])]
    pub hidden: Vec<usize>,

    /// Inputs in the communicator's registered staging buffers (written there
    /// once, by a first call), so no call copies its input.
    #[arg(long)]
    pub registered: bool,

    /// The quantized all-reduce (f32 in and out, bf16 with stochastic
    /// rounding on the wire; --dtype f32): its time, and its error against
    /// the f32 all-reduce of the same inputs (on this process's first rank).
    #[arg(long, conflicts_with = "registered")]
    pub quantized: bool,

    /// cudarc's per-buffer event tracking off on the communicator's contexts
    /// (each tracked input and output costs an event wait and a record per call).
    #[arg(long)]
    pub untracked: bool,

    /// Most blocks per rank a launch uses (`CommOptions::max_blocks`, 1 to
    /// the signal buffer's slots; default 64).
    #[arg(long)]
    pub max_blocks: Option<u32>,

    /// The LL kernel's fixed grid (`CommOptions::ll_blocks`, 1 to the signal
    /// buffer's slots, at most one per SM; default all the slots).
    #[arg(long)]
    pub ll_blocks: Option<u32>,

    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,

    /// A JSON written by `scripts/torch_ref.py --families all_reduce`: adds the
    /// times of NCCL and of PyTorch symmetric memory's one-shot and two-shot.
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
    /// The grid cap the communicator launched with (`--max-blocks`).
    pub max_blocks: u32,
    /// Blocks per rank the call launched (`Communicator::grid`; not for
    /// --quantized).
    pub blocks: Option<u32>,
    pub median_us: f64,
    /// Host time to issue one call (eager timing only): where it is close to
    /// `median_us`, the host, not the GPU, sets the pace.
    pub host_issue_us: Option<f64>,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    pub nccl_us: Option<f64>,
    /// `torch.ops.symm_mem.one_shot_all_reduce` (PyTorch symmetric memory).
    pub symm_one_shot_us: Option<f64>,
    /// `torch.ops.symm_mem.two_shot_all_reduce_` (PyTorch symmetric memory).
    pub symm_two_shot_us: Option<f64>,
    /// With --quantized: the largest |quantized - f32| over the largest |f32|
    /// of the f32 all-reduce's output, and the root mean square of
    /// (quantized - f32) over that of f32.
    pub quant_max_rel_err: Option<f64>,
    pub quant_rms_rel_err: Option<f64>,
}

#[derive(Debug, Serialize)]
struct AllReduceReport {
    date: String,
    launch_floor: LaunchFloor,
    rows: Vec<AllReduceRow>,
}

/// An empty kernel's time a launch, measured as the calls are (see
/// [`launch_floor`]).
#[derive(Debug, Clone, Copy, Serialize)]
struct LaunchFloor {
    median_us: f64,
    host_issue_us: Option<f64>,
}

/// A kernel's name in `--algos` and the table: what [`parse_algo`] reads.
fn kernel_name(algo: AllReduceAlgo, cp_async: bool) -> &'static str {
    match (algo, cp_async) {
        (AllReduceAlgo::OneShot, _) => "one-shot",
        (AllReduceAlgo::TwoStage, false) => "two-stage",
        (AllReduceAlgo::TwoStage, true) => "two-stage-cp",
        (AllReduceAlgo::Push, _) => "push",
        (AllReduceAlgo::PushLl, _) => "push-ll",
    }
}

fn parse_algo(s: &str) -> CliResult<(AllReduceAlgo, bool)> {
    match s {
        "one-shot" => Ok((AllReduceAlgo::OneShot, false)),
        "two-stage" => Ok((AllReduceAlgo::TwoStage, false)),
        "two-stage-cp" => Ok((AllReduceAlgo::TwoStage, true)),
        "push" => Ok((AllReduceAlgo::Push, false)),
        "push-ll" => Ok((AllReduceAlgo::PushLl, false)),
        _ => Err(CliError::usage(format!(
            "unknown all-reduce kernel {s:?}: one of one-shot, two-stage, two-stage-cp, push, push-ll"
        ))),
    }
}

fn dtype_rule(dtype: DType) -> CliError {
    CliError::usage(format!(
        "--dtype {dtype}: the all-reduce takes f32, bf16 or f16"
    ))
}

/// A rank count `flag` gave: one host's all-reduce has MIN_WORLD to MAX_WORLD.
fn check_world(flag: &str, world: u32) -> CliResult {
    if (MIN_WORLD..=MAX_WORLD).contains(&world) {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "{flag} {world}: an all-reduce has {MIN_WORLD} to {MAX_WORLD} ranks (one host)"
        )))
    }
}

/// `--as-rank RANK,WORLD,SOCKET` (the socket path last: it may hold commas).
fn parse_as_rank(s: &str) -> CliResult<(u32, u32, PathBuf)> {
    let bad = |rule: &str| CliError::usage(format!("--as-rank {s:?}: {rule}"));
    let mut parts = s.splitn(3, ',');
    let (Some(rank), Some(world), Some(socket)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("expected RANK,WORLD,SOCKET"));
    };
    let rank: u32 = rank
        .trim()
        .parse()
        .map_err(|_| bad("RANK is not a whole number"))?;
    let world: u32 = world
        .trim()
        .parse()
        .map_err(|_| bad("WORLD is not a whole number"))?;
    check_world("--as-rank WORLD", world)?;
    if rank >= world {
        return Err(bad("RANK must be below WORLD"));
    }
    if socket.is_empty() {
        return Err(bad("SOCKET is empty"));
    }
    Ok((rank, world, socket.into()))
}

/// Who this process is.
enum Role {
    /// Every rank, in this process.
    All,
    /// `--processes`: starts the rank processes.
    Parent,
    /// One rank process of `--processes`.
    Rank {
        rank: u32,
        world: u32,
        socket: PathBuf,
    },
}

/// The flags, checked without a GPU.
struct Checked {
    sizes: Vec<usize>,
    elem: usize,
    algos: Vec<(AllReduceAlgo, bool)>,
    torch: Option<TorchTable>,
    role: Role,
}

fn check(a: &AllReduceBenchArgs) -> CliResult<Checked> {
    let sizes = parse_sizes(&a.bytes).map_err(CliError::usage)?;
    let elem = a.dtype.info().bytes as usize;
    if let Some(&bad) = sizes.iter().find(|&&b| b == 0 || b % elem != 0) {
        return Err(CliError::usage(format!(
            "--bytes {bad}: a message is a positive whole number of {} ({elem} bytes)",
            a.dtype
        )));
    }
    if !matches!(a.dtype, DType::F32 | DType::BF16 | DType::F16) {
        return Err(dtype_rule(a.dtype));
    }
    let algos: Vec<(AllReduceAlgo, bool)> = a
        .algos
        .iter()
        .map(|s| parse_algo(s))
        .collect::<CliResult<_>>()?;
    if a.quantized && a.dtype != DType::F32 {
        return Err(CliError::usage(format!(
            "--quantized with --dtype {}: the quantized all-reduce takes f32 in and out",
            a.dtype
        )));
    }
    if let Some(&(algo, cp_async)) = algos
        .iter()
        .find(|(algo, _)| a.quantized && algo.info().in_place)
    {
        return Err(CliError::usage(format!(
            "--quantized with --algos {}: quantized transport is a variant of one-shot and two-stage only",
            kernel_name(algo, cp_async)
        )));
    }
    if a.batch == 0 || a.iters == 0 {
        return Err(CliError::usage("--batch and --iters must be at least 1"));
    }
    if let Some(r) = a.same_gpu {
        check_world("--same-gpu", r)?;
    }
    if let Some(r) = a.ranks {
        check_world("--ranks", r)?;
    }
    if a.processes && a.child_timeout == 0 {
        return Err(CliError::usage(
            "--child-timeout 0: the rank processes need at least 1 second",
        ));
    }
    let role = match (&a.as_rank, a.processes) {
        (Some(s), _) => {
            let (rank, world, socket) = parse_as_rank(s)?;
            if let Some(r) = a.same_gpu.filter(|&r| r != world) {
                return Err(CliError::usage(format!(
                    "--as-rank {s:?} with --same-gpu {r}: WORLD must be the --same-gpu count"
                )));
            }
            Role::Rank {
                rank,
                world,
                socket,
            }
        }
        (None, true) => Role::Parent,
        (None, false) => Role::All,
    };
    let torch = a.compare.as_deref().map(TorchTable::load).transpose()?;
    Ok(Checked {
        sizes,
        elem,
        algos,
        torch,
        role,
    })
}

/// Checks what needs no GPU, then runs (or starts the rank processes).
pub fn all_reduce_cmd(a: &AllReduceBenchArgs) -> CliResult {
    let c = check(a)?;
    let gpus = gpu_available()
        .map_err(|e| CliError::failure(format!("`redjit bench all-reduce` cannot run: {e}")))?;
    let gpu_world = || {
        let world = a.ranks.unwrap_or(gpus as u32);
        if world < 2 || world as usize > gpus {
            return Err(CliError::failure(format!(
                "{world} rank(s) on {gpus} GPU(s): a multi-GPU all-reduce needs 2 to {gpus} GPUs here (--same-gpu R places R ranks on GPU 0 instead)"
            )));
        }
        Ok(world)
    };
    let placement = match &c.role {
        Role::Parent => {
            let world = match a.same_gpu {
                Some(r) => r,
                None => gpu_world()?,
            };
            return launch_ranks(a, world);
        }
        Role::Rank {
            rank,
            world,
            socket,
        } => {
            if a.same_gpu.is_none() && *rank as usize >= gpus {
                return Err(CliError::failure(format!(
                    "--as-rank: rank {rank} of {world} needs GPU {rank}, and there are {gpus} GPU(s) here"
                )));
            }
            Placement::Process {
                ordinal: if a.same_gpu.is_some() {
                    0
                } else {
                    *rank as usize
                },
                rank: *rank,
                world: *world,
                rendezvous: socket.clone(),
                gpu_share: if a.same_gpu.is_some() { *world } else { 1 },
            }
        }
        Role::All => match a.same_gpu {
            Some(world) => Placement::SameGpu { ordinal: 0, world },
            None => Placement::Devices {
                ordinals: (0..gpu_world()? as usize).collect(),
            },
        },
    };
    run(a, &c, placement)
}

/// Where the ranks are, as the table and the rows say it.
fn placement_text(placement: &Placement, world: u32) -> String {
    match placement {
        Placement::SameGpu { .. } => format!("{world} ranks on GPU 0 (test placement)"),
        Placement::Devices { .. } => format!("{world} GPUs"),
        Placement::Process { gpu_share: 1, .. } => {
            format!("{world} processes, one per GPU")
        }
        Placement::Process { .. } => {
            format!("{world} processes on GPU 0 (test placement)")
        }
    }
}

fn us_or_dash(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.2}"))
}

/// The ranks this process drives, timed; rank 0's process prints and writes.
fn run(a: &AllReduceBenchArgs, c: &Checked, placement: Placement) -> CliResult {
    let (sizes, elem, algos) = (&c.sizes, c.elem, &c.algos);
    let fused_largest =
        a.tokens.iter().max().unwrap_or(&0) * a.hidden.iter().max().unwrap_or(&0) * elem;
    let largest = match a.fused_norm {
        true => fused_largest,
        false => sizes.iter().copied().max().unwrap_or(0),
    };
    // Every captured call takes a graph slot for the communicator's life
    // (the fused bench: the plain call, the pair, and two calls for each of up
    // to three layouts and three kernels a shape).
    let captured = match (a.graph, a.fused_norm) {
        (false, _) => 0,
        (true, false) => (sizes.len() * algos.len()) as u32 * a.batch,
        (true, true) => (a.tokens.len() * a.hidden.len() * 20) as u32 * a.batch,
    };
    let comm = Communicator::new(
        placement.clone(),
        CommOptions::default()
            .max_bytes(largest)
            .push_bytes(
                (a.fused_norm || algos.iter().any(|(algo, _)| *algo == AllReduceAlgo::Push))
                    .then_some(largest),
            )
            .ll_bytes(
                (a.fused_norm || algos.iter().any(|(algo, _)| *algo == AllReduceAlgo::PushLl))
                    .then_some(largest),
            )
            .timeout(Duration::from_secs(30))
            .graph_slots(captured.max(1))
            .no_event_tracking(a.untracked || a.fused_norm)
            .max_blocks(a.max_blocks)
            .ll_blocks(a.ll_blocks),
    )?;
    let world = comm.world();
    let where_ = placement_text(&placement, world);
    let one_per_process = matches!(placement, Placement::Process { .. });
    if a.fused_norm {
        let wanted: Vec<AllReduceAlgo> = algos.iter().map(|&(algo, _)| algo).collect();
        return norm::run_fused(&comm, a, &wanted, one_per_process, where_);
    }
    let local = comm.local_ranks();
    let leader = local.contains(&0);
    let floor = launch_floor(&comm, a)?;
    if leader {
        println!(
            "all-reduce {}{} on {where_}, {} calls per pair of events, median of {} after {} warm-up, at most {} blocks per rank{}{}{}",
            a.dtype,
            if a.quantized {
                " quantized (bf16 with stochastic rounding on the wire)"
            } else {
                ""
            },
            a.batch,
            a.iters,
            a.warmup,
            a.max_blocks.unwrap_or(DEFAULT_MAX_BLOCKS),
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
        // PyTorch's, where the reference measured it on this host.
        let torch_floor = c
            .torch
            .as_ref()
            .and_then(|t| t.get_named("launch_floor_torch", 0, None))
            .and_then(|e| e.eager_us);
        println!(
            "launch floor (an empty kernel on the main stream, timed as the calls): {} us a call, host {} us; PyTorch's (torch.cuda._sleep(0), eager): {} us",
            us_or_dash(Some(floor.median_us)),
            us_or_dash(floor.host_issue_us),
            us_or_dash(torch_floor)
        );
        println!(
            "{:<26} {:>10} {:>10} {:>10} {:>12} {:>12} {:>10} {:>11} {:>11} {:>10} {:>7}",
            "kernel",
            "bytes",
            "us",
            "host us",
            "algbw GB/s",
            "busbw GB/s",
            "NCCL us",
            "symm 1s us",
            "symm 2s us",
            "vs best",
            "blocks"
        );
    }
    let mut rows = Vec::new();
    for &bytes in sizes {
        let n = bytes / elem;
        // Each local rank's input and output on its own device; the inputs in
        // cuMemAlloc memory, which a graph's replays read in place.
        let mut ins: Vec<LegacyInput> = Vec::new();
        let mut outs: Vec<DevBuf> = Vec::new();
        for (li, &r) in local.iter().enumerate() {
            let s = comm.runtime(li).stream();
            let filler = Filler::new(s, 0x5eed_0000 + u64::from(r))?;
            ins.push(LegacyInput::copy_of(
                s,
                &filler.alloc(a.dtype, n)?,
                a.dtype,
                n,
            )?);
            outs.push(filler.alloc(a.dtype, n)?);
        }
        // The fills ran on each rank's runtime stream; untracked buffers are
        // not ordered with the communicator's streams by cudarc.
        for (li, &r) in local.iter().enumerate() {
            comm.runtime(li)
                .stream()
                .synchronize()
                .map_err(|e| CliError::failure(format!("waiting for rank {r}'s inputs: {e}")))?;
        }
        let theirs = |what: &str| {
            c.torch
                .as_ref()
                .and_then(|t| {
                    t.get_named(&format!("all_reduce_{what}_{}", a.dtype), n as u64, None)
                })
                .and_then(|e| e.eager_us)
        };
        let nccl_us = theirs("nccl");
        let symm_one_shot_us = theirs("symm_one_shot");
        let symm_two_shot_us = theirs("symm_two_shot");
        let best = [nccl_us, symm_one_shot_us, symm_two_shot_us]
            .into_iter()
            .flatten()
            .min_by(f64::total_cmp);
        for &(algo, cp_async) in algos {
            let call = Call {
                cp_async,
                ..Call::sum(algo)
            };
            let kernel =
                kernel_name(algo, cp_async).to_string() + if a.quantized { "-q" } else { "" };
            // Built once, outside the timed calls.
            let views: Vec<_> = ins.iter().filter_map(|b| b.view(n)).collect();
            let copied: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
            let regs = (0..local.len())
                .map(|li| comm.registered(li, a.dtype, n))
                .collect::<Result<Vec<_>, _>>()?;
            let in_place: Vec<&dyn KernelInput> =
                regs.iter().map(|r| r as &dyn KernelInput).collect();
            let quant = a.quantized.then(|| Quantize::bf16(0x9e37, 0));
            let mut issue_with = |inputs: &[&dyn KernelInput]| -> CliResult {
                let mut out_views: Vec<_> = outs.iter_mut().map(|b| b.view_mut(0, n)).collect();
                let mut outputs: Vec<&mut dyn KernelOutput> =
                    out_views.iter_mut().map(|v| v.output()).collect();
                match quant {
                    Some(q) => comm.all_reduce_quantized(inputs, &mut outputs, call, q)?,
                    None => comm.all_reduce(inputs, &mut outputs, call)?,
                }
                Ok(())
            };
            // An eager call copies each input into its rank's staging buffer:
            // with --registered that copy, made once here, is the input.
            if a.registered {
                issue_with(&copied)?;
            }
            let inputs = if a.registered { &in_place } else { &copied };
            let mut issue = || issue_with(inputs);
            let (us, host_us) = time_calls(&comm, a, one_per_process, &mut issue)?;
            let quant_err = match quant {
                Some(_) => Some(quantized_error(&comm, &copied, &outs, n)?),
                None => None,
            };
            let algbw = bytes as f64 / us / 1e3;
            let busbw = algbw * 2.0 * f64::from(world - 1) / f64::from(world);
            let blocks = match quant {
                Some(_) => None,
                None => Some(comm.grid(a.dtype, call, n)?),
            };
            if leader {
                println!(
                    "{:<26} {:>10} {:>10.2} {:>10} {:>12.1} {:>12.1} {:>10} {:>11} {:>11} {:>10} {:>7}",
                    kernel,
                    fmt_size(bytes as u64),
                    us,
                    us_or_dash(host_us),
                    algbw,
                    busbw,
                    us_or_dash(nccl_us),
                    us_or_dash(symm_one_shot_us),
                    us_or_dash(symm_two_shot_us),
                    best.map_or("-".into(), |v| format!("{:.2}x", v / us)),
                    blocks.map_or("-".into(), |b| b.to_string())
                );
            }
            if let (true, Some((max_rel, rms_rel))) = (leader, quant_err) {
                println!(
                    "{:<26} {:>10} quantized against f32: max |err| / max |f32| {max_rel:.3e}, rms err / rms f32 {rms_rel:.3e}",
                    "", ""
                );
            }
            rows.push(AllReduceRow {
                quant_max_rel_err: quant_err.map(|e| e.0),
                quant_rms_rel_err: quant_err.map(|e| e.1),
                kernel,
                ranks: world,
                placement: where_.clone(),
                dtype: a.dtype.to_string(),
                bytes: bytes as u64,
                timing: if a.graph { "graph" } else { "back-to-back" }.into(),
                max_blocks: a.max_blocks.unwrap_or(DEFAULT_MAX_BLOCKS),
                blocks,
                median_us: us,
                host_issue_us: host_us,
                algbw_gbps: algbw,
                busbw_gbps: busbw,
                nccl_us,
                symm_one_shot_us,
                symm_two_shot_us,
            });
        }
    }
    if let (true, Some(path)) = (leader, &a.json) {
        write_json(
            path,
            &AllReduceReport {
                date: utc_date(),
                launch_floor: floor,
                rows,
            },
        )?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// The quantized call's error on this process's first rank: the output the
/// timed calls left in `outs[0]` (every quantized call on the same inputs,
/// seed and base gives the same bits) against a plain f32 all-reduce of the
/// same inputs (one-shot), as (max |q - f| / max |f|, rms(q - f) / rms(f)).
fn quantized_error(
    comm: &Communicator,
    inputs: &[&dyn KernelInput],
    outs: &[DevBuf],
    n: usize,
) -> CliResult<(f64, f64)> {
    let s = comm.runtime(0).stream();
    let mut exact: Vec<DevBuf> = Vec::new();
    for li in 0..outs.len() {
        exact.push(DevBuf::F32(
            comm.runtime(li)
                .stream()
                .alloc_zeros::<f32>(n)
                .map_err(|e| CliError::failure(format!("allocating the f32 reference: {e}")))?,
        ));
    }
    {
        let mut views: Vec<_> = exact.iter_mut().map(|b| b.view_mut(0, n)).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> =
            views.iter_mut().map(|v| v.output()).collect();
        comm.all_reduce(inputs, &mut outputs, Call::sum(AllReduceAlgo::OneShot))?;
    }
    comm.synchronize()?;
    let (HostBuffer::F32(q), HostBuffer::F32(f)) = (outs[0].download(s)?, exact[0].download(s)?)
    else {
        return Err(CliError::failure(
            "the quantized all-reduce's output is not f32",
        ));
    };
    let (mut max_err, mut max_f, mut sq_err, mut sq_f) = (0f64, 0f64, 0f64, 0f64);
    for (&q, &f) in q.iter().zip(&f) {
        let (q, f) = (f64::from(q), f64::from(f));
        max_err = max_err.max((q - f).abs());
        max_f = max_f.max(f.abs());
        sq_err += (q - f) * (q - f);
        sq_f += f * f;
    }
    Ok((max_err / max_f, (sq_err / sq_f).sqrt()))
}

/// A rank's input in `cuMemAlloc` memory, as a cudarc slice (tracked like any
/// other). A graph's replays read their inputs in place, peers included
/// (through peer access, or CUDA IPC with one process per rank), and both cover
/// `cuMemAlloc` memory only, not the pool memory cudarc allocates
/// (`Communicator::end_capture` refuses that); eager calls copy any input.
pub(super) struct LegacyInput {
    /// A slice over `_alloc`, leaked when dropped: only `_alloc` frees the
    /// memory (after the slice is gone: fields drop after `drop`).
    buf: Option<DevBuf>,
    _alloc: LegacyAlloc,
}

impl LegacyInput {
    /// A copy of the `n` elements of `src`, issued on `stream` (the caller
    /// synchronises it).
    pub(super) fn copy_of(
        stream: &Arc<CudaStream>,
        src: &DevBuf,
        dtype: DType,
        n: usize,
    ) -> CliResult<LegacyInput> {
        let alloc = LegacyAlloc::zeroed(stream.context(), n * dtype.info().bytes as usize)?;
        let buf = match src {
            DevBuf::F32(s) => DevBuf::F32(copy_into(stream, s, &alloc)?),
            DevBuf::BF16(s) => DevBuf::BF16(copy_into(stream, s, &alloc)?),
            DevBuf::F16(s) => DevBuf::F16(copy_into(stream, s, &alloc)?),
            _ => return Err(dtype_rule(dtype)),
        };
        Ok(LegacyInput {
            buf: Some(buf),
            _alloc: alloc,
        })
    }

    /// Its first `n` elements.
    pub(super) fn view(&self, n: usize) -> Option<DevView<'_>> {
        self.buf.as_ref().map(|b| b.view(0, n))
    }
}

impl Drop for LegacyInput {
    fn drop(&mut self) {
        match self.buf.take() {
            Some(DevBuf::F32(s)) => _ = s.leak(),
            Some(DevBuf::BF16(s)) => _ = s.leak(),
            Some(DevBuf::F16(s)) => _ = s.leak(),
            // copy_of makes none of these; never let one free `_alloc`'s memory.
            Some(other) => std::mem::forget(other),
            None => {}
        }
    }
}

/// A slice over `dst` holding a copy of `src`, issued on `stream`; the caller
/// leaks it before `dst` is freed.
fn copy_into<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    src: &CudaSlice<T>,
    dst: &LegacyAlloc,
) -> CliResult<CudaSlice<T>> {
    let bytes = src.len() * std::mem::size_of::<T>();
    if dst.bytes() < bytes {
        return Err(CliError::failure(format!(
            "an input of {bytes} bytes does not fit its {} byte buffer",
            dst.bytes()
        )));
    }
    // SAFETY: `dst` is a live allocation of at least `src.len()` elements of T
    // (checked above), written by the copy below before anything reads it; the
    // slice is leaked, here on error or by LegacyInput's drop, before `dst` is
    // freed, so it never frees memory it does not own.
    let mut slice = unsafe { stream.upgrade_device_ptr::<T>(dst.ptr(), src.len()) };
    match stream.memcpy_dtod(src, &mut slice) {
        Ok(()) => Ok(slice),
        Err(e) => {
            _ = slice.leak();
            Err(e).during(|| {
                format!(
                    "copying an input into cuMemAlloc memory at {:#x}",
                    dst.ptr()
                )
            })
        }
    }
}

/// Median microseconds per call: `a.batch` calls per pair of events on the
/// main stream, issued or replayed from a graph; for issued calls also the
/// median host time to issue one (wall clock over a batch, the GPU drained
/// between batches). `aligned` (one process per rank): before every timed
/// batch one call, then this rank waits for it; its barrier meets every rank,
/// so all start the batch together (each process times only its own stream).
pub(super) fn time_calls(
    comm: &Communicator,
    a: &AllReduceBenchArgs,
    aligned: bool,
    issue: &mut dyn FnMut() -> CliResult,
) -> CliResult<(f64, Option<f64>)> {
    let timed = Timed {
        ctx: comm.runtime(0).context(),
        stream: comm.stream(),
        comm: Some(comm),
        aligned,
    };
    time_batches(&timed, a, issue)
}

/// What [`time_batches`] times on: the main stream of `comm` (a capture's
/// calls registered with it), or a bare stream (`comm` None).
struct Timed<'a> {
    ctx: &'a Arc<CudaContext>,
    stream: &'a Arc<CudaStream>,
    comm: Option<&'a Communicator>,
    aligned: bool,
}

impl Timed<'_> {
    fn synchronize(&self) -> CliResult {
        match self.comm {
            Some(c) => Ok(c.synchronize()?),
            None => self
                .stream
                .synchronize()
                .during(|| "waiting for the stream".into()),
        }
    }
}

/// [`time_calls`] on what `t` says.
fn time_batches(
    t: &Timed<'_>,
    a: &AllReduceBenchArgs,
    issue: &mut dyn FnMut() -> CliResult,
) -> CliResult<(f64, Option<f64>)> {
    let batch = a.batch as usize;
    let timed = |issue: &mut dyn FnMut() -> CliResult,
                 op: &mut dyn FnMut(&mut dyn FnMut() -> CliResult) -> CliResult|
     -> CliResult<f64> {
        let mut times = Vec::with_capacity(a.iters);
        for _ in 0..a.iters {
            if t.aligned {
                issue()?;
                t.synchronize()?;
            }
            times.push(median_us(t.ctx, t.stream, None, 0, 1, || op(&mut *issue))?);
        }
        Ok(median(&mut times) / batch as f64)
    };
    let mut run_batch = |issue: &mut dyn FnMut() -> CliResult| (0..batch).try_for_each(|_| issue());
    if !a.graph {
        for _ in 0..a.warmup {
            run_batch(&mut *issue)?;
        }
        let us = timed(&mut *issue, &mut run_batch)?;
        let mut host = Vec::with_capacity(a.iters);
        for _ in 0..a.iters {
            let t0 = std::time::Instant::now();
            run_batch(&mut *issue)?;
            host.push(t0.elapsed().as_secs_f64() * 1e6 / batch as f64);
            t.synchronize()?;
        }
        return Ok((us, Some(median(&mut host))));
    }
    // Outside the capture first: kernels load, nothing allocates inside.
    for _ in 0..a.warmup.max(1) {
        issue()?;
    }
    t.synchronize()?;
    if let Some(c) = t.comm {
        c.begin_capture()?;
    }
    let graph = match capture_batch(
        t.stream,
        CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        batch,
        issue,
    ) {
        Ok(g) => g,
        Err(e) => {
            if let Some(c) = t.comm {
                c.cancel_capture();
            }
            return Err(e);
        }
    };
    // The stream's capture has ended: register what it captured.
    if let Some(c) = t.comm {
        c.end_capture()?;
    }
    graph.upload().during(|| "uploading the graph".into())?;
    let mut replay =
        |_: &mut dyn FnMut() -> CliResult| graph.launch().during(|| "launching the graph".into());
    // One replay untimed.
    replay(&mut *issue)?;
    t.synchronize()?;
    Ok((timed(&mut *issue, &mut replay)?, None))
}

/// An empty kernel in PTX (no NVRTC needed); the driver JIT-compiles it for
/// any newer GPU.
const EMPTY_KERNEL_PTX: &str =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry rj_empty()\n{\n\tret;\n}\n";

/// The floor under a call's time: an empty kernel (one warp) launched through
/// cudarc on the main stream, timed as the calls are. No call issues in less
/// host time than one launch, nor replays faster than a graph's kernel node.
fn launch_floor(comm: &Communicator, a: &AllReduceBenchArgs) -> CliResult<LaunchFloor> {
    let ctx = comm.runtime(0).context();
    let stream = comm.stream();
    let func = load_ptx_kernel(ctx, EMPTY_KERNEL_PTX, "rj_empty", "empty kernel")?;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (32, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut issue = || -> CliResult {
        // SAFETY: the kernel takes no parameter and touches no memory.
        unsafe { stream.launch_builder(&func).launch(cfg) }
            .during(|| "launching the empty kernel".into())?;
        Ok(())
    };
    let timed = Timed {
        ctx,
        stream,
        comm: None,
        aligned: false,
    };
    let (median_us, host_issue_us) = time_batches(&timed, a, &mut issue)?;
    Ok(LaunchFloor {
        median_us,
        host_issue_us,
    })
}

/// One rank process of `--processes`, its output forwarded as it comes.
struct RankProcess {
    rank: u32,
    child: Child,
    forward: Option<JoinHandle<()>>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    /// How it ended: its status, or why the parent killed it.
    ended: Option<Result<ExitStatus, String>>,
}

impl RankProcess {
    /// Starts rank `rank` of `world`: this binary, `args`, and `--as-rank`.
    fn start(
        exe: &std::path::Path,
        args: &[OsString],
        rank: u32,
        world: u32,
        socket: &std::path::Path,
    ) -> CliResult<RankProcess> {
        let mut child = Command::new(exe)
            .args(args)
            .arg("--as-rank")
            .arg(format!("{rank},{world},{}", socket.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                CliError::failure(format!(
                    "--processes: starting rank {rank} ({}): {e}",
                    exe.display()
                ))
            })?;
        // Rank 0 prints the table: its lines pass through as they are; any
        // other rank's are marked.
        let out = child.stdout.take();
        let forward = std::thread::spawn(move || {
            let Some(out) = out else { return };
            for line in BufReader::new(out).split(b'\n') {
                let Ok(line) = line else { break };
                let line = String::from_utf8_lossy(&line);
                let mut so = std::io::stdout().lock();
                let _ = match rank {
                    0 => writeln!(so, "{line}"),
                    r => writeln!(so, "[rank {r}] {line}"),
                };
            }
        });
        let err = child.stderr.take();
        let stderr = std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut err) = err {
                let _ = err.read_to_end(&mut buf);
            }
            buf
        });
        Ok(RankProcess {
            rank,
            child,
            forward: Some(forward),
            stderr: Some(stderr),
            ended: None,
        })
    }

    fn kill(&mut self, why: String) {
        if self.ended.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.ended = Some(Err(why));
        }
    }

    /// Its output once it has ended: what it wrote to stderr.
    fn finish(&mut self) -> String {
        if let Some(f) = self.forward.take() {
            let _ = f.join();
        }
        let err = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        String::from_utf8_lossy(&err).trim_end().to_string()
    }
}

/// How long the other ranks may go on after one has failed (they would wait
/// for it at a barrier until the communicator's timeout).
const AFTER_FAILURE: Duration = Duration::from_secs(10);

/// `--processes`: this binary once per rank, with this process's arguments and
/// `--as-rank`; waits for every rank (`--child-timeout` in all) and fails
/// quoting the stderr of each rank that failed or was killed.
fn launch_ranks(a: &AllReduceBenchArgs, world: u32) -> CliResult {
    let exe = std::env::current_exe().map_err(|e| {
        CliError::failure(format!(
            "--processes: cannot find this binary to start the ranks: {e}"
        ))
    })?;
    let socket = std::env::temp_dir().join(format!("redjit-ar-bench-{}.sock", std::process::id()));
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let mut ranks: Vec<RankProcess> = Vec::new();
    for r in 0..world {
        match RankProcess::start(&exe, &args, r, world, &socket) {
            Ok(p) => ranks.push(p),
            Err(e) => {
                for p in &mut ranks {
                    p.kill(format!("rank {r} could not be started"));
                    p.finish();
                }
                return Err(e);
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(a.child_timeout);
    let mut failed_at: Option<(u32, Instant)> = None;
    while ranks.iter().any(|p| p.ended.is_none()) {
        for p in ranks.iter_mut().filter(|p| p.ended.is_none()) {
            match p.child.try_wait() {
                Ok(Some(status)) => {
                    if !status.success() && failed_at.is_none() {
                        failed_at = Some((p.rank, Instant::now()));
                    }
                    p.ended = Some(Ok(status));
                }
                Ok(None) => {}
                Err(e) => p.kill(format!("after an error waiting for it: {e}")),
            }
        }
        let now = Instant::now();
        let why = match failed_at {
            _ if now >= deadline => Some(format!("after --child-timeout {} s", a.child_timeout)),
            Some((r, t)) if now - t >= AFTER_FAILURE => Some(format!(
                "{} s after rank {r} had failed",
                AFTER_FAILURE.as_secs()
            )),
            _ => None,
        };
        if let Some(why) = why {
            ranks.iter_mut().for_each(|p| p.kill(why.clone()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&socket);
    let mut failures = Vec::new();
    for p in &mut ranks {
        let stderr = p.finish();
        let quoted = || {
            if stderr.is_empty() {
                "    (nothing on stderr)".to_string()
            } else {
                stderr
                    .lines()
                    .map(|l| format!("    {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        };
        match &p.ended {
            Some(Ok(status)) if status.success() => {
                for l in stderr.lines() {
                    eprintln!("[rank {}] {l}", p.rank);
                }
            }
            Some(Ok(status)) => failures.push(format!("rank {} ({status}):\n{}", p.rank, quoted())),
            Some(Err(why)) => failures.push(format!("rank {} killed {why}:\n{}", p.rank, quoted())),
            None => failures.push(format!("rank {}: not waited for", p.rank)),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(CliError::failure(format!(
            "--processes: {} of {world} rank process(es) failed\n{}",
            failures.len(),
            failures.join("\n")
        )))
    }
}
