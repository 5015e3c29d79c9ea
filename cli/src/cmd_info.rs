//! `redjit info`: the GPU, NVRTC and the compile cache this process would use.

use std::path::PathBuf;

use redjit_codegen::Arch;
use redjit_runtime::{Nvrtc, Runtime, RuntimeOptions};

use crate::cmd_cache::{dir_usage, fmt_bytes};
use crate::error::CliResult;

/// `redjit info` flags.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Print one JSON object (gpu, nvrtc, cache) instead of text.
    #[arg(long)]
    pub json: bool,
}

pub fn info_cmd(args: &InfoArgs) -> CliResult {
    if args.json {
        let v = serde_json::json!({
            "gpu": gpu_json(),
            "nvrtc": nvrtc_json(),
            "cache": cache_json(),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    print_gpu();
    print_nvrtc();
    print_cache();
    Ok(())
}

/// The GPU as `info --json` gives it (`null` fields where there is none).
fn gpu_json() -> serde_json::Value {
    let opts = RuntimeOptions::default().ordinal(0).no_disk_cache(true);
    match Runtime::with_options(opts) {
        Ok(rt) => {
            let d = rt.device();
            let t = rt.tuning();
            serde_json::json!({
                "ordinal": d.ordinal,
                "name": d.name,
                "arch": d.arch.to_string(),
                "sms": d.sm_count,
                "l2_bytes": d.l2_bytes,
                "memory_bytes": d.total_mem,
                "driver": d.driver_version,
                "cooperative_launch": d.cooperative_launch,
                "tuning": t.tuning.chain(),
                "tuning_why": t.why,
                "tuning_measured_here": t.measured_here,
                "autotune": format!("{:?}", rt.autotune_mode()),
            })
        }
        Err(e) => serde_json::json!({ "none": e.to_string() }),
    }
}

fn nvrtc_json() -> serde_json::Value {
    match Nvrtc::load() {
        Ok(n) => serde_json::json!({
            "version": n.version_string(),
            "archs": n.facts.archs.iter().map(|&a| Arch(a).to_string()).collect::<Vec<_>>(),
            "library": nvrtc_path().map(|p| p.display().to_string()),
        }),
        Err(e) => serde_json::json!({ "none": e.to_string() }),
    }
}

fn cache_json() -> serde_json::Value {
    match redjit_runtime::cache::default_dir() {
        Some(dir) => {
            let (count, total) = dir_usage(&dir);
            serde_json::json!({
                "dir": dir.display().to_string(),
                "exists": dir.is_dir(),
                "entries": count,
                "bytes": total,
            })
        }
        None => serde_json::json!({ "dir": null }),
    }
}

fn print_gpu() {
    // No disk cache: `info` reports, it creates no directories.
    let opts = RuntimeOptions::default().ordinal(0).no_disk_cache(true);
    match Runtime::with_options(opts) {
        Ok(rt) => {
            let d = rt.device();
            let count = redjit_runtime::gpu_available().unwrap_or(1);
            println!("GPU {}: {} ({count} device(s))", d.ordinal, d.name);
            println!("  arch:    {}", d.arch);
            println!("  SMs:     {}", d.sm_count);
            println!("  L2:      {}", fmt_bytes(d.l2_bytes));
            println!("  memory:  {}", fmt_bytes(d.total_mem));
            println!(
                "  cooperative launch: {}",
                if d.cooperative_launch {
                    "yes"
                } else {
                    "no (one-wave kernels by ticket)"
                }
            );
            println!(
                "  driver:  CUDA {}.{} ({})",
                d.driver_version / 1000,
                (d.driver_version % 1000) / 10,
                d.driver_version
            );
            let t = rt.tuning();
            println!("  tuning:  {} ({})", t.tuning.chain().join(" -> "), t.why);
            let algos = redjit_runtime::all_reduce::choice::AlgoTable::for_tuning(&t.tuning);
            println!("  all-reduce choice: {}", algos.source);
            match t.tuning.reduce_copy_rule() {
                Some(r) => {
                    let held: String = r
                        .write_heavy_blocks_per_sm
                        .iter()
                        .map(|(u, b)| format!(", {b} an SM at unroll {u}"))
                        .collect();
                    let whom = if held.is_empty() {
                        ""
                    } else {
                        " where a kernel writes at least the bytes it reads"
                    };
                    println!(
                        "  reduce_copy: blocks of {} threads{held}{whom} (the tuning table's row)",
                        r.threads
                    )
                }
                None => println!(
                    "  reduce_copy: blocks of {} threads (no table row)",
                    redjit_runtime::DEFAULT_THREADS
                ),
            }
            println!(
                "  autotune: {:?} ({} norm classes kept; REDJIT_AUTOTUNE=1|always)",
                rt.autotune_mode(),
                rt.autotuned().len()
            );
            println!(
                "  context: {:.1} ms to create",
                rt.context_time().as_secs_f64() * 1e3
            );
        }
        Err(e) => println!("GPU: none ({e})"),
    }
}

fn print_nvrtc() {
    match Nvrtc::load() {
        Ok(n) => {
            println!("NVRTC: {}", n.version_string());
            let archs: Vec<String> = n.facts.archs.iter().map(|&a| Arch(a).to_string()).collect();
            println!("  archs:   {}", archs.join(" "));
            match nvrtc_path() {
                Some(p) => println!("  library: {}", p.display()),
                None => println!("  library: (found by the loader)"),
            }
        }
        Err(e) => println!("NVRTC: none ({e})"),
    }
}

fn print_cache() {
    match redjit_runtime::cache::default_dir() {
        Some(dir) => {
            let (count, total) = dir_usage(&dir);
            let state = if dir.is_dir() {
                ""
            } else {
                " (not created yet)"
            };
            println!("cache: {}{state}", dir.display());
            println!("  {count} entries, {}", fmt_bytes(total));
        }
        None => println!("cache: memory only (no REDJIT_CACHE_DIR, XDG_CACHE_HOME or HOME)"),
    }
}

/// The loaded NVRTC library: from this process's memory map when it is there,
/// else the first candidate name in LD_LIBRARY_PATH or /usr/local/cuda/lib64.
fn nvrtc_path() -> Option<PathBuf> {
    if let Some(p) = redjit_runtime::identity::loaded_library() {
        return Some(p);
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    let names = redjit_runtime::libraries::candidates("nvrtc");
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}
