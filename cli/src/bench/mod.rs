//! `redjit bench <reduce-copy|reduce|all|jit>`: bandwidth of kernels over a
//! sweep of sizes, next to the device-to-device copy measured at each size in
//! the same run (the roofline) and, with `--compare`, PyTorch run on the same
//! machine by `scripts/torch_ref.py`.
//!
//! Method: CUDA events around each launch, the median of `--iters` launches
//! after `--warmup`; each measurement rotates over as many copies of its
//! buffers as it takes to cover 4x the L2 cache, so no launch finds its inputs
//! in L2 (at 2^28 elements one copy is already 20x L2).

mod all_reduce;
pub(crate) mod nms;
pub mod norm;
pub mod reduce;
mod reduce_copy;
mod softmax_all;

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use redjit_codegen::DType;
use redjit_runtime::{DeviceInfo, Runtime, RuntimeOptions};
use serde::{Deserialize, Serialize};

use crate::bench_jit::{JitArgs, jit_cmd};
use crate::cmd_cache::fmt_bytes;
use crate::devbuf::{DevBuf, Filler};
use crate::error::{CliError, CliResult, DriverContext};
use crate::report::{utc_date, write_json};
use crate::sizes::fmt_size;
use crate::timing::{HOLD_US, Hold, LaunchGap, median_us};
use crate::torch_ref::TorchEntry;
use crate::torch_ref::TorchTable;

pub use all_reduce::AllReduceBenchArgs;
pub use nms::NmsBenchArgs;
pub use norm::NormBenchArgs;
pub use reduce::ReduceBenchArgs;
pub use reduce_copy::ReduceCopyBenchArgs;
pub use softmax_all::SoftmaxAllBenchArgs;

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchCmd,
}

#[derive(Debug, Clone, Subcommand)]
pub enum BenchCmd {
    /// Bandwidth of every reduce_copy configuration (GPU only).
    ReduceCopy(ReduceCopyBenchArgs),
    /// Bandwidth of full-array, row and column reductions (GPU only).
    Reduce(ReduceBenchArgs),
    /// Softmax, log-softmax, layer norm and RMS norm over rows: large, long-row and LLM shapes (GPU only).
    Norm(NormBenchArgs),
    /// Non-maximum suppression of random boxes, the whole call (GPU only);
    /// --sizes are box counts [default: 20000].
    Nms(NmsBenchArgs),
    /// Whole-array softmax and log-softmax, both launches, f32 and bf16 (GPU only).
    SoftmaxAll(SoftmaxAllBenchArgs),
    /// All-reduce kernels across this machine's GPUs (or --same-gpu R ranks on
    /// one), per-call time and nccl-tests' algbw/busbw, NCCL beside (GPU only).
    AllReduce(AllReduceBenchArgs),
    /// Every family with its default kernels, one table, one plot (GPU only).
    All(AllBenchArgs),
    /// JIT latency: context creation, cold compile+load, warm load from disk, batch.
    Jit(JitArgs),
}

/// A list of sizes as `--sizes` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sizes(pub Vec<usize>);

fn parse_sizes_arg(s: &str) -> Result<Sizes, String> {
    crate::sizes::parse_sizes(s).map(Sizes)
}

/// Flags every family's benchmark takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Elements per buffer, comma-separated for a sweep: N, NK, NM, NG (binary) or
    /// 2^P, e.g. 1M,16M,2^28 [default: 2^28; bench all: 2^20,2^22,2^24,2^26,2^28].
    #[arg(long, alias = "n", value_name = "SIZES", value_parser = parse_sizes_arg)]
    pub sizes: Option<Sizes>,

    /// Timed launches per measurement (the median is reported).
    #[arg(long, default_value_t = 20)]
    pub iters: usize,

    /// Untimed launches before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,

    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// A JSON written by scripts/torch_ref.py: adds PyTorch eager and torch.compile columns.
    #[arg(long, value_name = "TORCH_JSON")]
    pub compare: Option<PathBuf>,

    /// Draw GB/s against size for each kernel, with the copy roofline (.svg or .png).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    /// cudarc's per-buffer event tracking off (every buffer of a benchmark is
    /// used on one stream, so it orders nothing there): launches cost only what
    /// redjit and the driver take.
    #[arg(long)]
    pub untracked: bool,

    /// Whether a timed launch counts the host's time to issue it: `hidden`
    /// holds the GPU busy while the launch is issued (the events time the GPU
    /// alone), `counted` issues it to an idle GPU.
    #[arg(long, value_enum, default_value_t = LaunchGap::Hidden)]
    pub launch_gap: LaunchGap,

    /// Launch nothing cooperatively (`RuntimeOptions::no_cooperative_launch`):
    /// the one-wave layer norm's long rows then take their items by ticket,
    /// as on a partition of the device that refuses the cooperative launch.
    #[arg(long)]
    pub no_cooperative_launch: bool,
}

