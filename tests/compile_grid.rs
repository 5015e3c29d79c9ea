//! NVRTC compiles every supported reduce_copy configuration (unroll x transport x
//! type configuration x 1/2 sources) for sm_90, and ptxas reports no stack frame
//! and no spills for any of them. Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::{Arch, CompileCache, DType, Jit, KernelSpec, Output, ReduceCopySpec, Target};

fn grid() -> Vec<ReduceCopySpec> {
    let mut out = Vec::new();
    for &unroll in redjit::codegen::spec::reduce_copy::UNROLLS {
        for &t in DType::ALL.iter().filter(|d| d.info().transport) {
            out.extend(ReduceCopySpec::matrix(unroll, t));
        }
    }
    out
}

#[test]
fn every_config_compiles_to_ptx_and_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let specs = grid();
    assert_eq!(specs.len(), 4 * 2 * 12);
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
            assert!(!c.artifact.bytes.is_empty(), "{}", spec.name());
            if output == Output::Ptx {
                let ptx = c.artifact.ptx().unwrap();
                assert!(
                    ptx.contains(&format!(".entry {}", spec.name())),
                    "{}",
                    spec.name()
                );
            } else {
                // An ELF image.
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
    let dir = std::env::temp_dir().join(format!("redjit-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let specs = grid();
    // compile_all batches kernels into few programs: run ptxas once per program
    // and check every kernel's own line of the report.
    let compiled: Vec<_> = jit
        .compile_all(&specs)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    let mut checked = 0;
    let mut programs: Vec<_> = compiled.iter().map(|c| c.artifact_key).collect();
    programs.dedup();
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
            let u = usage
                .get(&c.name)
                .unwrap_or_else(|| panic!("no resource report for {}:\n{report}", c.name));
            assert_eq!(u.stack_frame, 0, "{}: {u:?}", c.name);
            assert_eq!(u.spill_stores, 0, "{}: {u:?}", c.name);
            assert_eq!(u.spill_loads, 0, "{}: {u:?}", c.name);
            assert!(u.registers > 0 && u.registers <= 128, "{}: {u:?}", c.name);
            checked += 1;
        }
    }
    assert_eq!(checked, specs.len());
    let _ = std::fs::remove_dir_all(&dir);
}
