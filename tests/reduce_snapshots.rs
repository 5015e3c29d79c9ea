//! Snapshots of generated reduce code, reviewed like code: the CUDA source of the
//! full-array f32 sum and bf16 argmax (issue 5's pair), of the row and column
//! sums, and the sm_90 PTX of the first two with the pinned NVRTC. Invariants are
//! checked before each snapshot so a snapshot never records broken output.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test
//! reduce_snapshots`, then read the diff.

#[macro_use]
mod common;

use redjit::{KernelSpec, ReduceSpec};

fn source_of(name: &str, must: &[&str]) -> (ReduceSpec, String) {
    let spec: ReduceSpec = name.parse().unwrap();
    let code = common::checked_source(
        &spec,
        &format!("extern \"C\" __global__ void __launch_bounds__(256) {name}("),
    );
    // No float atomics anywhere: determinism.
    assert!(
        !code.contains("atomicAdd") && !code.contains("atom.global.add.f32"),
        "{name}"
    );
    for m in must {
        assert!(code.contains(m), "{name}: lacks {m:?}");
    }
    snapshot!(format!("{name}.cu"), code.as_str());
    (spec, code)
}

fn ptx_of(spec: &ReduceSpec, nvrtc_version: &str, counts: &[(&str, usize)]) {
    let name = spec.name();
    let ptx = common::sm90_ptx(spec);
    // The result path has no float atomics: the only atomic is the u32 ticket.
    assert_eq!(ptx.matches("atom.").count(), 1, "{name}: atomics");
    assert!(ptx.contains("atom.acq_rel.gpu.global.add.u32"), "{name}");
    assert!(!ptx.contains(".local"), "{name}: local memory");
    common::assert_instruction_counts(&name, &ptx, counts);
    snapshot!(
        format!("{name}.sm_90.ptx"),
        common::ptx_snapshot_text(&name, nvrtc_version, &ptx)
    );
}

#[test]
fn sum_f32_source_and_ptx() {
    let (spec, _) = source_of(
        "reduce_all_sum_f32_f32",
        &[
            "typedef rj_red_sum<rj_acc_f32> Op;",
            "rj_feed_range<Op, T, kSrcs, kUnroll, kPack>",
            "const int kPack = 4;",
        ],
    );
    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    ptx_of(
        &spec,
        &nvrtc.version_string(),
        &[
            // f32 packs are 16 bytes, read-only path: 4 in flight in the unrolled
            // loop and up to 4 in the remainder's masked group.
            ("ld.global.nc.v4.u32", 8),
            ("ld.global.nc.v2.u32", 0),
            // Warp butterfly (5) and the block's re-reduction of 8 warps (3), in
            // the block pass and again in the last block's pass.
            ("shfl.sync.bfly.b32", 2 * (5 + 3)),
        ],
    );
}

#[test]
fn argmax_bf16_source_and_ptx() {
    let (spec, _) = source_of(
        "reduce_all_argmax_bf16_f32",
        &[
            "typedef rj_red_argmax<rj_acc_f32> Op;",
            "typedef rj_dtype_bf16 T;",
            "const int kPack = 8;",
        ],
    );
    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    ptx_of(
        &spec,
        &nvrtc.version_string(),
        &[
            // bf16 packs are 16 bytes of 8: 4 in flight, then a masked group
            // of 2 (16 elements).
            ("ld.global.nc.v4.u32", 6),
            ("ld.global.nc.v2.u32", 0),
            // (value, 64-bit index) is three words per butterfly step.
            ("shfl.sync.bfly.b32", 3 * 2 * (5 + 3)),
        ],
    );
}

#[test]
fn row_and_column_sources() {
    source_of(
        "reduce_rows_sum_bf16_f32",
        &["rj_block_reduce<kThreads>(op, acc)", "r += gridDim.x"],
    );
    source_of(
        "reduce_rows_sum_bf16_f32_s",
        &[
            "cols_per_split",
            "rj_arrive_last(",
            "op, op.identity(), src0, src1, r * ld + c0, count, threadIdx.x, kThreads, c0)",
        ],
    );
    source_of(
        "reduce_rows_sum_bf16_f32_w",
        &["rj_warp_reduce(op, acc)", "lane, 32)"],
    );
    source_of(
        "reduce_cols_varsamp_f16_f32",
        &[
            "typedef rj_red_varsamp<rj_acc_f32> Op;",
            "rows_per_split",
            "rj_arrive_last(",
        ],
    );
}