#[derive(Debug, Clone, Args)]
pub struct AllBenchArgs {
    #[command(flatten)]
    pub common: Common,
}

/// The sweep `bench all` runs unless told otherwise.
const ALL_SIZES: &[usize] = &[1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28];
/// The size a single-family bench runs unless told otherwise.
const DEFAULT_SIZE: usize = 1 << 28;
/// Rotated buffer sets cover at least this many times the L2 cache.
const ROTATE_L2_TIMES: u64 = 4;
/// Most rotated copies of one measurement's buffers.
const MAX_ROTATIONS: u64 = 256;

impl Common {
    /// The flags the family tests build their cases from: one timed launch,
    /// no warm-up, no files.
    #[cfg(test)]
    pub fn for_tests() -> Common {
        Common {
            sizes: None,
            iters: 1,
            warmup: 0,
            json: None,
            compare: None,
            plot: None,
            untracked: false,
            launch_gap: LaunchGap::Hidden,
            no_cooperative_launch: false,
        }
    }

    fn sizes_or(&self, default: &[usize]) -> Vec<usize> {
        self.sizes
            .as_ref()
            .map_or_else(|| default.to_vec(), |s| s.0.clone())
    }

    /// Checks everything that needs no GPU: iteration counts, the plot's file
    /// type and font, the --compare file.
    fn check(&self) -> CliResult<Option<TorchTable>> {
        if self.iters == 0 {
            return Err(CliError::usage("--iters must be at least 1"));
        }
        if let Some(p) = &self.plot {
            crate::plot::format_of(p)?;
            crate::plot::ensure_font()?;
        }
        self.compare.as_deref().map(TorchTable::load).transpose()
    }
}

pub fn bench_cmd(args: &BenchArgs) -> CliResult {
    match &args.what {
        BenchCmd::ReduceCopy(a) => {
            let torch = a.common.check()?;
            let specs = reduce_copy::specs(a)?;
            let sizes = a.common.sizes_or(&[DEFAULT_SIZE]);
            run(&a.common, torch, "reduce-copy", |b| {
                reduce_copy::bench(b, a, &specs, &sizes)
            })
        }
        BenchCmd::Reduce(a) => {
            let torch = a.common.check()?;
            let cases = reduce::cases(a, &a.common.sizes_or(&[DEFAULT_SIZE]))?;
            run(&a.common, torch, "reduce", |b| reduce::bench(b, &cases))
        }
        BenchCmd::Norm(a) => {
            let torch = a.common.check()?;
            // Flags checked before the GPU is looked for; the device's table
            // lays the cases out once it is.
            norm::cases(a, &redjit_codegen::tuning::Tuning::ladder())?;
            run(&a.common, torch, "norm", |b| {
                let cases = norm::cases(a, &b.rt.tuning().tuning)?;
                norm::bench(b, &cases, a.offset)
            })
        }
        BenchCmd::Nms(a) => {
            let torch = a.common.check()?;
            let sizes = a.common.sizes_or(nms::DEFAULT_BOXES);
            run(&a.common, torch, "nms", |b| nms::bench(b, a, &sizes))
        }
        BenchCmd::SoftmaxAll(a) => {
            let torch = a.common.check()?;
            let sizes = a.common.sizes_or(softmax_all::DEFAULT_SIZES);
            let specs = softmax_all::specs(a)?;
            run(&a.common, torch, "softmax_all", |b| {
                softmax_all::bench(b, &specs, &sizes)
            })
        }
        BenchCmd::All(a) => {
            let torch = a.common.check()?;
            let sizes = a.common.sizes_or(ALL_SIZES);
            let rc = ReduceCopyBenchArgs::defaults(a.common.clone());
            let rc_specs = reduce_copy::specs(&rc)?;
            let red = ReduceBenchArgs::defaults(a.common.clone());
            let cases = reduce::cases(&red, &sizes)?;
            let norm_args = NormBenchArgs::defaults(a.common.clone());
            run(&a.common, torch, "all", |b| {
                reduce_copy::bench(b, &rc, &rc_specs, &sizes)?;
                reduce::bench(b, &cases)?;
                let norm_cases = norm::cases(&norm_args, &b.rt.tuning().tuning)?;
                norm::bench(b, &norm_cases, 0.0)
            })
        }
        BenchCmd::AllReduce(a) => all_reduce::all_reduce_cmd(a),
        BenchCmd::Jit(a) => jit_cmd(a),
    }
}

