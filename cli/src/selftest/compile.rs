//! Cold compiles spread over worker processes. NVRTC serialises the programs of
//! one process (measured on the H100 machine: 16 kernels took as long on 16
//! threads as one after another), so parallelism needs processes: each worker
//! is this binary (`redjit __compile-worker`, hidden), given kernel names on
//! stdin; it compiles them through `Jit::compile_all` (batched programs) into
//! the shared disk cache, or, without a GPU, into memory only to report errors.
//! The runtime then loads every kernel from the disk cache.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use redjit_codegen::{Arch, KernelSpec};
use redjit_runtime::{CompileCache, Jit, Output, Target};

use crate::args::{AnySpec, parse_spec_name};
use crate::error::{CliError, CliResult};

/// The hidden subcommand's name.
pub const WORKER_COMMAND: &str = "__compile-worker";
/// Fewest kernels worth a worker of their own (a worker's start-up, NVRTC's
/// load included, costs about as much as compiling a few kernels).
const MIN_PER_WORKER: usize = 6;
/// Most workers: NVRTC holds a few hundred MB per program being compiled.
const MAX_JOBS: usize = 16;

/// Where the workers' results go.
pub enum Sink {
    /// The runtime's disk cache, with the runtime's own target for the arch.
    Disk(PathBuf),
    /// Memory only (cubin for the arch): the compile is the check.
    Memory,
}

/// What a parallel compile did.
pub struct Outcome {
    /// `name: error` for each kernel that failed.
    pub failed: Vec<String>,
    pub workers: usize,
    pub wall: Duration,
}

/// Worker processes for `kernels` kernels: `--jobs`, else the host's cores (at
/// most `MAX_JOBS`), never more than the kernels justify.
pub fn jobs(asked: Option<usize>, kernels: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let wanted = asked.unwrap_or(cores.min(MAX_JOBS));
    wanted.min(kernels.div_ceil(MIN_PER_WORKER)).max(1)
}

/// Compiles `names` for `arch` in `jobs` worker processes (round-robin shards,
/// so each gets a mix of small and large kernels). Falls back to this process
/// when the binary cannot be re-run.
pub fn compile_parallel(
    names: &[String],
    arch: Arch,
    sink: &Sink,
    jobs: usize,
) -> CliResult<Outcome> {
    let t0 = Instant::now();
    let exe = match std::env::current_exe() {
        Ok(exe) if jobs > 1 => exe,
        _ => {
            let failed = compile_here(names, arch, sink)?;
            return Ok(Outcome {
                failed,
                workers: 1,
                wall: t0.elapsed(),
            });
        }
    };
    let shards: Vec<Vec<&String>> = (0..jobs)
        .map(|w| names.iter().skip(w).step_by(jobs).collect())
        .collect();
    let mut children = Vec::new();
    for shard in &shards {
        let mut cmd = Command::new(&exe);
        cmd.arg(WORKER_COMMAND).arg("--arch").arg(arch.to_string());
        if let Sink::Disk(dir) = sink {
            cmd.arg("--cache-dir").arg(dir);
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                CliError::failure(format!(
                    "cannot start a compile worker ({}): {e}",
                    exe.display()
                ))
            })?;
        let list: String = shard.iter().map(|n| format!("{n}\n")).collect();
        if let Some(mut stdin) = child.stdin.take() {
            // The worker reads all of stdin before compiling; closing it ends the list.
            stdin.write_all(list.as_bytes()).map_err(|e| {
                CliError::failure(format!("cannot send kernel names to a worker: {e}"))
            })?;
        }
        children.push(child);
    }
    let mut failed = Vec::new();
    for child in children {
        let out = child
            .wait_with_output()
            .map_err(|e| CliError::failure(format!("a compile worker vanished: {e}")))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let reported: Vec<String> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix("FAIL "))
            .map(str::to_string)
            .collect();
        if !out.status.success() && reported.is_empty() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let why = stderr.lines().last().unwrap_or("no message");
            return Err(CliError::failure(format!(
                "a compile worker failed ({}): {why}",
                out.status
            )));
        }
        failed.extend(reported);
    }
    Ok(Outcome {
        failed,
        workers: jobs,
        wall: t0.elapsed(),
    })
}

fn jit_for(arch: Arch, sink: &Sink) -> CliResult<Jit> {
    Ok(match sink {
        Sink::Disk(dir) => Jit::new(arch, CompileCache::on_disk_or_memory(dir)),
        Sink::Memory => Jit::with_target(
            Target {
                arch,
                output: Output::Cubin,
            },
            CompileCache::in_memory(),
        ),
    })
}

/// Compiles in this process; returns `name: error` per failed kernel.
fn compile_here(names: &[String], arch: Arch, sink: &Sink) -> CliResult<Vec<String>> {
    let jit = jit_for(arch, sink)?;
    let specs: Vec<AnySpec> = names
        .iter()
        .map(|n| parse_spec_name(n))
        .collect::<CliResult<_>>()?;
    let refs: Vec<&dyn KernelSpec> = specs
        .iter()
        .map(|s| s.as_ref() as &dyn KernelSpec)
        .collect();
    Ok(jit
        .compile_all(&refs)
        .into_iter()
        .zip(names)
        .filter_map(|(r, n)| {
            r.err()
                .map(|e| format!("{n}: {}", one_line(&e.to_string())))
        })
        .collect())
}

/// An NVRTC log on one line (the first few of its lines).
fn one_line(msg: &str) -> String {
    let lines: Vec<&str> = msg
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(4)
        .collect();
    lines.join(" | ")
}

/// `redjit __compile-worker`: kernel names on stdin, one per line; one
/// `FAIL name: error` line on stdout per failure; exit 1 if any failed.
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    #[arg(long, value_parser = crate::cmd_gen::parse_arch)]
    pub arch: Arch,

    /// The disk cache to fill (else memory only).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
}

pub fn worker_cmd(args: &WorkerArgs) -> CliResult {
    let mut input = String::new();
    std::io::stdin()
        .lock()
        .read_to_string(&mut input)
        .map_err(|e| CliError::failure(format!("cannot read kernel names: {e}")))?;
    let names: Vec<String> = input
        .as_bytes()
        .lines()
        .map_while(Result::ok)
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let sink = match &args.cache_dir {
        Some(d) => Sink::Disk(d.clone()),
        None => Sink::Memory,
    };
    let failed = compile_here(&names, args.arch, &sink)?;
    for f in &failed {
        println!("FAIL {f}");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::failure(format!(
            "{} kernel(s) failed to compile",
            failed.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_are_bounded_by_the_work() {
        assert_eq!(jobs(Some(8), 1), 1);
        assert_eq!(jobs(Some(8), 12), 2);
        assert_eq!(jobs(Some(8), 1000), 8);
        assert_eq!(jobs(Some(1), 1000), 1);
        assert!(jobs(None, 1000) <= MAX_JOBS);
    }

    #[test]
    fn errors_fit_on_one_line() {
        assert_eq!(one_line("a\n\nb\nc\nd\ne"), "a | b | c | d");
    }
}
