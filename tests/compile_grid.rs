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
    for (spec, r) in specs.iter().zip(jit.compile_all(&specs)) {
        let c = r.unwrap();
        let path = dir.join(format!("{}.ptx", spec.name()));
        std::fs::write(&path, c.artifact.ptx().unwrap()).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args(["-v", "--gpu-name", "sm_90", "-o", "/dev/null"])
            .arg(&path)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "ptxas failed on {}:\n{report}",
            spec.name()
        );
        let usage = common::PtxasUsage::parse(&report)
            .unwrap_or_else(|| panic!("no resource report for {}:\n{report}", spec.name()));
        assert_eq!(usage.stack_frame, 0, "{}: {report}", spec.name());
        assert_eq!(usage.spill_stores, 0, "{}: {report}", spec.name());
        assert_eq!(usage.spill_loads, 0, "{}: {report}", spec.name());
        assert!(
            usage.registers > 0 && usage.registers <= 128,
            "{}: {report}",
            spec.name()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
