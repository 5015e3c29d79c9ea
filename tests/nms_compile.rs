//! The nms family on the CPU: every stage at every block size compiles for
//! sm_90 (PTX and cubin) with no stack, no spills and registers within the
//! launch bound; the source of the default pipeline is snapshotted (reviewed
//! like code). Needs NVRTC (scripts/test.sh installs it).
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test
//! nms_compile`, then read the diff.

#[macro_use]
mod common;

use redjit::codegen::render_batch;
use redjit::codegen::spec::nms::all;
use redjit::{KernelSpec, NmsSpec, NmsStage, Output};

#[test]
fn every_nms_stage_compiles_for_sm90() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    common::assert_compiles_for_sm90(&all(), &[Output::Ptx, Output::Cubin]);
}

#[test]
fn ptxas_reports_no_stack_and_no_spills() {
    common::assert_ptxas_no_stack_no_spills(&all(), |s: &NmsSpec| s.threads);
}

#[test]
fn the_pipeline_source_is_header_free_and_snapshotted() {
    let walk = NmsSpec::default();
    for s in walk.pipeline() {
        common::checked_source(
            &s,
            &format!(
                "extern \"C\" __global__ void __launch_bounds__({}) {}(",
                s.threads,
                s.name()
            ),
        );
    }
    // The launcher's program: every stage in one translation unit.
    let stages = walk.pipeline();
    let refs: Vec<&dyn KernelSpec> = stages.iter().map(|s| s as &dyn KernelSpec).collect();
    let src = render_batch(&refs).unwrap();
    assert_eq!(src.kernels.len(), 5);
    // The IoU goes through explicit .rn arithmetic only (no FMA contraction).
    assert!(src.code.contains("rj_nms_suppresses") && src.code.contains("div.rn.f32"));
    assert!(!src.code.contains("atomicAdd"));
    assert_eq!(stages[0].stage, NmsStage::Sort);
    snapshot!("nms_pipeline_t1024_t256.cu", src.code.as_str());
}
