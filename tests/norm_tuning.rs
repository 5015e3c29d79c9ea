//! The norm family's tuning tables: the shipped H100 table gives every
//! operation, dtype pair and row length the kernel it was given before the
//! choices became data (the snapshot below was taken from the hand-written
//! ladder and its measured exceptions, so a changed pick shows as a diff), and
//! every shipped table parses and names only strategies that compile.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test
//! norm_tuning`, then read the diff.

#[macro_use]
mod common;

use std::fmt::Write;

use redjit::codegen::spec::norm::{MAX_COLS, row_ops};
use redjit::codegen::tuning::Tuning;
use redjit::{DType, KernelSpec, NormSpec};

/// Row lengths where a pick can change: both sides of every power of two and
/// of every measured range's ends, and a few odd lengths.
fn cols_grid() -> Vec<u64> {
    let mut out = vec![1, 3, 5, 7, 100, 1000, 1000003, 4097 * 3, 50_256, 128_256];
    let mut p = 1u64;
    while p <= 2 * MAX_COLS {
        out.extend([p.saturating_sub(1).max(1), p, p + 1]);
        p *= 2;
    }
    for edge in [
        2048, 4096, 8192, 16383, 16384, 32768, 33792, 36864, 38912, 40960, 49151, 49152, 53248,
        57343, 57344, 65535, 65536,
    ] {
        out.extend([edge - 1, edge, edge + 1]);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Each operation and dtype pair's picks over the grid, one line a run of
/// row lengths with the same kernel.
fn picks(pick: impl Fn(&NormSpec, u64) -> NormSpec) -> String {
    let mut text = String::new();
    let grid = cols_grid();
    for ops in row_ops() {
        for input in DType::stores() {
            for output in DType::stores() {
                let base = NormSpec::with(ops, input, output, 1);
                let mut run: Option<(u64, u64, String)> = None;
                let flush = |run: &Option<(u64, u64, String)>, text: &mut String| {
                    if let Some((lo, hi, name)) = run {
                        writeln!(text, "{lo}..={hi} {name}").unwrap();
                    }
                };
                for &cols in &grid {
                    let name = pick(&base, cols).name();
                    match &mut run {
                        Some((_, hi, n)) if *n == name => *hi = cols,
                        _ => {
                            flush(&run, &mut text);
                            run = Some((cols, cols, name));
                        }
                    }
                }
                flush(&run, &mut text);
            }
        }
    }
    text
}

#[test]
fn the_h100_table_keeps_every_pick() {
    let h100 = Tuning::shipped("h100-sxm").unwrap();
    let text = picks(|base, cols| base.for_shape(None, cols, &h100));
    // What a derivation without a device takes is the same table.
    assert_eq!(text, picks(|base, cols| base.for_cols(cols)));
    snapshot!("norm_picks_h100", text.as_str());
}

/// An FP8 output's picks on the H200 table: the rows of its own types (f32
/// or 16-bit in, e4m3 out) where the table has them, else those of its input
/// type in and out, each a valid kernel.
#[test]
fn fp8_outputs_take_their_own_rows_else_their_input_types() {
    use redjit::codegen::spec::norm::Fp8Scale;
    let h200 = Tuning::shipped("h200").unwrap();
    let mut text = String::new();
    for ops in row_ops().into_iter().filter(|o| o.1.is_none()) {
        for input in DType::stores() {
            let base = NormSpec::with(ops, input, input, 1).to_e4m3(Fp8Scale::PerRow);
            for cols in [100u64, 4096, 8192, 12288, 16384] {
                for rows in [1u64, 16, 128, 512, 2048, 4096] {
                    let s = base.for_shape(Some(rows), cols, &h200);
                    s.validate()
                        .unwrap_or_else(|e| panic!("{rows}x{cols}: {}: {e}", s.name()));
                    writeln!(text, "{rows}x{cols} {}", s.name()).unwrap();
                }
            }
        }
    }
    let rms_res = NormSpec::with(
        (redjit::NormOp::RmsNorm, None, true),
        DType::BF16,
        DType::BF16,
        1,
    )
    .to_e4m3(Fp8Scale::PerRow);
    assert_eq!(
        rms_res.for_shape(Some(4096), 8192, &h200).name(),
        "norm_rmsnorm_res_bf16_e4m3_b256x8_x_qd"
    );
    snapshot!("norm_picks_h200_fp8", text.as_str());
}
