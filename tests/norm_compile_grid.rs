//! NVRTC compiles the norm kernels for sm_90, to PTX and to cubin, and ptxas
//! reports no stack frame, no spills and registers within the launch bound for
//! each: every row op (softmax safe/online, log-softmax safe/online, layer norm
//! and RMS norm with and without the residual add) x every input x output dtype
//! in a warp, a block and a split layout, and every layout variant of the ladder
//! and the benchmarks for bf16 -> bf16 and f32 -> f32.
//! Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::codegen::spec::norm::{row_ops, variants};
use redjit::{Arch, CompileCache, DType, Jit, KernelSpec, NormLayout, NormSpec, Output, Target};

fn grid() -> Vec<NormSpec> {
    let mut out: Vec<NormSpec> = Vec::new();
    let mut push = |s: NormSpec| {
        if !out.contains(&s) {
            out.push(s);
        }
    };
    for ops in row_ops() {
        for &input in DType::ALL {
            for &output in DType::ALL {
                for cols in [100, 4096, 1 << 20] {
                    push(NormSpec::with(ops, input, output, cols));
                }
            }
        }
        for d in [DType::BF16, DType::F32] {
            for s in variants(&NormSpec::with(ops, d, d, 1)) {
                push(s);
            }
        }
    }
    out
}

#[test]
fn the_grid_has_every_op_dtype_pair_and_layout() {
    let specs = grid();
    for ops in row_ops() {
        for &layout in NormLayout::ALL {
            for &i in DType::ALL {
                for &o in DType::ALL {
                    assert!(
                        specs.iter().any(|s| (s.op, s.residual) == (ops.0, ops.2)
                            && s.layout == layout
                            && (s.input, s.output) == (i, o)),
                        "{ops:?} {layout} {i} {o}"
                    );
                }
            }
        }
    }
    for s in &specs {
        s.validate().unwrap();
    }
}

fn sm90(output: Output) -> Jit {
    Jit::with_target(
        Target {
            arch: Arch::SM90,
            output,
        },
        CompileCache::in_memory(),
    )
}

#[test]
fn every_norm_kernel_compiles_to_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let specs = grid();
    let jit = sm90(Output::Cubin);
    for (spec, r) in specs.iter().zip(jit.compile_all(&specs)) {
        let c = r.unwrap_or_else(|e| panic!("{}: {e}", spec.name()));
        assert_eq!(&c.artifact.bytes[..4], b"\x7fELF", "{}", spec.name());
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
    let jit = sm90(Output::Ptx);
    let dir = std::env::temp_dir().join(format!("redjit-norm-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let specs = grid();
    let compiled: Vec<_> = jit
        .compile_all(&specs)
        .into_iter()
        .zip(&specs)
        .map(|(r, s)| r.unwrap_or_else(|e| panic!("{}: {e}", s.name())))
        .collect();
    let mut programs = Vec::new();
    for c in &compiled {
        if !programs.contains(&c.artifact_key) {
            programs.push(c.artifact_key);
        }
    }
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
            let spec = specs.iter().find(|s| s.name() == c.name).unwrap();
            let u = usage
                .get(&c.name)
                .unwrap_or_else(|| panic!("no resource report for {}:\n{report}", c.name));
            // Launchable at the launch bound: registers x threads fit 64 K.
            let limit = 65_536 / spec.threads();
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
