//! `redjit selftest`: every kernel family present, checked against its CPU twin on
//! random inputs (with a GPU), or generated and compiled with NVRTC (without one).
//!
//! Exit codes: 0 every check passed on the GPU; 3 no GPU, but every kernel was
//! generated and compiled by NVRTC; 1 a check failed, or NVRTC is missing;
//! 2 bad flags.
//!
//! Where the time goes, and why it is short: NVRTC serialises the programs of
//! one process (commit 1317614), so the cold compile of every
//! kernel (each spec and the twin its launcher picks for misaligned buffers or
//! short rows) is spread over worker processes (`compile`), which fill the
//! disk cache the runtime then loads from. Before, the twins were compiled one
//! by one on their first launch, inside the checks (the H100 run took 84.5 s
//! of checks after 14.6 s of compile; an `_any` twin alone takes 0.15-0.6 s of
//! NVRTC on the CPU machine, 144 of them in series). The checks themselves are small launches with odd sizes, whose CPU
//! twin takes milliseconds; the exhaustive sizes are in the GPU test suite.

mod all_reduce;
pub mod compile;
mod nms;
pub mod norm;
pub mod reduce;
mod reduce_copy;
mod softmax_all;

use std::time::{Duration, Instant};

use clap::Args;
use redjit_codegen::{Arch, Family, KernelSpec};
use redjit_runtime::Runtime;

use crate::args::AnySpec;
use crate::error::{CliError, CliResult, NO_GPU_EXIT};

/// The arch kernels are compiled for when there is no GPU to ask.
const NO_GPU_ARCH: Arch = Arch::SM90;

#[derive(Debug, Clone, Args)]
pub struct SelftestArgs {
    /// Elements per buffer of the full-array checks (odd by default: scalar
    /// tails and partial packs are exercised).
    #[arg(long, default_value_t = 100_003)]
    pub n: usize,

    /// Only these families, comma-separated (reduce-copy, reduce, all-reduce,
    /// norm, nms, softmax-all) [default: all].
    #[arg(long, value_delimiter = ',', value_parser = parse_family)]
    pub family: Vec<Family>,

    /// Compile worker processes [default: the host's cores, at most 16].
    #[arg(long)]
    pub jobs: Option<usize>,

    /// Also write the results as JSON to FILE (the mode, each family's
    /// kernels, checks, failures and milliseconds).
    #[arg(long, value_name = "FILE")]
    pub json: Option<std::path::PathBuf>,
}

/// `--json`: the run's results.
fn write_json(
    args: &SelftestArgs,
    mode: &str,
    results: &[(Family, FamilyResult)],
    t0: Instant,
) -> CliResult {
    let Some(path) = &args.json else {
        return Ok(());
    };
    let families: Vec<serde_json::Value> = results
        .iter()
        .map(|(f, r)| {
            serde_json::json!({
                "family": f.slug(),
                "kernels": r.kernels,
                "checks": r.checks,
                "failures": r.failures,
                "ms": r.time.as_secs_f64() * 1e3,
            })
        })
        .collect();
    let v = serde_json::json!({
        "mode": mode,
        "families": families,
        "total_s": t0.elapsed().as_secs_f64(),
    });
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap_or_default())
        .map_err(|e| CliError::usage(format!("--json {}: {e}", path.display())))
}

/// A family slug with `-` or `_` (`reduce-copy`, `reduce_copy`).
pub fn parse_family(s: &str) -> Result<Family, String> {
    let want = s.trim().replace('-', "_");
    Family::ALL
        .iter()
        .copied()
        .find(|f| f.slug() == want)
        .ok_or_else(|| {
            let names: Vec<String> = Family::ALL
                .iter()
                .map(|f| f.slug().replace('_', "-"))
                .collect();
            format!(
                "unknown kernel family {s:?}: expected one of: {}",
                names.join(", ")
            )
        })
}

/// One row of the table: a family's kernels, checks and verdict.
#[derive(Debug, Default)]
pub struct FamilyResult {
    pub kernels: usize,
    pub checks: usize,
    pub failures: Vec<String>,
    pub time: Duration,
}

impl FamilyResult {
    /// One check's verdict: a wrong result or an error of the call fails this
    /// check, not the whole run.
    pub fn record<T>(&mut self, what: &str, verdict: CliResult<Result<T, String>>) {
        self.checks += 1;
        match verdict {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => self.failures.push(format!("{what}: {e}")),
            Err(e) => self.failures.push(format!("{what}: {e}")),
        }
    }
}

