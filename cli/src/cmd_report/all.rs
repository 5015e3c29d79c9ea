//! `redjit report --all benchmarks`: the whole of BENCHMARKS.md from the
//! committed result folders (`benchmarks/<gpu>/`), the results block of the
//! README, and with `--plots` each folder's `plot.svg`. Links to files are
//! written as seen from the results folder's parent (the repository root,
//! where both markdown files live).

use std::fmt::Write as _;
use std::path::Path;

use crate::error::{CliError, CliResult};
use crate::plot::{Panel, Series};

use super::candle::candle_table;
use super::fused_norm::fused_norm_table;
use super::results::{ArReport, BenchFile, GpuResults, Measured, load_all};
use super::tables::{
    BAR_COPY_PCT, BAR_VS_BEST, Figures, Table, all_reduce_table, kernel_tables, series_key,
};

/// The README's results block lies between these lines.
pub const README_BEGIN: &str = "<!-- results: made by `redjit report --all benchmarks --readme README.md`; edit the result files, not this block -->";
pub const README_END: &str = "<!-- end of results -->";

/// The command that remakes both files (printed in them).
pub const COMMAND: &str =
    "redjit report --all benchmarks --out BENCHMARKS.md --readme README.md --plots";

/// Each folder's plot, drawn by `--plots`.
pub const PLOT: &str = "plot.svg";

/// One GPU's tables and the figures its summary takes.
struct Section {
    body: String,
    rows: Vec<(String, Figures, String)>,
}

fn file_link(root: &str, g: &GpuResults, file: &str) -> String {
    format!("`{root}/{}/{file}`", g.dir)
}

/// A GPU's section; its plot where the summary above does not show it.
fn section(root: &Path, g: &GpuResults, plot_above: bool) -> Section {
    let rname = root_name(root);
    let mut s = String::new();
    let _ = writeln!(s, "## {} (`{rname}/{}/`)", g.gpu(), g.dir);
    let _ = writeln!(s);
    if let Some(about) = &g.meta.about {
        let _ = writeln!(s, "{}", about.trim());
        let _ = writeln!(s);
    }
    if !plot_above && root.join(&g.dir).join(PLOT).is_file() {
        let _ = writeln!(
            s,
            "![{}: GB/s against size per family, the copy dashed]({rname}/{}/{PLOT})",
            g.gpu(),
            g.dir
        );
        let _ = writeln!(s);
    }
    let mut rows = Vec::new();
    for f in &g.files {
        let Measured::Kernels(r) = &f.measured else {
            continue;
        };
        file_heading(&rname, g, f, &mut s);
        rows.extend(
            kernel_tables(f, r, &mut s)
                .into_iter()
                .map(|fig| (f.title(), fig, f.date().to_string())),
        );
    }
    // The all-reduce files of a folder share their sizes and anchors: one
    // table, a column per file.
    let ar: Vec<(&BenchFile, &ArReport)> = g
        .files
        .iter()
        .filter_map(|f| match &f.measured {
            Measured::AllReduce(r) => Some((f, r)),
            Measured::Kernels(_) | Measured::Candle(_) | Measured::FusedNorm(_) => None,
        })
        .collect();
    if !ar.is_empty() {
        let date = ar.iter().map(|(f, _)| f.date()).max().unwrap_or("");
        let links: Vec<String> = ar
            .iter()
            .map(|(f, _)| file_link(&rname, g, &f.file))
            .collect();
        let _ = writeln!(s, "### All-reduce ({}, {date})", links.join(", "));
        let _ = writeln!(s);
        let files: Vec<&BenchFile> = ar.iter().map(|(f, _)| *f).collect();
        describe(&rname, g, &files, &mut s);
        if let Some(row) = ar[0].1.rows.first() {
            let _ = writeln!(s, "{}, {} ranks.", row.placement, row.ranks);
            let _ = writeln!(s);
        }
        let labelled: Vec<(String, &ArReport)> =
            ar.iter().map(|(f, r)| (mode_label(f), *r)).collect();
        let figs = all_reduce_table(&labelled, &mut s);
        rows.extend(
            figs.into_iter()
                .map(|fig| ("all-reduce".to_string(), fig, date.to_string())),
        );
    }
    for f in &g.files {
        match &f.measured {
            Measured::Candle(r) => {
                file_heading(&rname, g, f, &mut s);
                candle_table(r, &mut s);
            }
            Measured::FusedNorm(r) => {
                file_heading(&rname, g, f, &mut s);
                fused_norm_table(r, &f.anchors, &mut s);
            }
            Measured::Kernels(_) | Measured::AllReduce(_) => {}
        }
    }
    Section { body: s, rows }
}