/// One benchmarked kernel at one size. Reads older files too (reduce_copy
/// only, one size): missing fields take their defaults.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelRow {
    #[serde(default = "reduce_copy_family")]
    pub family: String,
    pub name: String,
    /// Elements of the (first) input (0 in older files: the report's n).
    #[serde(default)]
    pub n: u64,
    /// Row and column kernels: `ROWSxCOLS`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// reduce_copy: the seed's configuration number (null for one-source forms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unroll: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srcs: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dsts: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_elem: Option<u64>,
    /// Bytes one launch moves: every input read once, every output written once.
    #[serde(default)]
    pub bytes: u64,
    /// Copies of the buffers the launches rotated over.
    #[serde(default)]
    pub rotations: u64,
    pub median_us: f64,
    pub gbps: f64,
    /// Against the device-to-device copy of n f32 in the same run.
    pub pct_of_copy: f64,
    /// Against a copy moving the kernel's own row bytes (x, out and a
    /// residual's two streams: row bytes / 8 f32 read and written) in the same
    /// run. Below a few hundred MB a copy's GB/s grows with its size, and
    /// 16-bit rows move half the bytes of n f32, fused residuals twice: this
    /// is the roofline at the kernel's transfer size (norm rows only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_copy_same_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_eager_gbps: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_compile_gbps: Option<f64>,
    /// reduce_copy with --misaligned: (which buffer + how many elements off, median µs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misaligned: Vec<(String, f64)>,
}

impl KernelRow {
    /// A measured kernel of a family without reduce_copy's configuration
    /// columns: `bytes` moved per launch over `rotations` buffer sets in a
    /// median of `median_us`, against the copy of the same run and PyTorch's
    /// entry for it, if any.
    #[allow(clippy::too_many_arguments)]
    pub fn measured(
        family: &str,
        name: String,
        n: u64,
        shape: Option<String>,
        bytes: u64,
        rotations: u64,
        median_us: f64,
        copy_gbps: f64,
        reference: Option<&TorchEntry>,
    ) -> KernelRow {
        let gbps = bytes as f64 / median_us / 1e3;
        KernelRow {
            family: family.into(),
            name,
            n,
            shape,
            config: None,
            unroll: None,
            transport: None,
            srcs: None,
            dsts: None,
            bytes_per_elem: None,
            bytes,
            rotations,
            median_us,
            gbps,
            pct_of_copy: 100.0 * gbps / copy_gbps,
            pct_of_copy_same_bytes: None,
            torch_eager_gbps: reference.and_then(|r| r.eager_gbps),
            torch_compile_gbps: reference.and_then(|r| r.compile_gbps),
            misaligned: Vec::new(),
        }
    }
}

fn reduce_copy_family() -> String {
    "reduce_copy".into()
}

/// The copy roofline at one size: n f32 read and written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CopyPoint {
    pub n: u64,
    pub bytes: u64,
    pub median_us: f64,
    pub gbps: f64,
}

/// The `--json` file (older files lack the copy sweep, L2 and warm-up).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    pub gpu: String,
    pub arch: String,
    pub driver: String,
    pub date: String,
    #[serde(default)]
    pub l2_bytes: u64,
    pub iters: usize,
    #[serde(default)]
    pub warmup: usize,
    /// Whether the timed launches counted the host's issue time (older files
    /// did).
    #[serde(default = "LaunchGap::before_the_field")]
    pub launch_gap: LaunchGap,
    /// Whether nothing was launched cooperatively (`--no-cooperative-launch`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_cooperative_launch: bool,
    /// The largest size measured (older readers take it as the size).
    pub n: u64,
    /// The copy's GB/s at `n`.
    pub copy_gbps: f64,
    #[serde(default)]
    pub copy: Vec<CopyPoint>,
    pub kernels: Vec<KernelRow>,
}

