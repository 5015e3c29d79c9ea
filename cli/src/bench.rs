//! `redjit bench reduce-copy`: bandwidth of every reduce_copy configuration, next to
//! the device-to-device copy (and, with --compare, PyTorch eager and torch.compile).

use std::collections::HashSet;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use redjit_codegen::{DType, KernelSpec, ReduceCopySpec};
use redjit_runtime::{KernelInput, KernelOutput, Runtime};

use crate::bench_jit::{JitArgs, jit_cmd};
use crate::cmd_cache::fmt_bytes;
use crate::devbuf::{DevBuf, Filler};
use crate::error::{CliError, CliResult, DriverContext};
use crate::report::{BenchReport, KernelRow, print_header, print_row, utc_date, write_json};
use crate::timing::median_us;
use crate::torch_ref::TorchTable;

#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchCmd,
}

#[derive(Debug, Clone, Subcommand)]
pub enum BenchCmd {
    /// Bandwidth of every reduce_copy configuration (GPU only).
    ReduceCopy(ReduceCopyBenchArgs),
    /// JIT latency: context creation, cold compile+load, warm load from disk, batch.
    Jit(JitArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ReduceCopyBenchArgs {
    /// Elements per buffer.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,

    /// Unroll factor(s), comma-separated, e.g. 4 or 1,2,4,8.
    #[arg(long, value_delimiter = ',', default_values_t = vec![ReduceCopySpec::default().unroll])]
    pub unroll: Vec<u32>,

    /// Timed launches per kernel (the median is reported).
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
}

pub fn bench_cmd(args: &BenchArgs) -> CliResult {
    match &args.what {
        BenchCmd::ReduceCopy(a) => reduce_copy_bench(a),
        BenchCmd::Jit(a) => jit_cmd(a),
    }
}

/// The benchmark's kernels: `ReduceCopySpec::matrix` for each unroll and transport
/// dtype, without repeats (a kernel whose buffers are all accum is the same for
/// every transport: the first is kept).
pub fn bench_specs(unrolls: &[u32]) -> CliResult<Vec<ReduceCopySpec>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for &unroll in unrolls {
        for &t in DType::ALL.iter().filter(|d| d.info().transport) {
            for spec in ReduceCopySpec::matrix(unroll, t) {
                spec.validate()?;
                let dtypes = |roles: &[redjit_codegen::Role]| -> Vec<DType> {
                    roles.iter().map(|&r| spec.dtype_of(r)).collect()
                };
                let key = (
                    spec.unroll,
                    dtypes(&spec.srcs),
                    dtypes(&spec.dsts),
                    spec.op,
                    spec.rounding,
                );
                if seen.insert(key) {
                    out.push(spec);
                }
            }
        }
    }
    Ok(out)
}

/// Bytes one launch moves per element: each source read once, each destination written once.
pub fn bytes_per_elem(spec: &ReduceCopySpec) -> u64 {
    spec.srcs
        .iter()
        .chain(&spec.dsts)
        .map(|&r| u64::from(spec.dtype_of(r).info().bytes))
        .sum()
}

fn letters(roles: &[redjit_codegen::Role]) -> String {
    roles.iter().map(|r| r.info().letter).collect()
}

fn reduce_copy_bench(args: &ReduceCopyBenchArgs) -> CliResult {
    if args.n == 0 {
        return Err(CliError::usage("--n must be at least 1"));
    }
    if args.iters == 0 {
        return Err(CliError::usage("--iters must be at least 1"));
    }
    let specs = bench_specs(&args.unroll)?;
    let torch = args.compare.as_deref().map(TorchTable::load).transpose()?;
    redjit_runtime::gpu_available()
        .map_err(|e| CliError::failure(format!("`redjit bench reduce-copy` cannot run: {e}")))?;

    let rt = Runtime::new(0)?;
    let dev = rt.device().clone();
    let driver = format!(
        "{}.{}",
        dev.driver_version / 1000,
        (dev.driver_version % 1000) / 10
    );
    let widest = specs.iter().map(bytes_per_elem).max().unwrap_or(0).max(8);
    let need = widest.saturating_mul(args.n as u64);
    if need > dev.total_mem {
        return Err(CliError::usage(format!(
            "--n {} needs {} of device memory at once, the GPU has {}",
            args.n,
            fmt_bytes(need),
            fmt_bytes(dev.total_mem)
        )));
    }
    println!(
        "GPU: {} ({}, {} SMs, {} L2), driver {driver}",
        dev.name,
        dev.arch,
        dev.sm_count,
        fmt_bytes(dev.l2_bytes)
    );
    println!(
        "n = {} elements, median of {} launches after {} warm-up",
        args.n, args.iters, args.warmup
    );
    let prep = rt.prepare(&specs)?;
    println!(
        "prepared {} kernels in {:.1} ms (compiled {}, from disk {})",
        prep.kernels,
        prep.wall.as_secs_f64() * 1e3,
        prep.compiled,
        prep.from_disk
    );
    if let Some(t) = &torch {
        let m = &t.meta;
        println!(
            "torch reference: {} on {}, n = {}, copy {} GB/s",
            m.torch.as_deref().unwrap_or("?"),
            m.gpu.as_deref().unwrap_or("?"),
            m.n.map_or("?".into(), |n| n.to_string()),
            m.copy_gbps.map_or("?".into(), |g| format!("{g:.1}"))
        );
        if m.n.is_some_and(|n| n != args.n as u64) {
            eprintln!("redjit: warning: the torch reference used a different n");
        }
        if m.gpu.as_deref().is_some_and(|g| g != dev.name) {
            eprintln!("redjit: warning: the torch reference ran on a different GPU");
        }
    }

    let ctx = rt.context();
    let stream = rt.stream();
    let filler = Filler::new(stream, 0x5eed_1234_abcd_0001)?;

    let copy_gbps = {
        let src = filler.alloc(DType::F32, args.n)?;
        let mut dst = filler.alloc(DType::F32, args.n)?;
        let (DevBuf::F32(src), DevBuf::F32(dst)) = (&src, &mut dst) else {
            return Err(CliError::failure("internal: f32 buffers expected"));
        };
        let us = median_us(ctx, stream, args.warmup, args.iters, || {
            stream
                .memcpy_dtod(src, dst)
                .during(|| "the device-to-device copy".into())
        })?;
        let bytes = 2 * 4 * args.n as u64;
        let gbps = bytes as f64 / us / 1e3;
        println!(
            "d2d copy of {} f32: {us:.1} us, {gbps:.1} GB/s (read + write)",
            fmt_bytes(bytes / 2)
        );
        gbps
    };
    println!();

    let compare = torch.is_some();
    print_header(compare);
    let mut rows = Vec::with_capacity(specs.len());
    for spec in &specs {
        let kernel = rt.reduce_copy(spec)?;
        let alloc = |roles: &[redjit_codegen::Role]| -> CliResult<Vec<DevBuf>> {
            roles
                .iter()
                .map(|&r| filler.alloc(spec.dtype_of(r), args.n))
                .collect()
        };
        let srcs = alloc(&spec.srcs)?;
        let mut dsts = alloc(&spec.dsts)?;
        let us = median_us(ctx, stream, args.warmup, args.iters, || {
            let ins: Vec<&dyn KernelInput> = srcs.iter().map(DevBuf::input).collect();
            let mut outs: Vec<&mut dyn KernelOutput> =
                dsts.iter_mut().map(DevBuf::output).collect();
            kernel.launch(stream, &ins, &mut outs)?;
            Ok(())
        })?;
        // Free this configuration's buffers before the next one allocates.
        drop((srcs, dsts));
        stream
            .synchronize()
            .during(|| format!("finishing {}", spec.name()))?;

        let bpe = bytes_per_elem(spec);
        let gbps = (bpe * args.n as u64) as f64 / us / 1e3;
        let (srcs_l, dsts_l) = (letters(&spec.srcs), letters(&spec.dsts));
        let transport = spec.transport.slug().to_string();
        let reference = torch
            .as_ref()
            .and_then(|t| t.get(&transport, &srcs_l, &dsts_l));
        let row = KernelRow {
            name: spec.name(),
            config: spec.seed_config(),
            unroll: spec.unroll,
            transport,
            srcs: srcs_l,
            dsts: dsts_l,
            bytes_per_elem: bpe,
            median_us: us,
            gbps,
            pct_of_copy: 100.0 * gbps / copy_gbps,
            torch_eager_gbps: reference.and_then(|r| r.eager_gbps),
            torch_compile_gbps: reference.and_then(|r| r.compile_gbps),
        };
        print_row(&row, compare);
        rows.push(row);
    }

    if let Some(path) = &args.json {
        let report = BenchReport {
            gpu: dev.name.clone(),
            arch: dev.arch.to_string(),
            driver,
            date: utc_date(),
            n: args.n as u64,
            iters: args.iters,
            copy_gbps,
            kernels: rows,
        };
        write_json(path, &report)?;
        println!("\nwrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_is_deduplicated_across_transports() {
        let specs = bench_specs(&[4]).unwrap();
        // 12 per transport; config 7 (AA_A) and the A_A copy are shared.
        assert_eq!(specs.len(), 22);
        let names: HashSet<_> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), specs.len());
        assert!(bench_specs(&[3]).is_err());
    }

    #[test]
    fn bytes_per_element() {
        let spec = ReduceCopySpec::default(); // bf16 + f32 -> bf16
        assert_eq!(bytes_per_elem(&spec), 8);
    }
}
