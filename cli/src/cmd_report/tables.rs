//! The markdown tables of `redjit report --all`: one per family of a bench
//! file (each kernel beside the anchors measured in the same call), one per
//! all-reduce file (the fastest kernel at each size beside NCCL and PyTorch's
//! symmetric memory), and the figures the summary takes from each.

use std::fmt::Write as _;

use crate::bench::{BenchReport, KernelRow};
use crate::sizes::fmt_size;

use crate::torch_ref::TorchEntry;

use super::format::ratio;
use super::results::{ArReport, BenchFile};

/// A kernel meets the bars at >= this % of the copy ...
pub const BAR_COPY_PCT: f64 = 95.0;
/// ... and >= this ratio to the best anchor (where one ran).
pub const BAR_VS_BEST: f64 = 0.98;

/// What the summary takes from one table.
#[derive(Debug, Clone, Default)]
pub struct Figures {
    pub family: String,
    /// What was measured, e.g. "196 kernels, 14 shapes".
    pub what: String,
    /// % of the copy per kernel (empty where it means nothing: NMS, all-reduce).
    pub pct: Vec<f64>,
    /// redjit against the best anchor per kernel (> 1: redjit faster).
    pub vs: Vec<f64>,
    /// The anchors that ran, e.g. "PyTorch eager, Triton".
    pub anchors: Vec<&'static str>,
}

/// The anchors a table can show, in column order.
const ANCHORS: [&str; 4] = ["PyTorch eager", "torch.compile", "Triton", "Liger"];

/// A norm kernel's name -> (op, algorithm, residual, input, output):
/// `norm_softmax_online_bf16_bf16_b512x16_p` -> ("softmax", "online", false, "bf16", "bf16").
fn parse_norm(name: &str) -> Option<(&str, &str, bool, &str, &str)> {
    let parts: Vec<&str> = name.split('_').collect();
    let op = *parts.get(1)?;
    let mut rest = parts.get(2..)?;
    let mut algo = "";
    if let Some(&a @ ("safe" | "online")) = rest.first() {
        algo = a;
        rest = &rest[1..];
    }
    let residual = rest.first() == Some(&"res");
    if residual {
        rest = &rest[1..];
    }
    Some((op, algo, residual, rest.first()?, rest.get(1)?))
}

/// The name `torch_ref.py` gives a norm kernel's anchor: `norm_softmax_bf16_bf16`.
fn norm_anchor_name(name: &str) -> Option<String> {
    let (op, _, res, input, output) = parse_norm(name)?;
    Some(format!(
        "norm_{op}{}_{input}_{output}",
        if res { "_res" } else { "" }
    ))
}

/// A kernel's name without its tuned layout (`_t512u4`), for the plot's lines
/// (the norms: op, algorithm, residual and dtypes).
pub fn series_key(family: &str, name: &str) -> String {
    if family == "norm"
        && let Some((op, algo, res, input, output)) = parse_norm(name)
    {
        let algo = if algo.is_empty() {
            String::new()
        } else {
            format!(" {algo}")
        };
        return format!(
            "{op}{algo}{} {input}->{output}",
            if res { " + residual" } else { "" }
        );
    }
    match name.rsplit_once('_') {
        Some((head, last))
            if last.starts_with('t')
                && last[1..].split_once('u').is_some_and(|(a, b)| {
                    !a.is_empty()
                        && !b.is_empty()
                        && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
                }) =>
        {
            head.to_string()
        }
        _ => name.to_string(),
    }
}

