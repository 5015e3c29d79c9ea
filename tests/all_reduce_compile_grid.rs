//! NVRTC compiles every all-reduce kernel (world 2..8 x dtype x op x one-shot,
//! two-stage, two-stage with cp.async) for sm_90, to PTX and to cubin, and ptxas
//! reports no stack frame, no spills and registers that fit the launch bound.
//! Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::codegen::spec::all_reduce::{MAX_WORLD, MIN_WORLD};
use redjit::{AllReduceSpec, Arch, CompileCache, Jit, KernelSpec, Output, Target};

fn grid() -> Vec<AllReduceSpec> {
    (MIN_WORLD..=MAX_WORLD)
        .flat_map(AllReduceSpec::matrix)
        .collect()
}

#[test]
fn every_all_reduce_kernel_compiles_to_ptx_and_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let specs = grid();
    assert_eq!(specs.len(), 7 * 3 * 6 * 3);
    for output in [Output::Ptx, Output::Cubin] {
        let jit = Jit::with_target(
            Target {
                arch: Arch::SM90,
                output,
            },
            CompileCache::in_memory(),
        );
        for (spec, r) in specs.iter().zip(jit.compile_all(&specs)) {
            let c = r.unwrap_or_else(|e| panic!("{}: {e}", spec.name()));
            if output == Output::Ptx {
                let ptx = c.artifact.ptx().unwrap();
                assert!(
                    ptx.contains(&format!(".entry {}(", spec.name())),
                    "{}",
                    spec.name()
                );
            } else {
                assert_eq!(&c.artifact.bytes[..4], b"\x7fELF", "{}", spec.name());
            }
        }
    }
}

#[test]
fn ptxas_reports_no_stack_and_no_spills() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let Some(ptxas) = common::ptxas_or_skip() else {
        return;
    };
    let jit = Jit::with_target(
        Target {
            arch: Arch::SM90,
            output: Output::Ptx,
        },
        CompileCache::in_memory(),
    );
    let dir = std::env::temp_dir().join(format!("redjit-ar-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let specs = grid();
    let compiled: Vec<_> = jit
        .compile_all(&specs)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let mut programs: Vec<_> = compiled.iter().map(|c| c.artifact_key).collect();
    programs.dedup();
    let mut checked = 0;
    let mut bad = Vec::new();
    for (p, key) in programs.iter().enumerate() {
        let members: Vec<_> = compiled.iter().filter(|c| c.artifact_key == *key).collect();
        let path = dir.join(format!("program{p}.ptx"));
        std::fs::write(&path, members[0].artifact.ptx().unwrap()).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args(["-v", "--gpu-name", "sm_90", "-o", "/dev/null"])
            .arg(&path)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "ptxas failed on program {p}:\n{report}"
        );
        let usage = common::PtxasUsage::parse_all(&report);
        for c in members {
            let spec: AllReduceSpec = c.name.parse().unwrap();
            let u = usage
                .get(&c.name)
                .unwrap_or_else(|| panic!("no resource report for {}:\n{report}", c.name));
            let limit = 65_536 / spec.threads();
            if u.stack_frame != 0
                || u.spill_stores != 0
                || u.spill_loads != 0
                || u.registers == 0
                || u.registers > limit
            {
                bad.push(format!("{}: {u:?} (limit {limit})", c.name));
            }
            checked += 1;
        }
    }
    assert_eq!(checked, specs.len());
    assert!(
        bad.is_empty(),
        "stack, spills or too many registers:\n{}",
        bad.join("\n")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