/// One file's heading (title, file, date) and its description.
fn file_heading(rname: &str, g: &GpuResults, f: &BenchFile, s: &mut String) {
    let _ = writeln!(
        s,
        "### {} ({}, {})",
        f.title(),
        file_link(rname, g, &f.file),
        f.date()
    );
    let _ = writeln!(s);
    describe(rname, g, &[f], s);
}

/// The label of an all-reduce file's column: its title, else the last word
/// of its name (`bench-all-reduce-graph.json` -> `graph`).
fn mode_label(f: &BenchFile) -> String {
    f.meta.title.clone().unwrap_or_else(|| {
        let stem = f.file.trim_end_matches(".json");
        stem.rsplit('-').next().unwrap_or(stem).to_string()
    })
}

/// The files' paragraphs, provenance and commands (each given once).
fn describe(rname: &str, g: &GpuResults, files: &[&BenchFile], s: &mut String) {
    let mut seen: Vec<&str> = Vec::new();
    for f in files {
        if let Some(about) = &f.meta.about
            && !seen.contains(&about.as_str())
        {
            seen.push(about);
            let _ = writeln!(s, "{}", about.trim());
            let _ = writeln!(s);
        }
    }
    let mut lines: Vec<String> = Vec::new();
    for f in files {
        let p = provenance(rname, g, f);
        if !lines.contains(&p) {
            lines.push(p);
        }
    }
    let _ = writeln!(s, "{}", lines.join("\n"));
    let _ = writeln!(s);
    let mut commands: Vec<&str> = Vec::new();
    for c in files.iter().flat_map(|f| &f.meta.commands) {
        if !commands.contains(&c.as_str()) {
            commands.push(c);
        }
    }
    if !commands.is_empty() {
        let _ = writeln!(s, "Reproduce:");
        let _ = writeln!(s);
        for c in commands {
            let _ = writeln!(s, "    {c}");
        }
        let _ = writeln!(s);
    }
}

/// How a file was measured and what it was measured beside.
fn provenance(rname: &str, g: &GpuResults, f: &BenchFile) -> String {
    let mut parts = Vec::new();
    if let Measured::Kernels(r) = &f.measured {
        parts.push(format!(
            "{} ({}), driver {}; median of {} launches after {} warm-up, launch gap {}{}",
            r.gpu,
            r.arch,
            r.driver,
            r.iters,
            r.warmup,
            match r.launch_gap {
                crate::timing::LaunchGap::Hidden => "hidden",
                crate::timing::LaunchGap::Counted =>
                    "counted (the host's issue time in each figure)",
            },
            if r.no_cooperative_launch {
                ", no cooperative launch"
            } else {
                ""
            }
        ));
    }
    if let Measured::Candle(r) = &f.measured {
        parts.push(format!(
            "{}; the anchor is candle {}'s own ops, in the same run",
            r.gpu, r.candle_version
        ));
    } else if f.anchor_files.is_empty() {
        parts.push("no anchor file".into());
    } else {
        let files: Vec<String> = f
            .anchor_files
            .iter()
            .map(|a| file_link(rname, g, a))
            .collect();
        parts.push(format!(
            "anchors from {}{}",
            files.join(" and "),
            f.torch_version
                .as_ref()
                .map_or(String::new(), |v| format!(" (PyTorch {v})"))
        ));
    }
    if let Some(src) = &f.meta.source {
        parts.push(format!("source: {src}"));
    }
    let mut s = parts.join("; ");
    s.push('.');
    match s.chars().next() {
        Some(c) if c.is_lowercase() => c.to_uppercase().chain(s.chars().skip(1)).collect(),
        _ => s,
    }
}

