//! Snapshots of generated code, reviewed like code: the CUDA source of the eight
//! two-source seed configurations (unroll 4, bf16) and the sm_90 PTX that the
//! pinned NVRTC (13.0.88, see scripts/cuda-tools.sh) makes of configurations 2 and
//! 3. Snapshots live in the top-level `snapshots/` directory. Each one is taken only
//! after the invariants below hold, so a snapshot never records broken output.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test snapshots`,
//! then read the diff.

mod common;

use redjit::{Arch, CompileCache, DType, Jit, KernelSpec, Output, ReduceCopySpec, Target};

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

/// Snapshot settings shared by every test here: the top-level directory, file
/// names without the module prefix, and the toolkit's version lines in PTX
/// masked (they say which build made the PTX, not what the PTX is; the NVRTC
/// version the snapshot was taken with is in the header line instead).
macro_rules! snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({
            snapshot_path => "../snapshots",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            filters => vec![
                (r"(?m)^// Cuda compilation tools.*$", "// Cuda compilation tools [masked]"),
                (r"(?m)^// Based on NVVM.*$", "// Based on NVVM [masked]"),
                (r"(?m)^// Compiler Build ID.*$", "// Compiler Build ID [masked]"),
            ],
        }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

#[test]
fn source_of_the_eight_seed_configs() {
    for spec in seed_configs() {
        let name = spec.name();
        let src = spec.render().unwrap();
        assert_eq!(src.name, name);
        let code = &src.code;
        assert!(!code.contains("#include"), "{name}: has an #include");
        assert!(
            code.contains("extern \"C\" __global__"),
            "{name}: no extern \"C\" __global__"
        );
        assert!(
            code.contains(&format!("{name}(")),
            "{name}: the kernel is not named after the spec"
        );
        assert!(
            !code.contains("{{") && !code.contains("{%"),
            "{name}: unrendered template syntax"
        );
        // Deterministic: the same spec renders the same text.
        assert_eq!(spec.render().unwrap().code, *code, "{name}");
        snapshot!(format!("{name}.cu"), code.as_str());
    }
}

/// The PTX of one spec for sm_90, after its invariants, as a snapshot. `counts`
/// gives PTX instructions and exactly how often each must occur (0: never).
fn ptx_of(spec: &ReduceCopySpec, nvrtc_version: &str, counts: &[(&str, usize)]) {
    let name = spec.name();
    let jit = Jit::with_target(
        Target {
            arch: Arch::SM90,
            output: Output::Ptx,
        },
        CompileCache::in_memory(),
    );
    let compiled = jit.compile(spec).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(compiled.artifact.output, Output::Ptx);
    let ptx = compiled
        .artifact
        .ptx()
        .unwrap_or_else(|| panic!("{name}: PTX is not UTF-8"));
    assert!(!ptx.contains('\0'), "{name}: PTX text holds a NUL");
    assert!(ptx.contains(".target sm_90"), "{name}: not sm_90 PTX");
    assert!(
        ptx.contains(&format!(".entry {name}(")),
        "{name}: no .entry {name}"
    );
    for &(instruction, count) in counts {
        assert_eq!(
            ptx.matches(instruction).count(),
            count,
            "{name}: how often the PTX has {instruction:?}"
        );
    }
    let text = format!("// spec: {name}  nvrtc: {nvrtc_version}  target: sm_90 ptx\n{ptx}");
    snapshot!(format!("{name}.sm_90.ptx"), text);
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
    let code = spec.render().unwrap().code;
    assert!(code.contains("rj_philox4x32_10(sr_seed") && code.contains("rj_st4_sr<rj_dtype_bf16>"));
    assert!(
        code.contains("rj_ld4<rj_dtype_f32, rj_load_nc>")
            && code.contains("rj_ld4<rj_dtype_bf16, rj_load_volatile>")
    );
    assert!(!code.contains("#include"));
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
