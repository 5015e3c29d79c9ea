//! The table of a `bench-all-reduce-norm.json` (`redjit bench all-reduce
//! --fused-norm --json`): the fused all-reduce + residual + RMS norm beside
//! the plain all-reduce of the same bytes, the two-launch pair, and (from the
//! `torch-all-reduce-norm.json` beside it) NCCL then `torch.compile`'s add +
//! RMS norm.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::format::ratio;
use crate::torch_ref::TorchEntry;

/// One run of `--fused-norm`: a row per (shape, fused kernel).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FusedNormReport {
    pub date: String,
    pub gpu: String,
    pub dtype: String,
    pub world: u32,
    /// Where the ranks ran, e.g. "2 processes, one per GPU" or "2 GPUs" (one
    /// process drives both).
    #[serde(default)]
    pub placement: String,
    /// `graph` (replayed from a CUDA graph) or `back-to-back`.
    pub timing: String,
    /// Calls per pair of events.
    pub batch: u32,
    pub rows: Vec<FusedNormRow>,
}

/// One fused kernel at one shape, with what it replaces.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FusedNormRow {
    pub tokens: usize,
    pub hidden: usize,
    pub bytes: u64,
    /// The plain all-reduce's kernel (the choice table's) and its time.
    pub plain_kernel: String,
    pub plain_us: f64,
    /// That all-reduce, then the norm family's add + RMS norm.
    pub pair_us: f64,
    /// The fused kernel: its all-reduce and its layout.
    pub kernel: String,
    pub fused_us: f64,
    /// The same kernel with an FP8 (e4m3) output and per-row scales.
    pub fp8_us: f64,
}

/// A row per shape with its fastest fused kernel: µs a call, and the
/// differences and ratios the issue's bars read.
pub fn fused_norm_table(r: &FusedNormReport, anchors: &[TorchEntry], s: &mut String) {
    let mut best: Vec<&FusedNormRow> = Vec::new();
    for row in &r.rows {
        match best
            .iter_mut()
            .find(|b| (b.tokens, b.hidden) == (row.tokens, row.hidden))
        {
            Some(b) if row.fused_us < b.fused_us => *b = row,
            Some(_) => {}
            None => best.push(row),
        }
    }
    let anchor = |row: &FusedNormRow| {
        let shape = format!("{}x{}", row.tokens, row.hidden);
        anchors
            .iter()
            .find(|e| {
                e.family.as_deref() == Some("all_reduce_norm")
                    && e.shape.as_deref() == Some(shape.as_str())
            })
            .and_then(|e| e.eager_us)
    };
    let _ = writeln!(
        s,
        "{}, {}, {} ({} calls a pair of events); µs a call, the fastest fused kernel a shape.",
        r.dtype,
        match r.placement.as_str() {
            "" => "one process",
            p => p,
        },
        if r.timing == "graph" {
            "from a CUDA graph"
        } else {
            "back to back"
        },
        r.batch
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "|tokens x hidden|all-reduce|pair|NCCL + compile|fused|FP8|fused - all-reduce|pair / fused|NCCL + compile / fused|"
    );
    let _ = writeln!(s, "|-|-|-|-|-|-|-|-|-|");
    for row in best {
        let a = anchor(row);
        let _ = writeln!(
            s,
            "|{}x{}|{:.2} ({})|{:.2}|{}|{:.2} ({})|{:.2}|{:+.2}|{}|{}|",
            row.tokens,
            row.hidden,
            row.plain_us,
            row.plain_kernel,
            row.pair_us,
            a.map_or("-".into(), |v| format!("{v:.2}")),
            row.fused_us,
            row.kernel,
            row.fp8_us,
            row.fused_us - row.plain_us,
            ratio(Some(row.pair_us / row.fused_us)),
            ratio(a.map(|v| v / row.fused_us)),
        );
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(tokens: usize, kernel: &str, fused_us: f64) -> FusedNormRow {
        FusedNormRow {
            tokens,
            hidden: 4096,
            bytes: (tokens * 4096 * 2) as u64,
            plain_kernel: "pushll".into(),
            plain_us: 5.0,
            pair_us: 20.0,
            kernel: kernel.into(),
            fused_us,
            fp8_us: fused_us + 0.25,
        }
    }

    #[test]
    fn a_row_per_shape_with_its_fastest_kernel_and_the_anchor() {
        let r = FusedNormReport {
            date: "2026-11-29".into(),
            gpu: "NVIDIA H200".into(),
            dtype: "bf16".into(),
            world: 2,
            placement: "2 processes, one per GPU".into(),
            timing: "graph".into(),
            batch: 20,
            rows: vec![
                row(1, "oneshot t512x1", 9.0),
                row(1, "pushll t512x1", 6.0),
                row(16, "pushll t512x1", 8.0),
            ],
        };
        let anchor: TorchEntry = serde_json::from_str(
            r#"{"family": "all_reduce_norm", "shape": "1x4096", "eager_us": 12.0}"#,
        )
        .unwrap();
        let mut s = String::new();
        fused_norm_table(&r, &[anchor], &mut s);
        assert!(
            s.contains(
                "|1x4096|5.00 (pushll)|20.00|12.00|6.00 (pushll t512x1)|6.25|+1.00|3.33×|2.00×|"
            ),
            "{s}"
        );
        assert!(!s.contains("oneshot"), "{s}");
        // No anchor at 16x4096: a dash, not a made-up ratio.
        assert!(
            s.contains("|16x4096|5.00 (pushll)|20.00|-|8.00 (pushll t512x1)|8.25|+3.00|2.50×|-|"),
            "{s}"
        );
    }
}