/// The folder's last component as links name it (`benchmarks`).
fn root_name(root: &Path) -> String {
    root.file_name().map_or_else(
        || root.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

fn spread(v: &[f64], fmt: impl Fn(f64) -> String, unit: &str) -> String {
    let Some(m) = median(v) else {
        return "-".into();
    };
    let lo = v.iter().copied().fold(f64::MAX, f64::min);
    let hi = v.iter().copied().fold(f64::MIN, f64::max);
    if v.len() == 1 {
        format!("{}{unit}", fmt(m))
    } else {
        format!("{}{unit} ({}-{})", fmt(m), fmt(lo), fmt(hi))
    }
}

/// The results tables of every GPU (the README's block and BENCHMARKS.md's
/// summary): a row per family of each result file.
fn summary(root: &Path, gpus: &[GpuResults], sections: &[Section]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "% of the copy: GB/s against the device-to-device copy of as many f32 elements; vs the best anchor: against the fastest anchor named (above 1: redjit is faster); both measured in the same call, as median (range) over the kernels and sizes. Method, every figure and the commands: [BENCHMARKS.md](BENCHMARKS.md)."
    );
    let _ = writeln!(s);
    for (g, sec) in gpus.iter().zip(sections) {
        let _ = writeln!(s, "**{}**", g.gpu());
        let _ = writeln!(s);
        let mut t = Table::new(&[
            "family",
            "measured",
            "% of the copy",
            "vs the best anchor",
            "anchors",
            "GPU",
            "date",
        ]);
        for (title, fig, date) in &sec.rows {
            t.rows.push(vec![
                fig.family.clone(),
                format!("{title}: {}", fig.what),
                spread(&fig.pct, |v| format!("{v:.1}"), " %"),
                spread(&fig.vs, |v| format!("{v:.2}"), "×"),
                if fig.anchors.is_empty() {
                    "-".to_string()
                } else {
                    fig.anchors.join(", ")
                },
                g.gpu(),
                date.clone(),
            ]);
        }
        t.write(&mut s);
    }
    if let Some(g) = summary_plot(root, gpus) {
        let _ = writeln!(
            s,
            "![{}: GB/s against size per family, the copy dashed]({}/{}/{PLOT})",
            g.gpu(),
            root_name(root),
            g.dir
        );
        let _ = writeln!(s);
    }
    s
}

/// The GPU whose plot the summary shows: the first with one.
fn summary_plot<'a>(root: &Path, gpus: &'a [GpuResults]) -> Option<&'a GpuResults> {
    gpus.iter().find(|g| root.join(&g.dir).join(PLOT).is_file())
}

/// BENCHMARKS.md and the README's results block, from the folders under `root`.
pub fn render(root: &Path) -> CliResult<(String, String)> {
    let gpus = load_all(root)?;
    let plotted = summary_plot(root, &gpus).map(|g| g.dir.clone());
    let sections: Vec<Section> = gpus
        .iter()
        .map(|g| section(root, g, plotted.as_ref() == Some(&g.dir)))
        .collect();
    let summary = summary(root, &gpus, &sections);
    let mut s = String::new();
    let _ = writeln!(s, "# redjit benchmarks");
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "The figures now current for each GPU and kernel family, how they were measured, and the commands that reproduce them. Made by `{COMMAND}` from the result files under `{}/<gpu>/`: a new measurement replaces its file there, and the history of every figure is in git.",
        root_name(root)
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "## Method");
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "- **Timing**: CUDA events around each launch, the median of many (the count is given with each file). A spin kernel holds the stream while each timed launch is issued, so the events time the GPU's work alone (`--launch-gap hidden`, the default; a file timed otherwise says so).\n\
         - **Inputs and outputs** rotate over copies covering at least 4x the L2 cache, so no launch finds its inputs, or lines of its outputs, in L2; the anchors' alike (one that allocates its outputs keeps the rotation's last ones alive).\n\
         - **The copy**: the device-to-device copy of n f32 elements (read and written) is measured in the same call at every size, as the roofline. GB/s counts each input read once and each output written once; \"% copy\" is a kernel's GB/s against that copy. The norms also show \"% same B\", against a copy of their own row bytes (x, out and a residual's two streams), where the file measured a copy of that size.\n\
         - **Anchors** run in the same device call and are timed the same way (`scripts/torch_ref.py`): PyTorch eager, `torch.compile`, Triton, Liger-Kernel (norms), torchvision (NMS), NCCL and PyTorch's symmetric memory (all-reduce). \"vs best\" is redjit's GB/s over the fastest anchor's (above 1: redjit is faster); for NMS and the all-reduce, the anchor's time over redjit's.\n\
         - **Bars**: a kernel meets them at >= {BAR_COPY_PCT} % of the copy and >= {BAR_VS_BEST}x the best anchor (where one ran).\n\
         - **All-reduce**: one process per GPU, bf16, the fastest of redjit's kernels at each size beside NCCL and the faster of symmetric memory's one-shot and two-shot; `graph`: the calls replayed from a CUDA graph; `registered`: eager calls on registered inputs; `eager`: inputs copied in.\n\
         - **Build** for the commands: `cargo build --release -p redjit-cli` (the binary is `target/release/redjit`), or `bash scripts/gpu.sh` here and `stage/bin/redjit` there (a GPU machine without Rust)."
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "## Summary");
    let _ = writeln!(s);
    s.push_str(&summary);
    for sec in &sections {
        s.push_str(&sec.body);
    }
    while s.ends_with("\n\n") {
        s.pop();
    }
    Ok((s, summary))
}

