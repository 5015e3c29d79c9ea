//! NVRTC compiles every supported reduce_copy type configuration (unroll x
//! transport x configuration x 1/2 sources) and a sampled grid of ops x rounding
//! x source and destination counts for sm_90, and ptxas reports no stack frame
//! and no spills for any of them. Needs NVRTC (scripts/test.sh installs it).
//!
//! The sampled grid: every op x rounding x {1, 2, 8} sources x {T, TA}
//! destinations x transport at unroll 4, and every op x rounding with 8 sources
//! and two destinations at unroll 8 (the most registers); 312 kernels in all
//! rather than the full 4 x 2 x 6 x 2 x (2^1 + ... + 2^8 loads and roles) x 6.

mod common;

use redjit::codegen::spec::reduce_copy::Misalignment;

use redjit::{
    Arch, CompileCache, DType, Jit, KernelSpec, Op, Output, ReduceCopySpec, Role, Rounding, Src,
    Target,
};

fn grid() -> Vec<ReduceCopySpec> {
    let mut out = Vec::new();
    for &unroll in redjit::codegen::spec::reduce_copy::UNROLLS {
        for &t in DType::ALL.iter().filter(|d| d.info().transport) {
            out.extend(ReduceCopySpec::matrix(unroll, t));
        }
    }
    out.extend(sampled_op_grid());
    // Misaligned twins of the unroll-4 and unroll-8 type configurations and of
    // the stochastic-rounding part of the op grid, every buffer off its pack
    // boundary (the most registers a twin holds), the offsets varied from spec to
    // spec.
    let twins: Vec<ReduceCopySpec> = out
        .iter()
        .filter(|s| (s.unroll >= 4 && s.op == Op::Sum) || s.rounding == Rounding::Stochastic)
        .enumerate()
        .map(|(i, s)| {
            let buffers = s.srcs.len() + s.dsts.len();
            let offsets = (0..buffers).map(|k| 1 + ((i + k) % 3) as u8).collect();
            s.for_misalignment(Misalignment(offsets))
        })
        .collect();
    out.extend(twins);
    out
}

fn sampled_op_grid() -> Vec<ReduceCopySpec> {
    let (t, a) = (Src::from(Role::Transport), Src::read_only(Role::Accum));
    let sources: [Vec<Src>; 3] = [
        vec![a],
        vec![t, a],
        vec![t, a, t, a, Role::Accum.into(), t, a, t],
    ];
    let dsts = [vec![Role::Transport], vec![Role::Transport, Role::Accum]];
    let mut out = Vec::new();
    for &transport in DType::ALL.iter().filter(|d| d.info().transport) {
        for &op in Op::ALL {
            for &rounding in Rounding::ALL {
                for (unroll, srcs, dsts) in sources
                    .iter()
                    .flat_map(|s| dsts.iter().map(move |d| (4, s, d)))
                    .chain([(8, &sources[2], &dsts[1])])
                {
                    out.push(ReduceCopySpec {
                        unroll,
                        transport,
                        srcs: srcs.clone(),
                        dsts: dsts.clone(),
                        op,
                        rounding,
                        ..ReduceCopySpec::default()
                    });
                }
            }
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
    let twins = specs.iter().filter(|s| s.misalignment.is_some()).count();
    assert_eq!(specs.len() - twins, 4 * 2 * 12 + 2 * 6 * 2 * 7);
    assert!(twins > 100, "{twins} misaligned twins");
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
            // Launchable at the kernel's own bound: registers x threads fit the
            // 64 K register file (and one thread has at most 255).
            let spec = specs.iter().find(|s| s.name() == c.name).unwrap();
            let limit = (65_536 / spec.max_threads()).min(255);
            assert!(
                u.registers > 0 && u.registers <= limit,
                "{}: {u:?}, limit {limit}",
                c.name
            );
            checked += 1;
        }
    }
    assert_eq!(checked, specs.len());
    let _ = std::fs::remove_dir_all(&dir);
}