/// The anchors' GB/s for `k`: PyTorch eager and torch.compile from the bench
/// file (`--compare`) where it has them, else from the anchor files, and
/// Triton and Liger from the anchor files.
fn anchors_of(k: &KernelRow, anchors: &[TorchEntry]) -> [Option<f64>; 4] {
    let norm_name = if k.family == "norm" {
        norm_anchor_name(&k.name)
    } else {
        None
    };
    let names_match = |a: &TorchEntry| match a.name.as_deref() {
        Some(n) => {
            n == k.name || norm_name.as_deref() == Some(n) || k.name.starts_with(&format!("{n}_"))
        }
        None => false,
    };
    let place_match = |a: &TorchEntry| match (&a.shape, &k.shape) {
        (Some(x), Some(y)) => x == y,
        _ => a.n == Some(k.n),
    };
    let family_match = |a: &TorchEntry| a.family.as_deref().is_none_or(|f| f == k.family);
    let mut found: [Option<f64>; 4] = [None; 4];
    for a in anchors
        .iter()
        .filter(|a| family_match(a) && names_match(a) && place_match(a))
    {
        let vals = [a.eager_gbps, a.compile_gbps, a.triton_gbps, a.liger_gbps];
        for (slot, v) in found.iter_mut().zip(vals) {
            if slot.is_none() {
                *slot = v.filter(|&g| g > 0.0);
            }
        }
    }
    let pos = |v: Option<f64>| v.filter(|&g| g > 0.0);
    [
        pos(k.torch_eager_gbps).or(found[0]),
        pos(k.torch_compile_gbps).or(found[1]),
        found[2],
        found[3],
    ]
}

/// The f32 elements of a copy that moves a norm kernel's row streams (x, out
/// and a residual's two; the weight and bias left out).
fn row_copy_n(k: &KernelRow) -> Option<u64> {
    let cols: u64 = k.shape.as_deref()?.split_once('x')?.1.parse().ok()?;
    let (op, _, _, input, _) = parse_norm(&k.name)?;
    let size = match input {
        "f32" => 4,
        "bf16" | "f16" => 2,
        _ => return None,
    };
    let vectors = match op {
        "layernorm" => 2,
        "rmsnorm" => 1,
        _ => 0,
    };
    Some(k.bytes.checked_sub(vectors * cols * size)? / 8)
}

/// A norm kernel's % of a copy of its own row bytes: the figure its own call
/// stored where the file has it (a record may hold cells of more than one
/// call, and one copy list), else from the file's copy of that size
/// (`copy_at`: GB/s by f32 elements).
fn same_bytes_pct(k: &KernelRow, copy_at: impl Fn(u64) -> Option<f64>) -> Option<f64> {
    k.pct_of_copy_same_bytes
        .or_else(|| row_copy_n(k).and_then(copy_at).map(|c| 100.0 * k.gbps / c))
}

fn g0(v: Option<f64>) -> String {
    v.map_or("-".into(), |g| format!("{g:.0}"))
}

fn tick(b: bool) -> &'static str {
    if b { "✓" } else { "✗" }
}

/// A latency-bound family: timed in µs against its anchor, no copy roofline.
fn latency_bound(family: &str) -> bool {
    family == "nms"
}

