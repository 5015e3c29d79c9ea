//! A [`TuningTable`] -> its text, in the form the shipped tables are kept in,
//! so that a table `redjit tune` writes reads back to the same rows.

use std::fmt::Write;
use std::ops::RangeInclusive;

use super::all_reduce::fmt_bytes;
use super::{AllReduceRule, NormRule, ReduceCopyRule, ReduceRule, TuningTable};
use crate::registry::ReduceAxis;

fn range(r: &RangeInclusive<u64>) -> String {
    match (*r.start(), *r.end()) {
        (lo, u64::MAX) => format!("{lo}.."),
        (lo, hi) if lo == hi => format!("{lo}"),
        (lo, hi) => format!("{lo}..={hi}"),
    }
}

/// A TOML basic string.
fn quoted(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn norm_row(out: &mut String, r: &NormRule) {
    let _ = writeln!(out, "\n[[norm]]\nop = {}", quoted(r.op.slug()));
    if let Some(a) = r.algo {
        let _ = writeln!(out, "algo = {}", quoted(a.slug()));
    }
    let _ = writeln!(out, "residual = {}", r.residual);
    let _ = writeln!(out, "types = {}", quoted(r.types.slug()));
    let _ = writeln!(out, "cols = {}", quoted(&range(&r.cols)));
    if let Some(rows) = &r.rows {
        let _ = writeln!(out, "rows = {}", quoted(&range(rows)));
    }
    let _ = writeln!(out, "strategy = {}", quoted(&r.strategy.layout_name()));
    let _ = writeln!(out, "form = {}", quoted(r.strategy.form.slug()));
    if let Some(h) = r.strategy.held {
        let _ = writeln!(out, "held = {h}");
    }
    if r.strategy.pairs {
        let _ = writeln!(out, "pairs = true");
    }
    if r.strategy.raw {
        let _ = writeln!(out, "raw = true");
    }
    if let Some(b) = r.strategy.bound {
        let _ = writeln!(out, "bound = {b}");
    }
    let _ = writeln!(out, "reason = {}", quoted(&r.reason));
    if let Some(res) = &r.result {
        let _ = writeln!(out, "result = {}", quoted(res));
    }
}

fn reduce_row(out: &mut String, r: &ReduceRule) {
    let _ = writeln!(out, "\n[[reduce]]\naxis = {}", quoted(&r.axis.to_string()));
    if !r.ops.is_empty() {
        let ops: Vec<String> = r.ops.iter().map(|o| quoted(&o.to_string())).collect();
        let _ = writeln!(out, "ops = [{}]", ops.join(", "));
    }
    let _ = writeln!(out, "input = {}", quoted(&r.input.to_string()));
    let size = if r.axis == ReduceAxis::All {
        "n"
    } else {
        "cols"
    };
    let _ = writeln!(out, "{size} = {}", quoted(&range(&r.size)));
    if let Some(rows) = &r.rows {
        let _ = writeln!(out, "rows = {}", quoted(&range(rows)));
    }
    let _ = writeln!(out, "strategy = {}", quoted(&r.strategy.to_string()));
    let _ = writeln!(out, "reason = {}", quoted(&r.reason));
    if let Some(res) = &r.result {
        let _ = writeln!(out, "result = {}", quoted(res));
    }
}

fn all_reduce_row(out: &mut String, r: &AllReduceRule) {
    let _ = writeln!(out, "\n[[all_reduce]]\nworld = {}", r.world);
    for (name, v) in r.sizes() {
        if let Some(b) = v {
            let _ = writeln!(out, "{name} = {}", quoted(&fmt_bytes(b)));
        }
    }
    let _ = writeln!(out, "reason = {}", quoted(&r.reason));
    if let Some(res) = &r.result {
        let _ = writeln!(out, "result = {}", quoted(res));
    }
}

fn reduce_copy_row(out: &mut String, r: &ReduceCopyRule) {
    let _ = writeln!(out, "\n[[reduce_copy]]\nthreads = {}", r.threads);
    if !r.write_heavy_blocks_per_sm.is_empty() {
        let held: Vec<String> = r
            .write_heavy_blocks_per_sm
            .iter()
            .map(|(unroll, blocks)| format!("u{unroll} = {blocks}"))
            .collect();
        let _ = writeln!(out, "write_heavy_blocks_per_sm = {{ {} }}", held.join(", "));
    }
    let _ = writeln!(out, "reason = {}", quoted(&r.reason));
    if let Some(res) = &r.result {
        let _ = writeln!(out, "result = {}", quoted(res));
    }
}

/// The table's text; `header` (comment lines without their `#`) goes first.
pub fn write_table(t: &TuningTable, header: &[&str]) -> String {
    let mut out = String::new();
    for h in header {
        let _ = writeln!(out, "# {h}");
    }
    if let Some(b) = &t.base {
        let _ = writeln!(out, "\nbase = {}", quoted(b));
    }
    let d = &t.device;
    let _ = writeln!(
        out,
        "\n[device]\nname = {}\narch = {}\nsms = {}\nl2_mib = {}",
        quoted(&d.name),
        quoted(&d.arch.to_string()),
        d.sms,
        d.l2_mib
    );
    for r in &t.norm {
        norm_row(&mut out, r);
    }
    for r in &t.reduce {
        reduce_row(&mut out, r);
    }
    for r in &t.all_reduce {
        all_reduce_row(&mut out, r);
    }
    if let Some(r) = &t.reduce_copy {
        reduce_copy_row(&mut out, r);
    }
    out
}
