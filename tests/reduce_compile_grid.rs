//! NVRTC compiles every reduce kernel (op x input x accumulator, for the
//! full-array, cluster, block-per-row, warp-per-row, split-row and column kernels) for
//! sm_90, to PTX and to cubin, and ptxas reports no stack frame and no spills
//! for any of them.
//! Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::{DType, KernelSpec, Output, ReduceAxis, ReduceOp, ReduceSpec};

fn grid() -> Vec<ReduceSpec> {
    let mut out = Vec::new();
    for &axis in ReduceAxis::ALL {
        for spec in ReduceSpec::matrix(axis) {
            if axis == ReduceAxis::Rows {
                out.push(spec.for_warp_per_row());
                out.push(spec.for_split_rows());
            }
            if axis == ReduceAxis::All {
                out.push(spec.for_cluster());
            }
            out.push(spec);
        }
    }
    out
}

#[test]
fn the_grid_is_every_op_dtype_and_accumulator() {
    let specs = grid();
    let inputs = DType::ALL.iter().filter(|d| d.info().reduce_input).count();
    // Inputs with a lossy accumulator of their own type (bf16, f16).
    let own_accum = DType::ALL
        .iter()
        .filter(|d| d.info().reduce_input && d.info().reduce_accum.is_some())
        .count();
    let lossy = ReduceOp::ALL
        .iter()
        .filter(|o| o.info().lossy_accum)
        .count();
    // Every op once per input (f32, or i64 for an integer input's integer ops),
    // plus the lossy ops in the 16-bit inputs' own types.
    let per_axis = ReduceOp::ALL.len() * inputs + lossy * (own_accum - 1);
    // Full arrays and their cluster twins, rows and their warp and split-row
    // twins, columns.
    assert_eq!(specs.len(), per_axis * 6);
    for &op in ReduceOp::ALL {
        for &axis in ReduceAxis::ALL {
            assert!(specs.iter().any(|s| s.op == op && s.axis == axis));
            for &input in DType::ALL.iter().filter(|d| d.info().reduce_input) {
                let accum = ReduceSpec::default_accum(op, input);
                assert!(
                    specs.iter().any(|s| s.op == op
                        && s.axis == axis
                        && s.input == input
                        && s.accum == accum),
                    "{op} {axis} {input} {accum}"
                );
            }
        }
    }
    // The new inputs: fp8 in f32, i8 exact in i64 for its integer ops.
    let names: Vec<String> = specs.iter().map(|s| s.name()).collect();
    for name in [
        "reduce_all_sum_e4m3_f32_c",
        "reduce_rows_argmax_e5m2_f32_w",
        "reduce_cols_varsamp_e4m3_f32",
        "reduce_all_dot_i8_i64",
        "reduce_rows_varpop_i8_i64_w",
        "reduce_cols_sumsq_i8_i64",
        "reduce_cols_argmin_i8_f32",
        "reduce_all_lse_i8_f32_c",
    ] {
        assert!(names.iter().any(|n| n == name), "{name}");
    }
}

#[test]
fn every_reduce_kernel_compiles_to_ptx_and_cubin() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    common::assert_compiles_for_sm90(&grid(), &[Output::Ptx, Output::Cubin]);
}

#[test]
fn ptxas_reports_no_stack_and_no_spills() {
    // Launchable at the launch bound.
    common::assert_ptxas_no_stack_no_spills(&grid(), |_| redjit::codegen::spec::reduce::THREADS);
}
