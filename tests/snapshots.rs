//! Snapshots of generated code, reviewed like code: the CUDA source of the eight
//! two-source seed configurations (unroll 4, bf16) and the sm_90 PTX that the
//! pinned NVRTC (13.0.88, see scripts/cuda-tools.sh) makes of configurations 2 and
//! 3. Snapshots live in the top-level `snapshots/` directory. Each one is taken only
//! after the invariants below hold, so a snapshot never records broken output.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test snapshots`,
//! then read the diff.

#[macro_use]
mod common;

use redjit::{DType, KernelSpec, ReduceCopySpec};

/// The two-source seed configurations 0..8 at unroll 4 with a bf16 transport.
fn seed_configs() -> Vec<ReduceCopySpec> {
    let specs: Vec<ReduceCopySpec> = ReduceCopySpec::matrix(4, DType::BF16)
        .into_iter()
        .take(8)
        .collect();
    let configs: Vec<Option<u32>> = specs.iter().map(|s| s.seed_config()).collect();
    assert_eq!(configs, (0..8).map(Some).collect::<Vec<_>>());
    specs
}

#[test]
fn source_of_the_eight_seed_configs() {
    for spec in seed_configs() {
        let name = spec.name();
        let code = common::checked_source(&spec, &format!("{name}("));
        snapshot!(format!("{name}.cu"), code.as_str());
    }
}

/// The PTX of one spec for sm_90, after its invariants, as a snapshot. `counts`
/// gives PTX instructions and exactly how often each must occur (0: never).
fn ptx_of(spec: &ReduceCopySpec, nvrtc_version: &str, counts: &[(&str, usize)]) {
    let name = spec.name();
    let ptx = common::sm90_ptx(spec);
    common::assert_instruction_counts(&name, &ptx, counts);
    snapshot!(
        format!("{name}.sm_90.ptx"),
        common::ptx_snapshot_text(&name, nvrtc_version, &ptx)
    );
}

// The aligned kernel's hunk loop accesses each buffer with one vector instruction
// per unroll step, unrolled; the tail is scalar (the loop for buffers off a pack
// boundary is a misaligned twin, another kernel). So each vector access occurs
// exactly `unroll` = 4 times.

#[test]
fn ptx_of_config_2_bf16_and_f32_to_bf16() {
    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let spec = &seed_configs()[2];
    assert_eq!(spec.name(), "reduce_copy_u4_f32_bf16_TA_T_sum_rn");
    let u = spec.unroll as usize;
    ptx_of(
        spec,
        &nvrtc.version_string(),
        &[
            // src0 bf16: 8-byte packs (4 elements).
            ("ld.volatile.global.v2.u32", u),
            // src1 f32: 16-byte packs.
            ("ld.volatile.global.v4.u32", u),
            // dst bf16: 8-byte packs; no f32 buffer is written.
            ("st.global.v2.u32", u),
            ("st.global.v4.u32", 0),
            // Narrowing to bf16 rounds to nearest, two elements per cvt.
            ("cvt.rn.bf16x2.f32", 2 * u),
        ],
    );
}

#[test]
fn ptx_of_config_3_bf16_and_f32_to_f32() {
    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let spec = &seed_configs()[3];
    assert_eq!(spec.name(), "reduce_copy_u4_f32_bf16_TA_A_sum_rn");
    let u = spec.unroll as usize;
    ptx_of(
        spec,
        &nvrtc.version_string(),
        &[
            ("ld.volatile.global.v2.u32", u),
            ("ld.volatile.global.v4.u32", u),
            // dst f32: 16-byte packs; nothing is narrowed or stored as bf16.
            ("st.global.v4.u32", u),
            ("st.global.v2.u32", 0),
            ("cvt.rn.bf16x2.f32", 0),
            ("cvt.rn.bf16.f32", 0),
        ],
    );
}

#[test]
fn source_and_ptx_of_config_2_with_stochastic_rounding() {
    let spec: ReduceCopySpec = "reduce_copy_u4_f32_bf16_Ta_T_sum_sr".parse().unwrap();
    let code = common::checked_source(&spec, &format!("{}(", spec.name()));
    assert!(code.contains("rj_philox4x32_10(sr_seed") && code.contains("rj_st4_sr<rj_dtype_bf16>"));
    assert!(
        code.contains("rj_ld4<rj_dtype_f32, rj_load_nc>")
            && code.contains("rj_ld4<rj_dtype_bf16, rj_load_volatile>")
    );
    snapshot!(format!("{}.cu", spec.name()), code.as_str());
    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let u = spec.unroll as usize;
    ptx_of(
        &spec,
        &nvrtc.version_string(),
        &[
            // src0 volatile bf16, src1 read-only f32 through the non-coherent path.
            ("ld.volatile.global.v2.u32", u),
            ("ld.global.nc.v4.u32", u),
            ("st.global.v2.u32", u),
            // No round-to-nearest narrowing: every bf16 is rounded with Philox bits.
            ("cvt.rn.bf16x2.f32", 0),
        ],
    );
}