/// The state one bench run shares between families: the runtime, the random
/// fill, the copy roofline per size, the progress bar and the rows so far.
pub struct Bench<'rt> {
    pub rt: &'rt Runtime,
    pub filler: Filler,
    pub common: Common,
    pub torch: Option<TorchTable>,
    pub progress: ProgressBar,
    /// The hold before each timed launch (`--launch-gap hidden`).
    pub hold: Option<Hold>,
    copy: BTreeMap<u64, CopyPoint>,
    pub rows: Vec<KernelRow>,
    header_printed: bool,
}

pub fn run(
    common: &Common,
    torch: Option<TorchTable>,
    what: &str,
    body: impl FnOnce(&mut Bench<'_>) -> CliResult,
) -> CliResult {
    redjit_runtime::gpu_available()
        .map_err(|e| CliError::failure(format!("`redjit bench {what}` cannot run: {e}")))?;
    let rt = Runtime::with_options(
        RuntimeOptions::default()
            .no_event_tracking(common.untracked)
            .no_cooperative_launch(common.no_cooperative_launch),
    )?;
    let dev = rt.device().clone();
    println!(
        "GPU: {} ({}, {} SMs, {} L2), driver {}",
        dev.name,
        dev.arch,
        dev.sm_count,
        fmt_bytes(dev.l2_bytes),
        driver(&dev)
    );
    println!(
        "median of {} launches after {} warm-up, buffers rotated over >= {}x L2, {}{}",
        common.iters,
        common.warmup,
        ROTATE_L2_TIMES,
        match common.launch_gap {
            LaunchGap::Hidden => format!("each after a {HOLD_US} us hold (host issue time hidden)"),
            LaunchGap::Counted => "each issued to an idle GPU (host issue time counted)".into(),
        },
        if common.untracked {
            ", cudarc event tracking off"
        } else {
            ""
        }
    );
    if common.no_cooperative_launch {
        println!("no cooperative launch: one-wave kernels take their items by ticket");
    }
    if let Some(t) = &torch {
        let m = &t.meta;
        println!(
            "torch reference: {} on {}, copy {} GB/s",
            m.torch.as_deref().unwrap_or("?"),
            m.gpu.as_deref().unwrap_or("?"),
            m.copy_gbps.map_or("?".into(), |g| format!("{g:.1}"))
        );
        if m.gpu.as_deref().is_some_and(|g| g != dev.name) {
            eprintln!("redjit: warning: the torch reference ran on a different GPU");
        }
        if m.launch_gap != common.launch_gap {
            eprintln!(
                "redjit: warning: the torch reference timed with the launch gap {:?}, this run {:?}: the columns do not compare",
                m.launch_gap, common.launch_gap
            );
        }
    }
    let progress = if std::io::stderr().is_terminal() {
        let pb = ProgressBar::new(0);
        pb.set_style(
            ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb
    } else {
        ProgressBar::hidden()
    };
    let mut b = Bench {
        filler: Filler::new(rt.stream(), 0x5eed_1234_abcd_0001)?,
        rt: &rt,
        common: common.clone(),
        torch,
        progress,
        hold: Hold::for_gap(rt.context(), common.launch_gap)?,
        copy: BTreeMap::new(),
        rows: Vec::new(),
        header_printed: false,
    };
    body(&mut b)?;
    b.progress.finish_and_clear();
    let rows = std::mem::take(&mut b.rows);
    let copy: Vec<CopyPoint> = b.copy.values().cloned().collect();
    let largest = copy.last().cloned();
    if let Some(path) = &common.json {
        let report = BenchReport {
            gpu: dev.name.clone(),
            arch: dev.arch.to_string(),
            driver: driver(&dev),
            date: utc_date(),
            l2_bytes: dev.l2_bytes,
            iters: common.iters,
            warmup: common.warmup,
            launch_gap: common.launch_gap,
            no_cooperative_launch: common.no_cooperative_launch,
            n: largest.as_ref().map_or(0, |c| c.n),
            copy_gbps: largest.as_ref().map_or(0.0, |c| c.gbps),
            copy: copy.clone(),
            kernels: rows.clone(),
        };
        write_json(path, &report)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &common.plot {
        let title = format!("{} ({}), {}", dev.name, driver(&dev), utc_date());
        crate::plot::draw(path, &title, &panels(&rows, &copy))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// One panel per family: each kernel's GB/s at each full-array size (matrix
/// shapes are single points of their own family panel too), and the copy.
pub fn panels(rows: &[KernelRow], copy: &[CopyPoint]) -> Vec<crate::plot::Panel> {
    let mut families: Vec<&str> = Vec::new();
    for r in rows {
        if !families.contains(&r.family.as_str()) {
            families.push(&r.family);
        }
    }
    families
        .into_iter()
        .map(|f| {
            let mut series: Vec<crate::plot::Series> = Vec::new();
            for r in rows.iter().filter(|r| r.family == f) {
                let label = match &r.shape {
                    Some(s) => format!("{} {s}", r.name),
                    None => r.name.clone(),
                };
                let p = (r.n as f64, r.gbps);
                match series.iter_mut().find(|s| s.label == label) {
                    Some(s) => s.points.push(p),
                    None => series.push(crate::plot::Series {
                        label,
                        points: vec![p],
                    }),
                }
            }
            crate::plot::Panel {
                title: f.to_string(),
                series,
                roofline: copy.iter().map(|c| (c.n as f64, c.gbps)).collect(),
            }
        })
        .collect()
}

fn driver(dev: &DeviceInfo) -> String {
    format!(
        "{}.{}",
        dev.driver_version / 1000,
        (dev.driver_version % 1000) / 10
    )
}

impl Bench<'_> {
    /// Copies of a `set_bytes` buffer set that cover `ROTATE_L2_TIMES` x L2,
    /// within a quarter of the device's memory.
    pub fn rotations(&self, set_bytes: u64) -> u64 {
        let dev = self.rt.device();
        let want = (ROTATE_L2_TIMES * dev.l2_bytes.max(1)).div_ceil(set_bytes.max(1));
        let fit = (dev.total_mem / 4) / set_bytes.max(1);
        want.min(fit).clamp(1, MAX_ROTATIONS)
    }

    /// Refuses a size whose buffers cannot fit the device at once.
    pub fn check_fits(&self, what: &str, bytes: u64) -> CliResult {
        let total = self.rt.device().total_mem;
        if bytes > total / 10 * 9 {
            return Err(CliError::usage(format!(
                "{what} needs {} of device memory at once, the GPU has {}",
                fmt_bytes(bytes),
                fmt_bytes(total)
            )));
        }
        Ok(())
    }

    /// Median microseconds of `op` on the runtime's stream, timed as every
    /// family's launches are: the warm-up, the iterations and the hold of
    /// `--launch-gap`.
    pub fn median_us(&self, op: impl FnMut() -> CliResult) -> CliResult<f64> {
        self.median_us_held(self.hold.as_ref(), op)
    }

    /// [`Self::median_us`] with `hold` in place of `--launch-gap`'s.
    pub fn median_us_held(
        &self,
        hold: Option<&Hold>,
        op: impl FnMut() -> CliResult,
    ) -> CliResult<f64> {
        median_us(
            self.rt.context(),
            self.rt.stream(),
            hold,
            self.common.warmup,
            self.common.iters,
            op,
        )
    }

    /// The copy's GB/s at n elements (f32), measured once per size.
    pub fn copy_gbps(&mut self, n: usize) -> CliResult<f64> {
        if let Some(c) = self.copy.get(&(n as u64)) {
            return Ok(c.gbps);
        }
        let bytes = 2 * 4 * n as u64;
        self.check_fits("the copy", bytes)?;
        let r = self.rotations(bytes);
        let mut bufs = Vec::new();
        for _ in 0..r {
            bufs.push((
                self.filler.alloc(DType::F32, n)?,
                self.filler.alloc(DType::F32, n)?,
            ));
        }
        let stream = self.rt.stream();
        let mut i = 0usize;
        let us = self.median_us(|| {
            let (src, dst) = &mut bufs[i % r as usize];
            i += 1;
            let (DevBuf::F32(src), DevBuf::F32(dst)) = (src, dst) else {
                return Err(CliError::failure("internal: f32 buffers expected"));
            };
            stream
                .memcpy_dtod(src, dst)
                .during(|| "the device-to-device copy".into())
        })?;
        drop(bufs);
        let gbps = bytes as f64 / us / 1e3;
        self.println(format!(
            "d2d copy of {} f32 ({}): {us:.1} us, {gbps:.1} GB/s (read + write, {r} rotation(s))",
            fmt_size(n as u64),
            fmt_bytes(bytes / 2)
        ));
        self.copy.insert(
            n as u64,
            CopyPoint {
                n: n as u64,
                bytes,
                median_us: us,
                gbps,
            },
        );
        Ok(gbps)
    }

    /// A line above the progress bar.
    pub fn println(&self, line: String) {
        self.progress.suspend(|| println!("{line}"));
    }

    /// Adds measurements to the progress bar's length.
    pub fn expect(&self, measurements: u64) {
        self.progress.inc_length(measurements);
    }

    /// Prints a row under the table header (printed once) and keeps it.
    pub fn push(&mut self, row: KernelRow) {
        let compare = self.torch.is_some();
        if !self.header_printed {
            self.header_printed = true;
            self.println(String::new());
            self.println(header(compare));
            self.println("-".repeat(header(compare).len()));
        }
        self.println(format_row(&row, compare));
        self.progress.inc(1);
        self.rows.push(row);
    }
}

fn header(compare: bool) -> String {
    let mut line = format!(
        "{:<40} {:>11} {:>10} {:>9} {:>7} {:>8}",
        "kernel", "size", "median us", "GB/s", "% copy", "% same B"
    );
    if compare {
        line += &format!(
            " {:>11} {:>13} {:>11}",
            "eager GB/s", "compile GB/s", "vs compile"
        );
    }
    line
}

fn format_row(row: &KernelRow, compare: bool) -> String {
    let size = row.shape.clone().unwrap_or_else(|| fmt_size(row.n));
    let mut line = format!(
        "{:<40} {:>11} {:>10.1} {:>9.1} {:>6.1}% {:>8}",
        row.name,
        size,
        row.median_us,
        row.gbps,
        row.pct_of_copy,
        row.pct_of_copy_same_bytes
            .map_or("-".to_string(), |p| format!("{p:.1}%"))
    );
    if compare {
        let gbps = |v: Option<f64>| v.map_or("-".to_string(), |g| format!("{g:.1}"));
        let ratio = row
            .torch_compile_gbps
            .or(row.torch_eager_gbps)
            .filter(|&g| g > 0.0)
            .map_or("-".to_string(), |g| format!("{:.2}x", row.gbps / g));
        line += &format!(
            " {:>11} {:>13} {:>11}",
            gbps(row.torch_eager_gbps),
            gbps(row.torch_compile_gbps),
            ratio
        );
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(family: &str, name: &str, n: u64, gbps: f64) -> KernelRow {
        KernelRow {
            family: family.into(),
            name: name.into(),
            n,
            shape: None,
            config: None,
            unroll: None,
            transport: None,
            srcs: None,
            dsts: None,
            bytes_per_elem: None,
            bytes: 8 * n,
            rotations: 1,
            median_us: 1.0,
            gbps,
            pct_of_copy: 50.0,
            pct_of_copy_same_bytes: None,
            torch_eager_gbps: None,
            torch_compile_gbps: None,
            misaligned: Vec::new(),
        }
    }

    #[test]
    fn panels_group_by_family_and_kernel() {
        let rows = vec![
            row("reduce_copy", "a", 1, 1.0),
            row("reduce_copy", "a", 2, 2.0),
            row("reduce", "b", 1, 3.0),
        ];
        let copy = vec![CopyPoint {
            n: 1,
            bytes: 8,
            median_us: 1.0,
            gbps: 9.0,
        }];
        let p = panels(&rows, &copy);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].series.len(), 1);
        assert_eq!(p[0].series[0].points.len(), 2);
        assert_eq!(p[1].roofline, vec![(1.0, 9.0)]);
    }

    #[test]
    fn rows_print_with_and_without_torch() {
        let mut r = row("reduce", "reduce_all_sum_f32_f32", 1 << 28, 3000.0);
        assert!(format_row(&r, false).contains("2^28"));
        r.torch_compile_gbps = Some(1500.0);
        assert!(format_row(&r, true).contains("2.00x"));
        assert_eq!(header(true).len(), format_row(&r, true).len());
    }
}
