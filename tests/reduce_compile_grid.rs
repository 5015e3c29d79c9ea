//! NVRTC compiles every reduce kernel (op x input x accumulator, for the
//! full-array, cluster, block-per-row, warp-per-row and column kernels) for
//! sm_90, to PTX and to cubin, and ptxas reports no stack frame and no spills
//! for any of them.
//! Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::{
    Arch, CompileCache, DType, Jit, KernelSpec, Output, ReduceAxis, ReduceOp, ReduceSpec, Target,
};

fn grid() -> Vec<ReduceSpec> {
    let mut out = Vec::new();
    for &axis in ReduceAxis::ALL {
        for spec in ReduceSpec::matrix(axis) {
            if axis == ReduceAxis::Rows {
                out.push(spec.for_warp_per_row());
            }
            if axis == ReduceAxis::All {
                out.push(spec.for_cluster());
            }
            out.push(spec);
        }
    }
    out
}

#[test]
fn the_grid_is_every_op_dtype_and_accumulator() {
    let specs = grid();
    let inputs = DType::ALL.iter().filter(|d| d.info().reduce_input).count();
    let lossy = ReduceOp::ALL
        .iter()
        .filter(|o| o.info().lossy_accum)
        .count();
    let per_axis = ReduceOp::ALL.len() * inputs + lossy * (inputs - 1);
    // Full arrays and their cluster twins, rows and their warp twins, columns.
    assert_eq!(specs.len(), per_axis * 5);
    for &op in ReduceOp::ALL {
        for &axis in ReduceAxis::ALL {
            assert!(specs.iter().any(|s| s.op == op && s.axis == axis));
        }
    }
}

#[test]
fn every_reduce_kernel_compiles_to_ptx_and_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let specs = grid();
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
    let dir = std::env::temp_dir().join(format!("redjit-reduce-ptxas-{}", std::process::id()));
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
            let u = usage
                .get(&c.name)
                .unwrap_or_else(|| panic!("no resource report for {}:\n{report}", c.name));
            // Launchable at the launch bound: registers x 256 threads fit 64 K.
            let limit = 65_536 / redjit::codegen::spec::reduce::THREADS;
            if u.stack_frame != 0
                || u.spill_stores != 0
                || u.spill_loads != 0
                || u.registers == 0
                || u.registers > limit
            {
                bad.push(format!("{}: {u:?}", c.name));
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
