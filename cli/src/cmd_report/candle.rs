//! The table of a `bench-candle.json`: redjit-candle's ops against candle's
//! own on the same GPU (`candle/examples/bench.rs`), and the transformer
//! block example's times (`candle/examples/block.rs`).

use std::fmt::Write as _;

use serde::Deserialize;

/// One op at one shape and dtype.
#[derive(Debug, Clone, Deserialize)]
pub struct CandleRow {
    pub op: String,
    pub dtype: String,
    pub rows: u64,
    pub cols: u64,
    pub redjit_us: f64,
    pub candle_us: f64,
}

/// One run of the block example.
#[derive(Debug, Clone, Deserialize)]
pub struct BlockRow {
    pub tokens: u64,
    pub hidden: u64,
    pub redjit_us: f64,
    pub candle_us: f64,
}

/// A `bench-candle.json`: both runs of one device call.
#[derive(Debug, Clone, Deserialize)]
pub struct CandleReport {
    pub date: String,
    pub gpu: String,
    pub candle_version: String,
    pub candle_ops: Vec<CandleRow>,
    #[serde(default)]
    pub candle_blocks: Vec<BlockRow>,
}

/// The ratio table (candle's µs over redjit's, a row per op and dtype, a
/// column per shape), its range, and the block example's times.
pub fn candle_table(r: &CandleReport, s: &mut String) {
    let mut shapes: Vec<(u64, u64)> = Vec::new();
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for row in &r.candle_ops {
        if !shapes.contains(&(row.rows, row.cols)) {
            shapes.push((row.rows, row.cols));
        }
        if !keys.contains(&(row.op.as_str(), row.dtype.as_str())) {
            keys.push((&row.op, &row.dtype));
        }
    }
    let ratios: Vec<f64> = r
        .candle_ops
        .iter()
        .map(|x| x.candle_us / x.redjit_us)
        .collect();
    if let (Some(lo), Some(hi)) = (
        ratios.iter().copied().reduce(f64::min),
        ratios.iter().copied().reduce(f64::max),
    ) {
        let below = ratios.iter().filter(|&&x| x < 1.0).count();
        let _ = writeln!(
            s,
            "candle {}'s time over redjit-candle's (above 1: redjit faster), µs a call in `bench-candle.json`: {:.2}x to {:.2}x over {} cells, {below} below 1.0x.",
            r.candle_version,
            lo,
            hi,
            ratios.len()
        );
        let _ = writeln!(s);
    }
    let _ = write!(s, "|op|dtype|");
    for (rows, cols) in &shapes {
        let _ = write!(s, "{rows}x{cols}|");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(shapes.len()));
    for (op, dtype) in &keys {
        let _ = write!(s, "|`{op}`|{dtype}|");
        for shape in &shapes {
            match r.candle_ops.iter().find(|x| {
                (x.op.as_str(), x.dtype.as_str()) == (*op, *dtype) && (x.rows, x.cols) == *shape
            }) {
                Some(x) => {
                    let _ = write!(s, "{:.2}x|", x.candle_us / x.redjit_us);
                }
                None => {
                    let _ = write!(s, "-|");
                }
            }
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s);
    if !r.candle_blocks.is_empty() {
        let _ = writeln!(
            s,
            "The transformer block example (bf16; candle's matrix products in both runs), µs a block:"
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "|tokens x hidden|candle's norms and softmax|redjit-candle's|ratio|"
        );
        let _ = writeln!(s, "|---|---|---|---|");
        for b in &r.candle_blocks {
            let _ = writeln!(
                s,
                "|{}x{}|{:.1}|{:.1}|{:.3}x|",
                b.tokens,
                b.hidden,
                b.candle_us,
                b.redjit_us,
                b.candle_us / b.redjit_us
            );
        }
        let _ = writeln!(s);
    }
}
