//! `redjit report BENCH.json [--plot FILE.svg|png] [--out FILE.md]`: a
//! markdown section from a `redjit bench --json` file (this version's or an
//! older reduce-copy one): GPU, driver, date, method, the plot as an image and
//! the table. `redjit report --all benchmarks --out BENCHMARKS.md --readme
//! README.md --plots`: the whole of BENCHMARKS.md, the README's results block
//! and each GPU's plot from the committed result folders ([`all`]). No GPU
//! needed, so a plot can be drawn where fonts are installed.

mod all;
mod candle;
mod format;
pub mod fused_norm;
mod results;
mod tables;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::bench::{BenchReport, panels};
use crate::error::{CliError, CliResult};
use crate::sizes::fmt_size;

#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A file written by `redjit bench ... --json` (or give --all).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub json: Option<PathBuf>,

    /// Report every result folder DIR/<gpu>/ (bench-*.json, the torch-*.json
    /// beside them, results.toml): the whole of BENCHMARKS.md.
    #[arg(long, value_name = "DIR")]
    pub all: Option<PathBuf>,

    /// With --all: also replace the results block of this README.
    #[arg(long, value_name = "FILE", requires = "all")]
    pub readme: Option<PathBuf>,

    /// With --all: also draw each folder's plot.svg (GB/s against size per
    /// family, the copy as roofline).
    #[arg(long, requires = "all")]
    pub plots: bool,

    /// Also draw the plot (GB/s against size per kernel, copy roofline) to FILE.
    #[arg(long, value_name = "FILE", conflicts_with = "all")]
    pub plot: Option<PathBuf>,

    /// Write the markdown to FILE instead of stdout; the image link is made
    /// relative to FILE's folder.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn load(path: &Path) -> CliResult<BenchReport> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    let mut r: BenchReport = serde_json::from_str(&text).map_err(|e| {
        CliError::usage(format!(
            "{} is not a `redjit bench --json` file: {e}",
            path.display()
        ))
    })?;
    // Older files: one size for every kernel, the copy at it.
    for k in &mut r.kernels {
        if k.n == 0 {
            k.n = r.n;
        }
        if k.bytes == 0 {
            k.bytes = k.bytes_per_elem.unwrap_or(0) * k.n;
        }
    }
    if r.copy.is_empty() && r.copy_gbps > 0.0 {
        r.copy.push(crate::bench::CopyPoint {
            n: r.n,
            bytes: 8 * r.n,
            median_us: 8.0 * r.n as f64 / r.copy_gbps / 1e3,
            gbps: r.copy_gbps,
        });
    }
    Ok(r)
}

pub fn report_cmd(args: &ReportArgs) -> CliResult {
    if let Some(root) = &args.all {
        return all::all_cmd(
            root,
            args.out.as_deref(),
            args.readme.as_deref(),
            args.plots,
        );
    }
    let Some(json) = &args.json else {
        return Err(CliError::usage("give a bench JSON file or --all DIR"));
    };
    if let Some(p) = &args.plot {
        crate::plot::format_of(p)?;
    }
    let r = load(json)?;
    if let Some(p) = &args.plot {
        let title = format!("{} ({}), driver {}, {}", r.gpu, r.arch, r.driver, r.date);
        crate::plot::draw(p, &title, &panels(&r.kernels, &r.copy))?;
    }
    let image = args
        .plot
        .as_ref()
        .map(|p| relative_to(p, args.out.as_deref()));
    let md = markdown(&r, json, image.as_deref());
    match &args.out {
        Some(out) => std::fs::write(out, md)
            .map_err(|e| CliError::failure(format!("cannot write {}: {e}", out.display()))),
        None => {
            print!("{md}");
            Ok(())
        }
    }
}

/// `plot` as a link from the folder of `md` (as given, when either is absolute
/// or there is no markdown file).
fn relative_to(plot: &Path, md: Option<&Path>) -> String {
    let dir = md
        .and_then(Path::parent)
        .filter(|d| !d.as_os_str().is_empty());
    match dir {
        Some(d) if plot.is_relative() && d.is_relative() => plot
            .strip_prefix(d)
            .map_or_else(|_| plot.display().to_string(), |p| p.display().to_string()),
        _ => plot.display().to_string(),
    }
}

