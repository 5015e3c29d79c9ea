//! NVRTC compiles the norm kernels for sm_90, to PTX and to cubin, and ptxas
//! reports no stack frame, no spills and registers within the launch bound for
//! each: every row op (softmax safe/online, log-softmax safe/online, layer norm
//! and RMS norm with and without the residual add) x every input x output dtype
//! in a warp, a block, a split and a loop layout, and every layout variant of the ladder
//! and the benchmarks (16-bit ones in pairs too, and raw where they can be) and what the shipped H200 table lays
//! out at the benchmarks' shapes for bf16 -> bf16 and f32 -> f32; each whole-pack kernel, its
//! general twins (a deferred kernel's staging one too), and an exact kernel's ragged twin.
//! Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::codegen::spec::norm::{Fp8Scale, row_ops, variants};
use redjit::codegen::tuning::Tuning;
use redjit::{DType, KernelSpec, NormLayout, NormSpec, Output, SoftmaxAlgo};

fn grid() -> Vec<NormSpec> {
    let h200 = Tuning::shipped("h200").unwrap();
    let mut out: Vec<NormSpec> = Vec::new();
    // Each kernel, its general twins (`_g`, and a deferred kernel's staging
    // `_p_g`), which the launcher takes for misaligned or odd rows, and its
    // ragged twin (an exact kernel's, for rows
    // shorter than it).
    let mut push = |s: NormSpec| {
        for s in [
            s.general_twin(),
            s.staged_twin(),
            s.staged_twin_for_cols(40001),
            s.ragged_twin(),
            s,
        ] {
            if !out.contains(&s) {
                out.push(s);
            }
        }
    };
    for ops in row_ops() {
        for input in DType::stores() {
            for output in DType::stores() {
                // 50256: the cluster rows and short staging layouts of 32769..65536.
                for cols in [100, 4096, 16384, 32768, 50_256, 1 << 20] {
                    push(NormSpec::with(ops, input, output, cols));
                }
                // The loop layout at its bound, for every op and pair (the
                // ladder takes it for a few).
                push(NormSpec {
                    layout: NormLayout::Loop,
                    lanes: 512,
                    packs: 4,
                    algo: ops.1.map(|_| SoftmaxAlgo::Online),
                    ..NormSpec::with(ops, input, output, 1)
                });
            }
        }
        for d in [DType::BF16, DType::F32] {
            for s in variants(&NormSpec::with(ops, d, d, 1)) {
                // And the 16-bit block and warp kernels' forms in pairs.
                if s.can_pair_packs() {
                    push(NormSpec {
                        pairs: true,
                        ..s.clone()
                    });
                }
                // And the 16-bit blocks' raw rows, at their
                // own bound (a table gives a raw row a higher one where it
                // measured one: the tabled shapes below).
                if s.can_hold_raw() {
                    push(NormSpec {
                        raw: true,
                        ..s.clone()
                    });
                }
                push(s);
            }
            // What the shipped H200 table lays out at the benchmarks' shapes.
            for (rows, cols) in TABLED_SHAPES {
                push(NormSpec::with(ops, d, d, 1).for_shape(Some(rows), cols, &h200));
            }
        }
    }
    out
}

/// The benchmarks' main and LLM shapes (rows, cols).
const TABLED_SHAPES: [(u64, u64); 14] = [
    (32768, 4096),
    (8192, 16384),
    (8192, 32768),
    (262144, 128),
    (1, 4096),
    (16, 4096),
    (128, 4096),
    (512, 4096),
    (4096, 4096),
    (1, 8192),
    (16, 8192),
    (128, 8192),
    (512, 8192),
    (4096, 8192),
];

#[test]
fn the_grid_has_every_op_dtype_pair_and_layout() {
    let specs = grid();
    for ops in row_ops() {
        for &layout in NormLayout::ALL {
            for i in DType::stores() {
                for o in DType::stores() {
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

#[test]
fn every_norm_kernel_compiles_to_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    common::assert_compiles_for_sm90(&grid(), &[Output::Cubin]);
}

/// The FP8-output norms (e4m3, per-row and given scales) the ladder and the
/// shipped H200 table (at the LLM row counts and the benchmarks' longest) lay
/// out at rows of 100 to 16384 (their longest), every input type, and the
/// ragged twins of the exact ones.
fn fp8_grid() -> Vec<NormSpec> {
    let h200 = Tuning::shipped("h200").unwrap();
    let mut out: Vec<NormSpec> = Vec::new();
    for ops in row_ops().into_iter().filter(|o| !o.0.info().softmax) {
        for input in DType::stores() {
            for q in [Fp8Scale::PerRow, Fp8Scale::Given] {
                let base = NormSpec::with(ops, input, input, 1).to_e4m3(q);
                for cols in [100, 128, 1000, 4096, 8192, 12288, 16384] {
                    let tabled = [1, 16, 128, 512, 2048, 4096, 32768, 262144]
                        .map(|rows| base.for_shape(Some(rows), cols, &h200));
                    for s in std::iter::once(base.for_cols(cols)).chain(tabled) {
                        assert!(s.validate().is_ok(), "{}: {:?}", s.name(), s.validate());
                        // Whole packs only: its general twin is refused.
                        assert!(s.general_twin().validate().is_err(), "{}", s.name());
                        // An exact kernel's ragged twin takes the other lengths.
                        for s in [s.ragged_twin(), s] {
                            if !out.contains(&s) {
                                out.push(s);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

#[test]
fn fp8_output_kernels_compile_without_stack_or_spills() {
    let grid = fp8_grid();
    assert!(grid.len() >= 40, "{}", grid.len());
    common::assert_ptxas_no_stack_no_spills(&grid, NormSpec::threads);
}

#[test]
fn ptxas_reports_no_stack_and_no_spills() {
    // Launchable at the launch bound.
    common::assert_ptxas_no_stack_no_spills(&grid(), NormSpec::threads);
}