/// What selftest covers of one family: the specs to check (each compiled with
/// the twins its launcher may pick, listed in `compile`).
struct Plan {
    family: Family,
    kernels: usize,
    compile: Vec<AnySpec>,
}

/// Every kernel name selftest compiles for `families` (all where empty): the
/// checked kernels and the twins their launchers may pick, each once, in
/// family order.
pub fn kernel_names(families: &[Family]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    plans(families)
        .into_iter()
        .flat_map(|p| p.compile)
        .map(|s| s.name())
        .filter(|n| seen.insert(n.clone()))
        .collect()
}

fn plans(families: &[Family]) -> Vec<Plan> {
    let wanted = |f: Family| families.is_empty() || families.contains(&f);
    let mut out = Vec::new();
    for &family in Family::ALL.iter().filter(|&&f| wanted(f)) {
        let (kernels, compile) = match family {
            Family::ReduceCopy => {
                let specs = reduce_copy::specs();
                (specs.len(), reduce_copy::compile_list(&specs))
            }
            Family::Reduce => {
                let specs = reduce::specs();
                (specs.len(), reduce::compile_list(&specs))
            }
            // Two ranks placed on the one GPU (the kernels and barrier of two).
            Family::AllReduce => {
                let specs = all_reduce::specs();
                (specs.len(), all_reduce::compile_list(&specs))
            }
            Family::Norm => {
                let compile = norm::compile_list(&norm::specs());
                (compile.len(), compile)
            }
            Family::Nms => {
                let specs = nms::specs();
                (specs.len(), nms::compile_list(&specs))
            }
            Family::SoftmaxAll => (softmax_all::specs().len(), softmax_all::compile_list()),
        };
        out.push(Plan {
            family,
            kernels,
            compile,
        });
    }
    out
}

pub fn selftest_cmd(args: &SelftestArgs) -> CliResult {
    if args.n < 2 {
        return Err(CliError::usage(
            "--n must be at least 2 (one check starts a view one element in)",
        ));
    }
    if args.jobs == Some(0) {
        return Err(CliError::usage("--jobs must be at least 1"));
    }
    let plans = plans(&args.family);
    match redjit_runtime::gpu_available() {
        Ok(_) => on_gpu(&plans, args),
        Err(e) => {
            println!("no GPU ({e}): checking generation and NVRTC compilation only");
            compile_only(&plans, args)
        }
    }
}

fn header() {
    println!(
        "{:<22} {:>8} {:>8} {:>7}  {:<5} {:>9}",
        "family", "configs", "checks", "failed", "", "ms"
    );
}

fn row(label: &str, r: &FamilyResult) {
    let verdict = if r.failures.is_empty() {
        "pass"
    } else {
        "FAIL"
    };
    println!(
        "{label:<22} {:>8} {:>8} {:>7}  {verdict:<5} {:>9.0}",
        r.kernels,
        r.checks,
        r.failures.len(),
        r.time.as_secs_f64() * 1e3
    );
}

/// Without a GPU: every kernel (and the twins its launcher may pick) rendered
/// and compiled to sm_90 cubin, in worker processes. Exit 3 when all pass.
fn compile_only(plans: &[Plan], args: &SelftestArgs) -> CliResult {
    let t0 = Instant::now();
    let mut results = Vec::new();
    let mut total = 0;
    // Through the disk cache where there is one: a second GPU-less run loads
    // what the first compiled.
    let sink = match redjit_runtime::cache::default_dir() {
        Some(dir) => compile::Sink::Disk(dir),
        None => compile::Sink::Memory,
    };
    for p in plans.iter() {
        let names: Vec<String> = p.compile.iter().map(|s| s.name()).collect();
        let out = compile::compile_parallel(
            &names,
            NO_GPU_ARCH,
            &sink,
            compile::jobs(args.jobs, names.len()),
        )?;
        total += names.len();
        results.push((
            p.family,
            FamilyResult {
                kernels: names.len(),
                checks: names.len(),
                failures: out.failed,
                time: out.wall,
            },
        ));
    }
    header();
    for (family, r) in &results {
        row(&format!("{} (compile)", family.slug()), r);
    }
    println!("total {:.1} s", t0.elapsed().as_secs_f64());
    write_json(args, "compile-only", &results, t0)?;
    let failed: Vec<&String> = results.iter().flat_map(|(_, r)| &r.failures).collect();
    if let Some(first) = failed.first() {
        return Err(CliError::failure(format!(
            "{} kernel(s) failed to compile; first: {first}",
            failed.len()
        )));
    }
    Err(CliError::NoGpu(format!(
        "no GPU: {total} kernels generated and compiled for {NO_GPU_ARCH}; nothing was run (exit {NO_GPU_EXIT})"
    )))
}

