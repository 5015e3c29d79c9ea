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

use redjit::{DType, Op, Output, ReduceCopySpec, Role, Rounding, Src};

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
    common::assert_compiles_for_sm90(&specs, &[Output::Ptx, Output::Cubin]);
}

#[test]
fn ptxas_reports_no_stack_and_no_spills() {
    // Launchable at the kernel's own bound.
    common::assert_ptxas_no_stack_no_spills(&grid(), ReduceCopySpec::max_threads);
}