/// A markdown table written without padding around its cells (the file's
/// size is bounded; it renders the same).
pub(super) struct Table {
    head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(head: &[&str]) -> Table {
        Table {
            head: head.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn write(&self, s: &mut String) {
        let line = |cells: &[String]| format!("|{}|", cells.join("|"));
        let _ = writeln!(s, "{}", line(&self.head));
        let _ = writeln!(s, "|{}", "-|".repeat(self.head.len()));
        for r in &self.rows {
            let _ = writeln!(s, "{}", line(r));
        }
        let _ = writeln!(s);
    }
}

/// The tables of one bench file (one per family in it) and their figures.
pub fn kernel_tables(f: &BenchFile, r: &BenchReport, s: &mut String) -> Vec<Figures> {
    let mut families: Vec<&str> = Vec::new();
    for k in &r.kernels {
        if !families.contains(&k.family.as_str()) {
            families.push(&k.family);
        }
    }
    let several = families.len() > 1;
    families
        .into_iter()
        .map(|family| {
            if several {
                let _ = writeln!(s, "{family}:");
                let _ = writeln!(s);
            }
            let mut rows: Vec<&KernelRow> =
                r.kernels.iter().filter(|k| k.family == family).collect();
            if family == "norm" {
                rows.sort_by(|a, b| {
                    (a.n, &a.shape, a.name.contains("bf16"), &a.name).cmp(&(
                        b.n,
                        &b.shape,
                        b.name.contains("bf16"),
                        &b.name,
                    ))
                });
            }
            if latency_bound(family) {
                latency_table(family, &rows, &f.anchors, s)
            } else {
                bandwidth_table(family, r, &rows, &f.anchors, s)
            }
        })
        .collect()
}

fn latency_table(
    family: &str,
    rows: &[&KernelRow],
    anchors: &[TorchEntry],
    s: &mut String,
) -> Figures {
    let mut t = Table::new(&["kernel", "size", "µs", "anchor µs", "vs anchor"]);
    let mut vs = Vec::new();
    for k in rows {
        let anchor_us = anchors
            .iter()
            .filter(|a| a.family.as_deref() == Some(family) && a.n == Some(k.n))
            .find_map(|a| a.eager_us);
        let v = anchor_us.map(|a| a / k.median_us);
        vs.extend(v);
        let size = match &k.shape {
            Some(shape) => format!("{} ({shape})", k.n),
            None => k.n.to_string(),
        };
        t.rows.push(vec![
            format!("`{}`", k.name),
            size,
            format!("{:.0}", k.median_us),
            anchor_us.map_or("-".into(), |u| format!("{u:.0}")),
            ratio(v),
        ]);
    }
    t.write(s);
    Figures {
        family: family.into(),
        what: format!("{} sizes", rows.len()),
        pct: Vec::new(),
        vs,
        anchors: vec!["torchvision"],
    }
}

fn bandwidth_table(
    family: &str,
    r: &BenchReport,
    rows: &[&KernelRow],
    anchors: &[TorchEntry],
    s: &mut String,
) -> Figures {
    let norm = family == "norm";
    let found: Vec<[Option<f64>; 4]> = rows.iter().map(|k| anchors_of(k, anchors)).collect();
    let shown: Vec<usize> = (0..ANCHORS.len())
        .filter(|&i| found.iter().any(|a| a[i].is_some()))
        .collect();
    let mut head: Vec<&str> = if norm {
        vec!["shape", "kernel", "GB/s", "% copy", "% same B"]
    } else {
        vec!["kernel", "size", "µs", "GB/s", "% copy"]
    };
    head.extend(shown.iter().map(|&i| ANCHORS[i]));
    head.push("vs best");
    if norm {
        head.push("bars");
    }
    let mut t = Table::new(&head);
    let copy_at = |n: u64| r.copy.iter().find(|c| c.n == n).map(|c| c.gbps);
    let mut fig = Figures {
        family: family.into(),
        anchors: shown.iter().map(|&i| ANCHORS[i]).collect(),
        ..Figures::default()
    };
    let (mut met, mut met_same) = (0, 0);
    let mut last_shape: Option<&str> = None;
    for (k, a) in rows.iter().zip(&found) {
        let best = a
            .iter()
            .flatten()
            .copied()
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let vs = best.map(|b| k.gbps / b);
        let fast = vs.is_none_or(|v| v >= BAR_VS_BEST);
        let ok = k.pct_of_copy >= BAR_COPY_PCT && fast;
        let same = same_bytes_pct(k, copy_at);
        let ok_same = same.is_some_and(|p| p >= BAR_COPY_PCT) && fast;
        met += usize::from(ok);
        met_same += usize::from(ok_same);
        fig.pct.push(k.pct_of_copy);
        fig.vs.extend(vs);
        let mut cells = if norm {
            // A shape is named on its first row only.
            let shape = k.shape.as_deref().unwrap_or("-");
            let cell = if last_shape == Some(shape) {
                String::new()
            } else {
                shape.to_string()
            };
            last_shape = Some(shape);
            vec![
                cell,
                format!("`{}`", k.name),
                format!("{:.0}", k.gbps),
                format!("{:.1}", k.pct_of_copy),
                same.map_or("-".into(), |p| format!("{p:.1}")),
            ]
        } else {
            vec![
                format!("`{}`", k.name),
                k.shape.clone().unwrap_or_else(|| fmt_size(k.n)),
                format!("{:.1}", k.median_us),
                format!("{:.0}", k.gbps),
                format!("{:.1}", k.pct_of_copy),
            ]
        };
        cells.extend(shown.iter().map(|&i| g0(a[i])));
        cells.push(ratio(vs));
        if norm {
            cells.push(format!(
                "{}/{}",
                tick(ok),
                if same.is_some() { tick(ok_same) } else { "-" }
            ));
        }
        t.rows.push(cells);
    }
    t.write(s);
    let total = rows.len();
    let _ = writeln!(
        s,
        "{met} of {total} kernels meet both bars against the copy of n f32{}.",
        if norm {
            format!(
                "; {met_same} of {total} against a copy of their own row bytes (bars: that one / this one)"
            )
        } else {
            String::new()
        }
    );
    let _ = writeln!(s);
    let mut shapes: Vec<String> = rows
        .iter()
        .map(|k| k.shape.clone().unwrap_or_else(|| fmt_size(k.n)))
        .collect();
    shapes.sort();
    shapes.dedup();
    fig.what = match shapes.as_slice() {
        [one] => format!("{total} kernels at {one}"),
        _ => format!("{total} kernels, {} sizes", shapes.len()),
    };
    fig
}

/// `8192` -> `8 KB`, `1 << 30` -> `1 GB` (binary units, as the benchmark's flags).
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GB"), (1 << 20, "MB"), (1 << 10, "KB")];
    for (size, unit) in UNITS {
        if b >= size && b.is_multiple_of(size) {
            return format!("{} {unit}", b / size);
        }
    }
    format!("{b} B")
}

fn min_of(v: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    v.into_iter()
        .flatten()
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
}

/// The all-reduce files of one folder, one column each (`label`, report):
/// the fastest kernel at each size and its time beside NCCL's and the faster
/// of PyTorch symmetric memory's (both from the folder's anchor file, the
/// same in every report), and each column's figures.
pub fn all_reduce_table(files: &[(String, &ArReport)], s: &mut String) -> Vec<Figures> {
    let mut sizes: Vec<u64> = files
        .iter()
        .flat_map(|(_, r)| r.rows.iter().map(|x| x.bytes))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut head = vec!["size", "NCCL µs", "symmetric memory µs"];
    let labels: Vec<String> = files
        .iter()
        .map(|(l, _)| format!("{l}: fastest, µs (vs best)"))
        .collect();
    head.extend(labels.iter().map(String::as_str));
    let mut t = Table::new(&head);
    let mut figs: Vec<Figures> = files
        .iter()
        .map(|(label, r)| {
            let mut kernels: Vec<&str> = r.rows.iter().map(|x| x.kernel.as_str()).collect();
            kernels.sort_unstable();
            kernels.dedup();
            let dtype = r.rows.first().map_or("", |x| x.dtype.as_str());
            let (lo, hi) = (
                r.rows.iter().map(|x| x.bytes).min().unwrap_or(0),
                r.rows.iter().map(|x| x.bytes).max().unwrap_or(0),
            );
            Figures {
                family: "all_reduce".into(),
                what: format!(
                    "{label}, {} kernels, {dtype}, {}-{}",
                    kernels.len(),
                    fmt_bytes(lo),
                    fmt_bytes(hi)
                ),
                pct: Vec::new(),
                vs: Vec::new(),
                anchors: vec!["NCCL", "symmetric memory"],
            }
        })
        .collect();
    let us = |v: Option<f64>| v.map_or("-".into(), |u| format!("{u:.2}"));
    if files.iter().any(|(_, r)| r.launch_floor.is_some()) {
        let mut cells = vec!["empty kernel".to_string(), "-".into(), "-".into()];
        cells.extend(
            files
                .iter()
                .map(|(_, r)| us(r.launch_floor.as_ref().map(|f| f.median_us))),
        );
        t.rows.push(cells);
    }
    for size in &sizes {
        let at = |r: &ArReport| {
            r.rows
                .iter()
                .filter(|x| x.bytes == *size)
                .min_by(|a, b| a.median_us.total_cmp(&b.median_us))
                .cloned()
        };
        let bests: Vec<_> = files.iter().map(|(_, r)| at(r)).collect();
        let any = bests.iter().flatten().next();
        let nccl = any.and_then(|b| b.nccl_us);
        let symm = any.and_then(|b| min_of([b.symm_one_shot_us, b.symm_two_shot_us]));
        let other = min_of([nccl, symm]);
        let mut cells = vec![fmt_bytes(*size), us(nccl), us(symm)];
        for (b, fig) in bests.iter().zip(&mut figs) {
            cells.push(match b {
                Some(b) => {
                    let v = other.map(|o| o / b.median_us);
                    fig.vs.extend(v);
                    format!("{} {:.2} ({})", b.kernel, b.median_us, ratio(v))
                }
                None => "-".into(),
            });
        }
        t.rows.push(cells);
    }
    t.write(s);
    figs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn norm_names_parse() {
        assert_eq!(
            parse_norm("norm_softmax_online_bf16_bf16_b512x16_p"),
            Some(("softmax", "online", false, "bf16", "bf16"))
        );
        assert_eq!(
            norm_anchor_name("norm_rmsnorm_res_f32_f32_s512x4_p").as_deref(),
            Some("norm_rmsnorm_res_f32_f32")
        );
        assert_eq!(parse_norm("norm"), None);
    }

    #[test]
    fn a_kernels_own_same_bytes_figure_wins_over_the_files_copies() {
        // bf16 RMS norm at 8192x32768: x and y, 2^29 bytes, plus the weight.
        let bytes = (1u64 << 29) + 32768 * 2;
        let mut k = KernelRow::measured(
            "norm",
            "norm_rmsnorm_bf16_bf16_b512x16_o2_x".into(),
            1 << 28,
            Some("8192x32768".into()),
            bytes,
            1,
            263.0,
            4200.0,
            None,
        );
        // The copy of its row bytes: 2^29 / 8 f32 elements.
        let copies = |n: u64| (n == 1 << 26).then_some(4000.0);
        let from_copies = same_bytes_pct(&k, copies).unwrap();
        assert!((from_copies - 100.0 * k.gbps / 4000.0).abs() < 1e-9);
        k.pct_of_copy_same_bytes = Some(97.4);
        assert_eq!(same_bytes_pct(&k, copies), Some(97.4));
        // No stored figure and no copy of that size: none.
        k.pct_of_copy_same_bytes = None;
        assert_eq!(same_bytes_pct(&k, |_| None), None);
    }

    #[test]
    fn series_drop_the_tuned_layout() {
        assert_eq!(
            series_key("reduce", "reduce_all_sum_f32_f32_t512u4"),
            "reduce_all_sum_f32_f32"
        );
        assert_eq!(
            series_key("reduce", "reduce_rows_sum_f32_f32"),
            "reduce_rows_sum_f32_f32"
        );
        assert_eq!(
            series_key("reduce_copy", "reduce_copy_u4_f32_bf16_TA_T_sum_rn"),
            "reduce_copy_u4_f32_bf16_TA_T_sum_rn"
        );
        assert_eq!(
            series_key("norm", "norm_layernorm_res_bf16_bf16_s512x8_p_x"),
            "layernorm + residual bf16->bf16"
        );
    }

    #[test]
    fn bytes_print_in_binary_units() {
        assert_eq!(fmt_bytes(8192), "8 KB");
        assert_eq!(fmt_bytes(1 << 30), "1 GB");
        assert_eq!(fmt_bytes(3 << 20), "3 MB");
        assert_eq!(fmt_bytes(1000), "1000 B");
    }
}