fn markdown(r: &BenchReport, source: &Path, image: Option<&str>) -> String {
    let mut s = String::new();
    let families: Vec<&str> = {
        let mut f: Vec<&str> = Vec::new();
        for k in &r.kernels {
            if !f.contains(&k.family.as_str()) {
                f.push(&k.family);
            }
        }
        f
    };
    let _ = writeln!(
        s,
        "GPU: {} ({}), driver {}, date {}. Raw JSON: `{}`.",
        r.gpu,
        r.arch,
        r.driver,
        r.date,
        source.display()
    );
    let _ = writeln!(
        s,
        "Median of {} launches (CUDA events){}; buffers rotated to cover at least 4x L2; GB/s counts each input read once and each output written once; % of copy is against the device-to-device copy of the same number of f32 elements, measured in the same run.",
        r.iters,
        if r.warmup > 0 {
            format!(" after {} warm-up", r.warmup)
        } else {
            String::new()
        }
    );
    let _ = writeln!(s);
    if !r.copy.is_empty() {
        let copies: Vec<String> = r
            .copy
            .iter()
            .map(|c| format!("{}: {:.0} GB/s", fmt_size(c.n), c.gbps))
            .collect();
        let _ = writeln!(s, "Copy roofline: {}.", copies.join(", "));
        let _ = writeln!(s);
    }
    if let Some(img) = image {
        let _ = writeln!(s, "![GB/s against size, {}]({img})", families.join(", "));
        let _ = writeln!(s);
    }
    let compare = r
        .kernels
        .iter()
        .any(|k| k.torch_eager_gbps.is_some() || k.torch_compile_gbps.is_some());
    for family in families {
        let _ = writeln!(s, "### {family}");
        let _ = writeln!(s);
        let mut head = "| kernel | size | µs | GB/s | % of copy |".to_string();
        let mut rule = "|---|---|---|---|---|".to_string();
        if compare {
            head += " PyTorch eager GB/s | torch.compile GB/s | vs PyTorch |";
            rule += "---|---|---|";
        }
        let _ = writeln!(s, "{head}");
        let _ = writeln!(s, "{rule}");
        for k in r.kernels.iter().filter(|k| k.family == family) {
            let size = k.shape.clone().unwrap_or_else(|| fmt_size(k.n));
            let _ = write!(
                s,
                "| `{}` | {size} | {:.1} | {:.0} | {:.1} % |",
                k.name, k.median_us, k.gbps, k.pct_of_copy
            );
            if compare {
                let g = |v: Option<f64>| v.map_or("-".to_string(), |g| format!("{g:.0}"));
                // Against torch.compile where it ran, else eager.
                let ratio = k
                    .torch_compile_gbps
                    .or(k.torch_eager_gbps)
                    .filter(|&v| v > 0.0)
                    .map_or("-".to_string(), |v| format!("{:.2}×", k.gbps / v));
                let _ = write!(
                    s,
                    " {} | {} | {ratio} |",
                    g(k.torch_eager_gbps),
                    g(k.torch_compile_gbps)
                );
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_relative_to_the_markdown() {
        assert_eq!(
            relative_to(
                Path::new("benchmarks/x/bench.svg"),
                Some(Path::new("benchmarks/x/s.md"))
            ),
            "bench.svg"
        );
        assert_eq!(relative_to(Path::new("a/b.svg"), None), "a/b.svg");
    }

    /// A reduce-copy JSON of the first format (two of its kernels, values as
    /// measured) still reads.
    #[test]
    fn older_files_read_and_render() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bench-first-format.json");
        let r = load(&path).unwrap();
        assert!(r.kernels.iter().all(|k| k.n == r.n && k.bytes > 0));
        assert_eq!(r.copy.len(), 1);
        let md = markdown(&r, &path, Some("bench.svg"));
        assert!(md.contains("H100") && md.contains("![GB/s against size, reduce_copy](bench.svg)"));
        assert!(md.contains("| `reduce_copy_u4_f32_bf16_TA_T_sum_rn` | 2^28 |"));
    }
}