/// `readme` with its results block replaced by `block`.
pub fn splice_readme(readme: &str, block: &str) -> CliResult<String> {
    let (Some(b), Some(e)) = (readme.find(README_BEGIN), readme.find(README_END)) else {
        return Err(CliError::usage(format!(
            "the README has no results block: put the lines {README_BEGIN} and {README_END} where it goes"
        )));
    };
    if e < b {
        return Err(CliError::usage(
            "the README's results block ends before it begins",
        ));
    }
    Ok(format!(
        "{}{README_BEGIN}\n\n{block}{}",
        &readme[..b],
        &readme[e..]
    ))
}

/// The plot of one folder's kernel files: a panel per family, a line per
/// kernel (its tuned layout aside), the copies as the roofline.
pub fn panels(g: &GpuResults) -> Vec<Panel> {
    let mut panels: Vec<Panel> = Vec::new();
    for f in &g.files {
        let Measured::Kernels(r) = &f.measured else {
            continue;
        };
        for k in &r.kernels {
            if k.family == "nms" {
                continue;
            }
            let i = match panels.iter().position(|p| p.title == k.family) {
                Some(i) => i,
                None => {
                    panels.push(Panel {
                        title: k.family.clone(),
                        series: Vec::new(),
                        roofline: Vec::new(),
                    });
                    panels.len() - 1
                }
            };
            let panel = &mut panels[i];
            // The copies of the files this family's kernels come from.
            for c in &r.copy {
                let p = (c.n as f64, c.gbps);
                if !panel.roofline.iter().any(|x| x.0 == p.0) {
                    panel.roofline.push(p);
                }
            }
            let label = series_key(&k.family, &k.name);
            let p = (k.n as f64, k.gbps);
            match panel.series.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push(p),
                None => panel.series.push(Series {
                    label,
                    points: vec![p],
                }),
            }
        }
    }
    panels
}

/// `redjit report --all ROOT [--out FILE] [--readme FILE] [--plots]`.
pub fn all_cmd(root: &Path, out: Option<&Path>, readme: Option<&Path>, plots: bool) -> CliResult {
    if plots {
        for g in load_all(root)? {
            let panels = panels(&g);
            if !panels.is_empty() {
                let title = format!("{}, {}", g.gpu(), g.date());
                crate::plot::draw(&root.join(&g.dir).join(PLOT), &title, &panels)?;
            }
        }
    }
    let (md, block) = render(root)?;
    match out {
        Some(p) => std::fs::write(p, &md)
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", p.display())))?,
        None => print!("{md}"),
    }
    if let Some(p) = readme {
        let text = std::fs::read_to_string(p)
            .map_err(|e| CliError::usage(format!("cannot read {}: {e}", p.display())))?;
        let new = splice_readme(&text, &block)?;
        std::fs::write(p, new)
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", p.display())))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// BENCHMARKS.md is exactly what the generator makes of the committed
    /// results, and stays small.
    #[test]
    fn benchmarks_md_is_generated_from_the_committed_results() {
        let (md, _) = render(&repo().join("benchmarks")).unwrap();
        let committed = std::fs::read_to_string(repo().join("BENCHMARKS.md")).unwrap();
        assert!(
            md == committed,
            "BENCHMARKS.md differs from what `{COMMAND}` makes of benchmarks/: run it"
        );
        assert!(md.len() <= 60 * 1024, "BENCHMARKS.md is {} bytes", md.len());
    }

    /// The README's results block is the generator's too, and the README
    /// stays short.
    #[test]
    fn readme_results_are_generated_from_the_committed_results() {
        let (_, block) = render(&repo().join("benchmarks")).unwrap();
        let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
        assert!(
            splice_readme(&readme, &block).unwrap() == readme,
            "README.md's results block differs from what `{COMMAND}` makes of benchmarks/: run it"
        );
        assert!(
            readme.len() <= 15 * 1024,
            "README.md is {} bytes",
            readme.len()
        );
    }

    #[test]
    fn the_readme_block_is_replaced_whole() {
        let text = format!("a\n{README_BEGIN}\nold\n{README_END}\nb\n");
        assert_eq!(
            splice_readme(&text, "new\n").unwrap(),
            format!("a\n{README_BEGIN}\n\nnew\n{README_END}\nb\n")
        );
        assert!(splice_readme("no block", "x").is_err());
    }

    #[test]
    fn medians_and_ranges() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[1.0, 2.0]), Some(1.5));
        assert_eq!(spread(&[], |v| format!("{v}"), ""), "-");
        assert_eq!(
            spread(&[1.0, 3.0, 2.0], |v| format!("{v:.0}"), " %"),
            "2 % (1-3)"
        );
    }
}
