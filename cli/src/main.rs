//! `redjit`: generate, compile, inspect and benchmark redjit kernels.
//!
//! Exit codes: 0 success, 2 bad input (flags, specs, files named on the command
//! line), 1 failure (no GPU, no NVRTC, driver or I/O errors, a failed check),
//! 3 `selftest` without a GPU whose generation and NVRTC checks passed.

mod args;
mod bench;
mod bench_jit;
mod cmd_cache;
mod cmd_gen;
mod cmd_info;
mod cmd_report;
mod cmd_sass;
mod cmd_tune;
mod devbuf;
mod error;
mod norm_views;
mod plot;
mod report;
mod selftest;
mod sizes;
mod timing;
mod torch_ref;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::error::CliResult;

#[derive(Debug, Parser)]
#[command(
    name = "redjit",
    version,
    about = "JIT-specialised CUDA kernels: generate, compile, inspect, benchmark"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the generated CUDA source of a kernel.
    Gen(cmd_gen::GenArgs),
    /// Each family's kernel-name grammar, with example names.
    List(cmd_gen::ListArgs),
    /// Compile a kernel with NVRTC and print its PTX (no GPU needed).
    Ptx(cmd_gen::PtxArgs),
    /// Compile a kernel to cubin and print its SASS (cuobjdump/nvdisasm; no GPU needed).
    Sass(cmd_sass::SassArgs),
    /// Show the GPU, NVRTC and compile cache this process would use.
    Info(cmd_info::InfoArgs),
    /// Inspect or clear the compile cache on disk.
    Cache(cmd_cache::CacheArgs),
    /// Benchmarks (GPU only).
    Bench(bench::BenchArgs),
    /// Time each candidate strategy of a family on this GPU and write its
    /// tuning table (GPU only).
    Tune(cmd_tune::TuneArgs),
    /// A markdown section (and plot) from a `redjit bench --json` file, or with
    /// --all the whole of BENCHMARKS.md from the result folders (no GPU needed).
    Report(cmd_report::ReportArgs),
    /// Check every kernel family against its CPU twin on the GPU (without one:
    /// generation and NVRTC compilation only, exit 3).
    Selftest(selftest::SelftestArgs),
    /// Internal: compiles the kernel names on stdin (selftest's worker processes).
    #[command(name = "__compile-worker", hide = true)]
    CompileWorker(selftest::compile::WorkerArgs),
}

fn run(cli: &Cli) -> CliResult {
    match &cli.command {
        Command::Gen(a) => cmd_gen::gen_cmd(a),
        Command::List(a) => cmd_gen::list_cmd(a),
        Command::Ptx(a) => cmd_gen::ptx_cmd(a),
        Command::Sass(a) => cmd_sass::sass_cmd(a),
        Command::Info(a) => cmd_info::info_cmd(a),
        Command::Report(a) => cmd_report::report_cmd(a),
        Command::Cache(a) => cmd_cache::cache_cmd(a),
        Command::Bench(a) => bench::bench_cmd(a),
        Command::Tune(a) => cmd_tune::tune_cmd(a),
        Command::Selftest(a) => selftest::selftest_cmd(a),
        Command::CompileWorker(a) => selftest::compile::worker_cmd(a),
    }
}

/// A clap message as one line: its lines up to the usage block, trimmed and
/// joined.
fn one_line(text: &str) -> String {
    let parts: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if parts.is_empty() {
        "error: bad arguments".into()
    } else {
        parts.join(" ")
    }
}

fn main() -> ExitCode {
    // A reader that closes the pipe (`| head`) ends the process quietly, as
    // for any Unix filter, instead of a panic in println!.
    #[cfg(unix)]
    // SAFETY: first thing in main, before any thread exists: resets one
    // signal's disposition to the default.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version print to stdout and exit 0.
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            e.exit()
        }
        // A bad flag or value: clap's message (the flag, the value, the
        // allowed ones, a missing argument's name) joined into one line,
        // without the usage block under it; exit 2.
        Err(e) => {
            eprintln!("{} (see --help)", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_subcommand_parses_its_flags() {
        // A flag defined twice across flattened structs panics only here, when
        // clap hands the matches to the structs.
        let calls: &[&[&str]] = &[
            &[
                "redjit", "tune", "--family", "reduce", "--sizes", "2^20", "--shapes", "64x4096",
            ],
            &[
                "redjit", "tune", "--family", "norm", "--dtypes", "bf16", "--rounds", "2",
            ],
            &[
                "redjit",
                "bench",
                "reduce",
                "--sizes",
                "2^20",
                "--spec",
                "reduce_all_sum_f32_f32_t128u4",
            ],
            &[
                "redjit",
                "bench",
                "norm",
                "--shapes",
                "4x4096",
                "--untracked",
            ],
        ];
        for call in calls {
            let cli = Cli::try_parse_from(*call);
            assert!(cli.is_ok(), "{call:?}: {:?}", cli.err());
        }
    }
}
