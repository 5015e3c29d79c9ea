//! NVRTC compiles every all-reduce kernel (world 2..8 x dtype x op x one-shot,
//! two-stage, two-stage with cp.async) for sm_90, to PTX and to cubin, and ptxas
//! reports no stack frame, no spills and registers that fit the launch bound.
//! Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::codegen::spec::all_reduce::ArStage;
use redjit::codegen::spec::all_reduce::{MAX_WORLD, MIN_WORLD};
use redjit::{AllReduceAlgo, AllReduceSpec, KernelSpec, Output};

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
    // 7 worlds x 3 dtypes x 6 ops x (every algorithm, and two-stage with cp.async).
    assert_eq!(specs.len(), 7 * 3 * 6 * (AllReduceAlgo::ALL.len() + 1));
    common::assert_compiles_for_sm90(&specs, &[Output::Ptx, Output::Cubin]);
}

#[test]
fn ptxas_reports_no_stack_and_no_spills() {
    common::assert_ptxas_no_stack_no_spills(&grid(), AllReduceSpec::threads);
}

/// The quantized kernels (f32 in and out, bf16 transport with stochastic
/// rounding): world 2..8 x sum/avg/premulsum x the three kernels.
fn quantized_grid() -> Vec<AllReduceSpec> {
    (MIN_WORLD..=MAX_WORLD)
        .flat_map(AllReduceSpec::quantized_matrix)
        .collect()
}

#[test]
fn every_quantized_all_reduce_kernel_compiles_to_ptx_and_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let specs = quantized_grid();
    assert_eq!(specs.len(), 7 * 3 * 3);
    common::assert_compiles_for_sm90(&specs, &[Output::Ptx, Output::Cubin]);
    // And the reduce_copy kernel that quantizes each rank's input.
    common::assert_compiles_for_sm90(
        &[redjit::all_reduce::Quantize::default().reduce_copy_spec()],
        &[Output::Ptx, Output::Cubin],
    );
}

#[test]
fn quantized_ptxas_reports_no_stack_and_no_spills() {
    common::assert_ptxas_no_stack_no_spills(&quantized_grid(), AllReduceSpec::threads);
}

/// The hierarchical mode's stage kernels: world 2..8 x dtype x op x the
/// reduce-scatter (with and without cp.async) and the all-gather.
fn stage_grid() -> Vec<AllReduceSpec> {
    (MIN_WORLD..=MAX_WORLD)
        .flat_map(AllReduceSpec::stage_matrix)
        .collect()
}

#[test]
fn every_stage_kernel_compiles_and_ptxas_reports_no_spills() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let specs = stage_grid();
    assert_eq!(specs.len(), 7 * 3 * 6 * 3);
    // The reduce-scatter writes no output (no store to `out` anywhere in its
    // source), reads no tail and gathers nothing; the all-gather reads no
    // input and gathers into its output (sources, not PTX: the markers are
    // the template's).
    for s in &specs {
        let code = s.render().unwrap().code;
        let body = &code[code
            .find(&format!(
                "void __launch_bounds__({}, 1) {}",
                s.threads(),
                s.name()
            ))
            .expect("the kernel")..];
        match s.stage {
            ArStage::ReduceScatter => {
                assert!(
                    !body.contains("reduce_tail(")
                        && !body.contains("gather_packs<")
                        && !code.contains("rj_st_b128(out"),
                    "{}",
                    s.name()
                );
            }
            _ => {
                assert!(
                    !body.contains("reduce_pack")
                        && body.contains("gather_packs<")
                        && code.contains("rj_st_b128(out"),
                    "{}",
                    s.name()
                );
            }
        }
    }
    common::assert_compiles_for_sm90(&specs, &[Output::Ptx, Output::Cubin]);
    common::assert_ptxas_no_stack_no_spills(&specs, AllReduceSpec::threads);
}

/// The fused all-reduce + residual + RMS norm kernels at their register
/// limit: for world 2..8, each dtype and each packs a thread, the widest block
/// that validates (the launch bound's fewest registers; `ArNorm::for_row`
/// picks only valid layouts), and bf16 with the FP8 per-row output; the
/// one-shot, two-stage, push and LL kernel of each; and the LL kernels of rows in
/// clusters of 2, 4 and 8 blocks.
fn fused_norm_grid() -> Vec<AllReduceSpec> {
    use redjit::codegen::spec::all_reduce::norm::{ArNorm, MAX_PACKS, MAX_THREADS, MIN_THREADS};
    use redjit::codegen::spec::norm::Fp8Scale;
    let mut out = Vec::new();
    for world in MIN_WORLD..=MAX_WORLD {
        let kinds = redjit::DType::stores()
            .map(|d| (d, None))
            .chain([(redjit::DType::BF16, Some(Fp8Scale::PerRow))]);
        for (dtype, fp8) in kinds {
            for packs in 1..=MAX_PACKS {
                let widest = [512, 256, 128]
                    .into_iter()
                    .filter(|t| (MIN_THREADS..=MAX_THREADS).contains(t))
                    .find_map(|threads| {
                        let spec = AllReduceSpec {
                            world,
                            dtype,
                            norm: Some(ArNorm {
                                threads,
                                packs,
                                cluster: 1,
                                fp8,
                            }),
                            ..AllReduceSpec::default()
                        };
                        spec.validate().is_ok().then_some(spec)
                    });
                // The one-shot, two-stage, push and LL kernels of each.
                if let Some(spec) = widest {
                    for algo in [
                        AllReduceAlgo::PushLl,
                        AllReduceAlgo::Push,
                        AllReduceAlgo::TwoStage,
                    ] {
                        let s = AllReduceSpec {
                            algo,
                            ..spec.clone()
                        };
                        out.extend(s.validate().is_ok().then_some(s));
                    }
                    out.push(spec);
                }
            }
            // The LL kernel with a row in a cluster of blocks, each block's
            // widest layout at one and two packs a thread.
            for cluster in [2, 4, 8] {
                for threads in [512, 256, 128] {
                    for packs in [1, 2] {
                        let s = AllReduceSpec {
                            world,
                            dtype,
                            algo: AllReduceAlgo::PushLl,
                            norm: Some(ArNorm {
                                threads,
                                packs,
                                cluster,
                                fp8,
                            }),
                            ..AllReduceSpec::default()
                        };
                        if s.validate().is_ok() && (threads == 128 || cluster == 2) {
                            out.push(s);
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_fused_norm_layout_compiles_and_ptxas_reports_no_spills() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let specs = fused_norm_grid();
    assert!(specs.len() > 60, "{} fused kernels", specs.len());
    common::assert_compiles_for_sm90(&specs, &[Output::Ptx]);
    common::assert_ptxas_no_stack_no_spills(&specs, AllReduceSpec::threads);
}