/// On the GPU: compile everything first (worker processes into the disk cache,
/// then one parallel load), then each family's checks.
fn on_gpu(plans: &[Plan], args: &SelftestArgs) -> CliResult {
    let t0 = Instant::now();
    let rt = Runtime::new(0)?;
    println!(
        "GPU: {} ({}, {} SMs); context {:.0} ms",
        rt.device().name,
        rt.device().arch,
        rt.device().sm_count,
        rt.context_time().as_secs_f64() * 1e3
    );
    // Only what this GPU runs (fp8 reductions need sm_89+).
    let arch = rt.device().arch;
    let all: Vec<&dyn KernelSpec> = plans
        .iter()
        .flat_map(|p| p.compile.iter().map(|s| s.as_ref() as &dyn KernelSpec))
        .filter(|s| s.min_arch() <= arch)
        .collect();
    let tc = Instant::now();
    let mut workers = 0;
    if let Some(dir) = rt.jit().cache().dir() {
        let names: Vec<String> = all.iter().map(|s| s.name()).collect();
        let jobs = compile::jobs(args.jobs, names.len());
        // Kernels already in the cache cost the workers a lookup each.
        let out = compile::compile_parallel(
            &names,
            rt.device().arch,
            &compile::Sink::Disk(dir.to_path_buf()),
            jobs,
        )?;
        workers = out.workers;
        if let Some(first) = out.failed.first() {
            return Err(CliError::failure(format!(
                "{} kernel(s) failed to compile; first: {first}",
                out.failed.len()
            )));
        }
    } else {
        println!("no disk cache: compiling in this process (serial)");
    }
    let prep = rt.prepare(&all)?;
    println!(
        "compiled and loaded {} kernels in {:.0} ms ({} worker process(es); {} from disk, {} compiled here)",
        prep.kernels,
        tc.elapsed().as_secs_f64() * 1e3,
        workers,
        prep.from_disk,
        prep.compiled
    );
    let mut results = Vec::new();
    for p in plans.iter() {
        let r = match p.family {
            Family::ReduceCopy => reduce_copy::check(&rt, args.n)?,
            Family::Reduce => reduce::check(&rt, args.n)?,
            Family::Nms => nms::check(&rt)?,
            Family::SoftmaxAll => softmax_all::check(&rt, args.n)?,
            Family::Norm => norm::check(&rt)?,
            Family::AllReduce => all_reduce::check(args.n, 0)?,
        };
        debug_assert_eq!(r.kernels, p.kernels);
        results.push((p.family, r));
    }
    header();
    for (family, r) in &results {
        row(family.slug(), r);
    }
    println!("total {:.1} s", t0.elapsed().as_secs_f64());
    write_json(args, "gpu", &results, t0)?;
    let failed: Vec<&String> = results.iter().flat_map(|(_, r)| &r.failures).collect();
    for f in failed.iter().take(20) {
        println!("  FAIL {f}");
    }
    match failed.first() {
        None => Ok(()),
        Some(first) => Err(CliError::failure(format!(
            "{} check(s) failed; first: {first}",
            failed.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_parse_with_either_separator() {
        assert_eq!(parse_family("reduce-copy").unwrap(), Family::ReduceCopy);
        assert_eq!(parse_family("reduce_copy").unwrap(), Family::ReduceCopy);
        assert_eq!(parse_family("reduce").unwrap(), Family::Reduce);
        let e = parse_family("softmax").unwrap_err();
        assert!(e.contains("reduce-copy, reduce"), "{e}");
    }

    #[test]
    fn plans_cover_every_family_and_twin() {
        let all = plans(&[]);
        assert_eq!(all.len(), Family::ALL.len());
        for p in &all {
            assert!(p.compile.len() >= p.kernels, "{:?}", p.family);
            let names: std::collections::HashSet<_> = p.compile.iter().map(|s| s.name()).collect();
            assert_eq!(names.len(), p.compile.len(), "{:?}: repeated", p.family);
        }
        assert_eq!(plans(&[Family::Reduce]).len(), 1);
    }
}
