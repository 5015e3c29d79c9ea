//! Whole-array softmax on the CPU: NVRTC compiles both stages of every op x
//! input x output for sm_90 (PTX and cubin), ptxas reports no stack frame and
//! no spills, and the source of the bf16 -> bf16 softmax pipeline is a
//! snapshot. Needs NVRTC (scripts/test.sh installs it) for all but the
//! snapshot.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test
//! softmax_all_compile`, then read the diff.

#[macro_use]
mod common;

use redjit::codegen::render_batch;
use redjit::{KernelSpec, Output, SoftmaxAllSpec};

#[test]
fn every_softmax_all_kernel_compiles_to_ptx_and_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    common::assert_compiles_for_sm90(&SoftmaxAllSpec::matrix(), &[Output::Ptx, Output::Cubin]);
}

#[test]
fn ptxas_reports_no_stack_and_no_spills() {
    common::assert_ptxas_no_stack_no_spills(&SoftmaxAllSpec::matrix(), |_| {
        redjit::codegen::spec::softmax_all::THREADS
    });
}

#[test]
fn softmax_bf16_pipeline_source() {
    let spec: SoftmaxAllSpec = "softmax_all_softmax_bf16_bf16".parse().unwrap();
    let [stats, normalize] = spec.pipeline();
    for (s, line) in [
        (&stats, "__launch_bounds__(256) softmax_all_stats_bf16("),
        (
            &normalize,
            "__launch_bounds__(256) softmax_all_softmax_bf16_bf16(",
        ),
    ] {
        common::checked_source(s, line);
    }
    // The launcher's program: both stages, the preludes once.
    let src = render_batch(&[&stats, &normalize]).unwrap();
    assert_eq!(src.kernels, [stats.name(), normalize.name()]);
    let code = src.code;
    assert_eq!(code.matches("// ---- redjit prelude: reduce ").count(), 1);
    // No float atomics: the stats stage's only atomic is the u32 arrival ticket.
    assert!(!code.contains("atomicAdd") && !code.contains(".add.f32"));
    for must in [
        "typedef rj_red_lse_scaled<rj_acc_f32> Op;",
        "rj_arrive_last(",
        "typedef rj_softmax_all_map<false> Map;",
        "rj_vec_head<TI, TO, kVec>(x, y, n)",
        "const int kVec = 8;",
    ] {
        assert!(code.contains(must), "lacks {must:?}");
    }
    snapshot!("softmax_all_softmax_bf16_bf16.cu", code.as_str());
}
