//! NVRTC compiles every reduce kernel (op x input x accumulator, for the
//! full-array, cluster, block-per-row, warp-per-row and column kernels) for
//! sm_90, to PTX and to cubin, and ptxas reports no stack frame and no spills
//! for any of them.
//! Needs NVRTC (scripts/test.sh installs it).

mod common;

use redjit::{DType, Output, ReduceAxis, ReduceOp, ReduceSpec};

fn grid() -> Vec<ReduceSpec> {
    let mut out = Vec::new();
    for &axis in ReduceAxis::ALL {
        for spec in ReduceSpec::matrix(axis) {
            if axis == ReduceAxis::Rows {
                out.push(spec.for_warp_per_row());
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
    let lossy = ReduceOp::ALL
        .iter()
        .filter(|o| o.info().lossy_accum)
        .count();
    let per_axis = ReduceOp::ALL.len() * inputs + lossy * (inputs - 1);
    // Full arrays and their cluster twins, rows and their warp twins, columns.
    assert_eq!(specs.len(), per_axis * 5);
    for &op in ReduceOp::ALL {
        for &axis in ReduceAxis::ALL {
            assert!(specs.iter().any(|s| s.op == op && s.axis == axis));
        }
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
