//! `redjit bench jit`: JIT latency as a fresh process sees it. Each phase is meant
//! to be its own process (a warm load is only honest without in-memory state):
//!   cold  — empty cache dir, compile + load one kernel
//!   warm  — the same kernel, the cache dir already populated (loads from disk)
//!   batch — empty cache dir, compile + load --batch different kernels in parallel

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, ValueEnum};
use redjit_codegen::{DType, KernelSpec, ReduceCopySpec, spec::reduce_copy::UNROLLS};
use redjit_runtime::{Runtime, RuntimeOptions};
use serde::Serialize;

use crate::args::{AnySpec, parse_spec_name};
use crate::cmd_cache::{clear_dir, dir_usage};
use crate::error::{CliError, CliResult};
use crate::report::utc_date;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Phase {
    Cold,
    Warm,
    Batch,
}

impl Phase {
    fn label(self) -> &'static str {
        match self {
            Phase::Cold => "cold",
            Phase::Warm => "warm",
            Phase::Batch => "batch",
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct JitArgs {
    /// Which measurement [default: cold, in a fresh temporary cache dir].
    #[arg(long, value_enum)]
    pub phase: Option<Phase>,

    /// Cache dir shared by the phases' processes (required for warm); cold and batch
    /// delete its entries first. Default: a fresh temporary dir, removed afterwards.
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,

    /// Kernels compiled by the batch phase.
    #[arg(long, default_value_t = 16)]
    pub batch: usize,

    /// The kernel of the cold and warm phases [default: reduce_copy_u4_f32_bf16_TA_T_sum_rn].
    #[arg(long, value_name = "NAME")]
    pub spec: Option<String>,

    /// Append the result as one JSON line to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct JitRecord {
    phase: &'static str,
    date: String,
    gpu: String,
    arch: String,
    kernels: usize,
    /// `Runtime::prepare` wall time: compile (parallel) + module load.
    ms: f64,
    compile_ms: f64,
    module_load_ms: f64,
    /// CUDA context + stream creation.
    context_ms: f64,
    /// All of `Runtime::with_options` (context, stream, device queries, cache setup).
    runtime_init_ms: f64,
    compiled: usize,
    from_disk: usize,
    from_memory: usize,
    cache_dir: String,
}

/// Distinct specs for the batch phase: the matrix over transports and unrolls.
fn batch_specs(count: usize) -> CliResult<Vec<ReduceCopySpec>> {
    let all: Vec<ReduceCopySpec> = DType::ALL
        .iter()
        .filter(|d| d.info().transport)
        .flat_map(|&t| {
            UNROLLS
                .iter()
                .flat_map(move |&u| ReduceCopySpec::matrix(u, t))
        })
        .collect();
    if count == 0 || count > all.len() {
        return Err(CliError::usage(format!(
            "--batch must be between 1 and {} (the distinct reduce_copy kernels)",
            all.len()
        )));
    }
    Ok(all.into_iter().take(count).collect())
}

/// A fresh, empty directory under the system temp dir.
fn fresh_temp_dir() -> CliResult<PathBuf> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("redjit-jit-{}-{nanos:09}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

pub fn jit_cmd(args: &JitArgs) -> CliResult {
    let phase = args.phase.unwrap_or(Phase::Cold);
    let specs: Vec<AnySpec> = match phase {
        Phase::Cold | Phase::Warm => {
            let name = args
                .spec
                .clone()
                .unwrap_or_else(|| ReduceCopySpec::default().name());
            vec![parse_spec_name(&name)?]
        }
        Phase::Batch => {
            if args.spec.is_some() {
                return Err(CliError::usage(
                    "--spec applies to the cold and warm phases",
                ));
            }
            batch_specs(args.batch)?
                .into_iter()
                .map(|s| Box::new(s) as AnySpec)
                .collect()
        }
    };
    if phase == Phase::Warm && args.cache_dir.is_none() {
        return Err(CliError::usage(
            "--phase warm needs --cache-dir DIR, populated by an earlier --phase cold run",
        ));
    }
    redjit_runtime::gpu_available()
        .map_err(|e| CliError::failure(format!("`redjit bench jit` cannot run: {e}")))?;

    let (dir, temporary) = match &args.cache_dir {
        Some(d) => (d.clone(), false),
        None => (fresh_temp_dir()?, true),
    };
    let result = run_phase(phase, &specs, &dir, args.json.as_deref());
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn run_phase(phase: Phase, specs: &[AnySpec], dir: &Path, json: Option<&Path>) -> CliResult {
    match phase {
        Phase::Cold | Phase::Batch => {
            clear_dir(dir).map_err(|e| {
                CliError::failure(format!("cannot empty the cache at {}: {e}", dir.display()))
            })?;
        }
        Phase::Warm => {
            if dir_usage(dir).0 == 0 {
                eprintln!(
                    "redjit: warning: {} holds no cache entries; run --phase cold with it first",
                    dir.display()
                );
            }
        }
    }
    let t0 = Instant::now();
    let rt = Runtime::with_options(RuntimeOptions::default().cache_dir(Some(dir.to_path_buf())))?;
    let runtime_init = t0.elapsed();
    let refs: Vec<&(dyn KernelSpec + Send + Sync)> = specs.iter().map(|s| s.as_ref()).collect();
    let report = rt.prepare(&refs)?;
    let ms = report.wall.as_secs_f64() * 1e3;
    let context_ms = rt.context_time().as_secs_f64() * 1e3;
    println!(
        "jit {}: {ms:.2} ms (compile {:.2} ms, module load {:.2} ms; context {context_ms:.2} ms, compiled {}, from disk {})",
        phase.label(),
        report.compile.as_secs_f64() * 1e3,
        report.load.as_secs_f64() * 1e3,
        report.compiled,
        report.from_disk
    );
    if phase == Phase::Warm && report.from_disk != specs.len() {
        eprintln!(
            "redjit: warning: expected {} kernel(s) from disk, got {} (compiled {})",
            specs.len(),
            report.from_disk,
            report.compiled
        );
    }
    if let Some(path) = json {
        let record = JitRecord {
            phase: phase.label(),
            date: utc_date(),
            gpu: rt.device().name.clone(),
            arch: rt.device().arch.to_string(),
            kernels: report.kernels,
            ms,
            compile_ms: report.compile.as_secs_f64() * 1e3,
            module_load_ms: report.load.as_secs_f64() * 1e3,
            context_ms,
            runtime_init_ms: runtime_init.as_secs_f64() * 1e3,
            compiled: report.compiled,
            from_disk: report.from_disk,
            from_memory: report.from_memory,
            cache_dir: dir.display().to_string(),
        };
        append_json_line(path, &record)?;
    }
    Ok(())
}

fn append_json_line<T: Serialize>(path: &Path, value: &T) -> CliResult {
    let line = serde_json::to_string(value)
        .map_err(|e| CliError::failure(format!("cannot encode JSON: {e}")))?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| CliError::failure(format!("cannot open {}: {e}", path.display())))?;
    writeln!(f, "{line}")
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_specs_are_distinct() {
        let specs = batch_specs(16).unwrap();
        let names: std::collections::HashSet<_> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), 16);
        assert!(batch_specs(0).is_err());
        assert!(batch_specs(10_000).is_err());
    }
}
