//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// True when the test command asked that missing tools fail instead of skip.
fn required(var: &str) -> bool {
    std::env::var(var).map(|v| v == "1").unwrap_or(false)
}

/// NVRTC, or None (and a note) when it is absent; with REDJIT_REQUIRE_NVRTC=1
/// (set by scripts/test.sh) absence is a failure.
pub fn nvrtc_or_skip() -> Option<redjit::Nvrtc> {
    match redjit::Nvrtc::load() {
        Ok(n) => Some(n),
        Err(e) if required("REDJIT_REQUIRE_NVRTC") => panic!("REDJIT_REQUIRE_NVRTC=1 but {e}"),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

/// ptxas from $REDJIT_PTXAS or PATH; with REDJIT_REQUIRE_NVRTC=1 absence fails.
pub fn ptxas_or_skip() -> Option<PathBuf> {
    let candidate = std::env::var_os("REDJIT_PTXAS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("ptxas"))
                    .find(|p| p.is_file())
            })
        });
    match candidate.filter(|p| p.is_file()) {
        Some(p) => Some(p),
        None if required("REDJIT_REQUIRE_NVRTC") => {
            panic!("REDJIT_REQUIRE_NVRTC=1 but ptxas was not found")
        }
        None => {
            eprintln!("skipping: ptxas not found");
            None
        }
    }
}

/// A GPU runtime, or None when there is no GPU; REDJIT_REQUIRE_GPU=1 turns a
/// missing GPU into a failure, never a silent pass.
pub fn gpu_or_skip() -> Option<redjit::Runtime> {
    match redjit::Runtime::new(0) {
        Ok(rt) => Some(rt),
        Err(e) if required("REDJIT_REQUIRE_GPU") => panic!("REDJIT_REQUIRE_GPU=1 but {e}"),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

/// The numbers of one `ptxas -v` report.
#[derive(Debug, Default)]
pub struct PtxasUsage {
    pub registers: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

impl PtxasUsage {
    pub fn parse(report: &str) -> Option<PtxasUsage> {
        let number_before = |line: &str, unit: &str| -> Option<u32> {
            let i = line.find(unit)?;
            line[..i].split_whitespace().last()?.parse().ok()
        };
        let mut u = PtxasUsage::default();
        let mut seen = (false, false);
        for line in report.lines() {
            if line.contains("stack frame") {
                u.stack_frame = number_before(line, "bytes stack frame")?;
                u.spill_stores = number_before(line, "bytes spill stores")?;
                u.spill_loads = number_before(line, "bytes spill loads")?;
                seen.0 = true;
            }
            if line.contains("Used") && line.contains("registers") {
                u.registers = number_before(line, "registers")?;
                seen.1 = true;
            }
        }
        (seen.0 && seen.1).then_some(u)
    }
}
