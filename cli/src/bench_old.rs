//! `redjit bench reduce-copy`: bandwidth of every reduce_copy configuration, next to
//! the device-to-device copy (and, with --compare, PyTorch eager and torch.compile).

use std::collections::HashSet;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use redjit_codegen::{DType, KernelSpec, ReduceCopySpec, Role, Rounding};
use redjit_runtime::{
    KernelInput, KernelOutput, LaunchOptions, ReduceCopyArgs, Runtime, Stochastic,
};

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

    /// Rounding mode(s), comma-separated: rn (nearest), sr (stochastic; only
    /// for kernels with a transport destination).
    #[arg(long, value_delimiter = ',', value_parser = crate::args::parse_rounding, default_values_t = vec![Rounding::Nearest])]
    pub rounding: Vec<Rounding>,

    /// Bench these kernels (names as the runtime prints them) instead of the
    /// matrix of every type configuration.
    #[arg(long = "spec", value_name = "NAME")]
    pub specs: Vec<String>,

    /// Also time every misaligned mix: each buffer in turn offset by 1, 2, 3
    /// elements, reported beside the aligned figure.
    #[arg(long)]
    pub misaligned: bool,

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
pub fn bench_specs(unrolls: &[u32], roundings: &[Rounding]) -> CliResult<Vec<ReduceCopySpec>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for &rounding in roundings {
        for &unroll in unrolls {
            for &t in DType::ALL.iter().filter(|d| d.info().transport) {
                for spec in ReduceCopySpec::matrix(unroll, t) {
                    let spec = ReduceCopySpec { rounding, ..spec };
                    if rounding == Rounding::Stochastic && !spec.dsts.contains(&Role::Transport) {
                        continue;
                    }
                    spec.validate()?;
                    let dtypes: Vec<DType> = spec.roles().map(|r| spec.dtype_of(r)).collect();
                    let key = (spec.unroll, dtypes, spec.srcs.len(), spec.op, spec.rounding);
                    if seen.insert(key) {
                        out.push(spec);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Bytes one launch moves per element: each source read once, each destination written once.
pub fn bytes_per_elem(spec: &ReduceCopySpec) -> u64 {
    spec.roles()
        .map(|r| u64::from(spec.dtype_of(r).info().bytes))
        .sum()
}

/// Role letters without load kinds, as scripts/torch_ref.py keys its entries.
fn letters(roles: impl Iterator<Item = Role>) -> String {
    roles.map(|r| r.info().letter).collect()
}

/// Host values every bench launch passes: a scalar for ops that take one, a
/// fixed seed for stochastic rounding.
fn call_args(spec: &ReduceCopySpec) -> ReduceCopyArgs {
    ReduceCopyArgs {
        scalar: spec.op.info().scalar.map(|_| 2.0),
        stochastic: (spec.rounding == Rounding::Stochastic).then_some(Stochastic {
            seed: 0x5eed,
            base: 0,
        }),
    }
}

fn reduce_copy_bench(args: &ReduceCopyBenchArgs) -> CliResult {
    if args.n == 0 {
        return Err(CliError::usage("--n must be at least 1"));
    }
    if args.iters == 0 {
        return Err(CliError::usage("--iters must be at least 1"));
    }
    let specs = if args.specs.is_empty() {
        bench_specs(&args.unroll, &args.rounding)?
    } else {
        args.specs
            .iter()
            .map(|n| n.parse::<ReduceCopySpec>().map_err(CliError::from))
            .collect::<CliResult<Vec<_>>>()?
    };
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
        // SLACK spare elements let a buffer be viewed 1..3 elements in.
        let slack = if args.misaligned { 3 } else { 0 };
        let alloc = |roles: &mut dyn Iterator<Item = Role>| -> CliResult<Vec<DevBuf>> {
            roles
                .map(|r| filler.alloc(spec.dtype_of(r), args.n + slack))
                .collect()
        };
        let srcs = alloc(&mut spec.srcs.iter().map(|s| s.role))?;
        let mut dsts = alloc(&mut spec.dsts.iter().copied())?;
        let call = call_args(spec);
        let mut time_at = |src_off: &[usize], dst_off: &[usize]| -> CliResult<f64> {
            median_us(ctx, stream, args.warmup, args.iters, || {
                let views: Vec<_> = srcs
                    .iter()
                    .zip(src_off)
                    .map(|(b, &o)| b.view(o, args.n))
                    .collect();
                let mut views_mut: Vec<_> = dsts
                    .iter_mut()
                    .zip(dst_off)
                    .map(|(b, &o)| b.view_mut(o, args.n))
                    .collect();
                let ins: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
                let mut outs: Vec<&mut dyn KernelOutput> =
                    views_mut.iter_mut().map(|v| v.output()).collect();
                kernel.launch_with(stream, &ins, &mut outs, call, LaunchOptions::default())?;
                Ok(())
            })
        };
        let (ns, nd) = (spec.srcs.len(), spec.dsts.len());
        let us = time_at(&vec![0; ns], &vec![0; nd])?;
        let mut misaligned = Vec::new();
        if args.misaligned {
            for buffer in 0..ns + nd {
                for off in 1..=3 {
                    let mut so = vec![0; ns];
                    let mut dof = vec![0; nd];
                    if buffer < ns {
                        so[buffer] = off;
                    } else {
                        dof[buffer - ns] = off;
                    }
                    let t = time_at(&so, &dof)?;
                    let label = if buffer < ns {
                        format!("src{buffer}+{off}")
                    } else {
                        format!("dst{}+{off}", buffer - ns)
                    };
                    misaligned.push((label, t));
                }
            }
        }
        // Free this configuration's buffers before the next one allocates.
        drop((srcs, dsts));
        stream
            .synchronize()
            .during(|| format!("finishing {}", spec.name()))?;

        let bpe = bytes_per_elem(spec);
        let gbps = (bpe * args.n as u64) as f64 / us / 1e3;
        let (srcs_l, dsts_l) = (
            letters(spec.srcs.iter().map(|s| s.role)),
            letters(spec.dsts.iter().copied()),
        );
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
            misaligned: Vec::new(),
        };
        print_row(&row, compare);
        for (label, t) in &misaligned {
            let g = (bpe * args.n as u64) as f64 / t / 1e3;
            println!(
                "    misaligned {label:<8} {t:10.1} us {g:9.1} GB/s  {:5.1}% of aligned",
                100.0 * us / t
            );
        }
        rows.push(KernelRow {
            misaligned: misaligned.iter().map(|(l, t)| (l.clone(), *t)).collect(),
            ..row
        });
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
        let specs = bench_specs(&[4], &[Rounding::Nearest]).unwrap();
        // 12 per transport; config 7 (AA_A) and the A_A copy are shared.
        assert_eq!(specs.len(), 22);
        let names: HashSet<_> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), specs.len());
        assert!(bench_specs(&[3], &[Rounding::Nearest]).is_err());
    }

    #[test]
    fn bytes_per_element() {
        let spec = ReduceCopySpec::default(); // bf16 + f32 -> bf16
        assert_eq!(bytes_per_elem(&spec), 8);
    }
}
