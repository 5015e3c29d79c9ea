//! Runs the example's reduce+copy steps on GPU 0 against the CPU twin, after
//! the start-up the README shows: create the runtime, prepare, call.
//!
//! `redjit-example-collectives [n]` (default 2^24 + 3 elements). Prints the CUDA
//! context time apart from the JIT time of the registered kernels, then one
//! `startup:` line to grep; a run on an empty `REDJIT_CACHE_DIR` is cold, the next
//! warm. Exit status: 0 all bit-exact, 1 a mismatch or an error, 2 no GPU.

use std::process::ExitCode;
use std::time::Instant;

use redjit::Runtime;

fn main() -> ExitCode {
    let start = Instant::now();
    let n = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => (1 << 24) + 3,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: redjit-example-collectives [n > 0]");
            return ExitCode::from(1);
        }
    };

    let rt = match Runtime::new(0) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("redjit-example-collectives: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime_ms = start.elapsed().as_secs_f64() * 1e3;
    let jit_start = Instant::now();
    let report = match redjit::prepare_registered(&rt) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("redjit-example-collectives: prepare: {e}");
            return ExitCode::from(1);
        }
    };
    let jit_ms = jit_start.elapsed().as_secs_f64() * 1e3;
    let ready_ms = start.elapsed().as_secs_f64() * 1e3;
    let phase = if report.compiled > 0 { "cold" } else { "warm" };
    let device = rt.device();
    println!(
        "device: {} ({}), driver {}",
        device.name, device.arch, device.driver_version
    );
    println!(
        "CUDA context: {:.1} ms (context + stream; runtime set-up {runtime_ms:.1} ms, apart from the JIT)",
        rt.context_time().as_secs_f64() * 1e3
    );
    println!(
        "JIT at start-up ({phase}): {} [prepare_registered {jit_ms:.2} ms]",
        redjit::registered::describe(&report)
    );
    println!(
        "startup: phase={phase} context_ms={:.3} jit_ms={jit_ms:.3} ready_ms={ready_ms:.3} kernels={} compiled={} from_disk={} from_memory={}",
        rt.context_time().as_secs_f64() * 1e3,
        report.kernels,
        report.compiled,
        report.from_disk,
        report.from_memory
    );
    for r in redjit::registered() {
        println!("registered: {} -> {}", r.function(), r.name());
    }

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let checks = match redjit_example_collectives::run_checks(&rt, n, seed) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("redjit-example-collectives: {e}");
            return ExitCode::from(1);
        }
    };
    let mut ok = true;
    for c in &checks {
        let verdict = if c.mismatches == 0 {
            "bit-exact"
        } else {
            "MISMATCH"
        };
        println!(
            "{:<24} n={} {verdict} vs the CPU twin{}",
            c.function,
            c.n,
            c.first_mismatch
                .as_ref()
                .map(|m| format!(" ({} elements differ; {m})", c.mismatches))
                .unwrap_or_default()
        );
        ok &= c.mismatches == 0;
    }
    println!("seed {seed}");
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
