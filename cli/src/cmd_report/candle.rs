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

/// The ratio table (candle's µs over redjit's, a row per op, a column per
/// shape; each cell the lower of the op's dtypes there, the file holds
/// each), its range, and the block example's times.
pub fn candle_table(r: &CandleReport, s: &mut String) {
    let mut shapes: Vec<(u64, u64)> = Vec::new();
    let mut ops: Vec<&str> = Vec::new();
    let mut dtypes: Vec<&str> = Vec::new();
    for row in &r.candle_ops {
        if !shapes.contains(&(row.rows, row.cols)) {
            shapes.push((row.rows, row.cols));
        }
        if !ops.contains(&row.op.as_str()) {
            ops.push(&row.op);
        }
        if !dtypes.contains(&row.dtype.as_str()) {
            dtypes.push(&row.dtype);
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
            "Each cell: candle {}'s time over redjit-candle's (above 1: redjit faster), the lower of the op's dtypes ({}; each in the file), {:.2} to {:.2} over {} cells, {below} below 1.",
            r.candle_version,
            dtypes.join(", "),
            lo,
            hi,
            ratios.len()
        );
        let _ = writeln!(s);
    }
    let _ = write!(s, "|op|");
    for (rows, cols) in &shapes {
        let _ = write!(s, "{rows}x{cols}|");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|{}", "---|".repeat(shapes.len()));
    for op in &ops {
        let _ = write!(s, "|{op}|");
        for shape in &shapes {
            let lowest = r
                .candle_ops
                .iter()
                .filter(|x| x.op == *op && (x.rows, x.cols) == *shape)
                .map(|x| x.candle_us / x.redjit_us)
                .reduce(f64::min);
            let _ = write!(s, "{}|", lowest.map_or("-".into(), ratio));
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

/// A ratio in a table cell: two decimals below 10, none above.
fn ratio(r: f64) -> String {
    if r < 10.0 {
        format!("{r:.2}")
    } else {
        format!("{r:.0}")
    }
}
