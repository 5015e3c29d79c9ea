//! The committed results of one GPU (or group of GPUs): `benchmarks/<gpu>/`
//! holds `bench-<what>.json` files written by `redjit bench ... --json`, the
//! `torch-<what>.json` files `scripts/torch_ref.py` wrote beside them in the
//! same device call, and an optional `results.toml` that names the GPU and
//! gives each file a title, a paragraph, its source commit and the commands
//! that made it. Any other file is left alone, and a bench file that
//! `results.toml` does not describe is still reported, under its file name.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::candle::CandleReport;
use super::fused_norm::FusedNormReport;

use crate::bench::BenchReport;
use crate::error::{CliError, CliResult};
use crate::torch_ref::{TorchEntry, TorchRef};

/// `results.toml`: every key optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// The heading, e.g. "NVIDIA H200" (default: the GPU the files name).
    pub gpu: Option<String>,
    /// Sections are ordered by this (default 100), then by folder name.
    pub order: Option<i64>,
    /// A paragraph under the heading: the machine, driver, what is current.
    pub about: Option<String>,
    /// The result files described, in the order they are reported.
    #[serde(default, rename = "file")]
    pub files: Vec<FileMeta>,
}

impl Meta {
    fn position(&self, file: &str) -> Option<usize> {
        self.files.iter().position(|f| f.name == file)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileMeta {
    /// The bench file's name, `bench-norm.json`.
    #[serde(default)]
    pub name: String,
    pub title: Option<String>,
    pub about: Option<String>,
    /// Where the file came from: the build measured and the commit that first
    /// recorded the file.
    pub source: Option<String>,
    /// The commands that reproduce it, one a line.
    #[serde(default)]
    pub commands: Vec<String>,
}

/// One row of `redjit bench all-reduce --json` (older files lack some fields).
#[derive(Debug, Clone, Deserialize)]
pub struct ArRow {
    pub kernel: String,
    pub ranks: u32,
    #[serde(default)]
    pub placement: String,
    pub dtype: String,
    pub bytes: u64,
    pub median_us: f64,
    #[serde(default)]
    pub nccl_us: Option<f64>,
    #[serde(default)]
    pub symm_one_shot_us: Option<f64>,
    #[serde(default)]
    pub symm_two_shot_us: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LaunchFloor {
    pub median_us: f64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ArReport {
    pub date: String,
    #[serde(default)]
    pub launch_floor: Option<LaunchFloor>,
    pub rows: Vec<ArRow>,
}

/// What one `bench-*.json` holds.
#[derive(Debug, Clone)]
pub enum Measured {
    Kernels(Box<BenchReport>),
    AllReduce(ArReport),
    Candle(CandleReport),
    FusedNorm(FusedNormReport),
}

/// One `bench-<stem>.json` with its anchors and description.
#[derive(Debug, Clone)]
pub struct BenchFile {
    /// `bench-norm.json`
    pub file: String,
    pub measured: Measured,
    /// The `torch-*.json` files paired with it (file names).
    pub anchor_files: Vec<String>,
    pub anchors: Vec<TorchEntry>,
    /// PyTorch's version as the anchor file records it.
    pub torch_version: Option<String>,
    /// The GPU the anchor file names (the all-reduce files name none).
    pub anchor_gpu: Option<String>,
    pub meta: FileMeta,
}

impl BenchFile {
    pub fn date(&self) -> &str {
        match &self.measured {
            Measured::Kernels(r) => &r.date,
            Measured::AllReduce(r) => &r.date,
            Measured::Candle(r) => &r.date,
            Measured::FusedNorm(r) => &r.date,
        }
    }

    pub fn title(&self) -> String {
        self.meta.title.clone().unwrap_or_else(|| {
            let stem = stem(&self.file, "bench-", ".json").unwrap_or(&self.file);
            stem.replace('-', " ")
        })
    }
}

/// One `benchmarks/<dir>/`.
#[derive(Debug, Clone)]
pub struct GpuResults {
    /// The folder's name (`h200`).
    pub dir: String,
    pub meta: Meta,
    pub files: Vec<BenchFile>,
}

impl GpuResults {
    /// The heading: `results.toml`'s `gpu`, else the GPU the files name (with
    /// the rank count for all-reduce files), else the folder's name.
    pub fn gpu(&self) -> String {
        if let Some(g) = &self.meta.gpu {
            return g.clone();
        }
        for f in &self.files {
            match &f.measured {
                Measured::Kernels(r) => return r.gpu.clone(),
                Measured::Candle(r) => return r.gpu.clone(),
                Measured::FusedNorm(r) => return format!("{} x {}", r.world, r.gpu),
                Measured::AllReduce(r) => {
                    if let (Some(g), Some(row)) = (&f.anchor_gpu, r.rows.first()) {
                        return format!("{} x {g}", row.ranks);
                    }
                }
            }
        }
        self.dir.clone()
    }

    /// The newest date among the files.
    pub fn date(&self) -> &str {
        self.files.iter().map(BenchFile::date).max().unwrap_or("")
    }
}

/// `bench-<stem>.json` -> `stem`.
fn stem<'a>(file: &'a str, prefix: &str, suffix: &str) -> Option<&'a str> {
    file.strip_prefix(prefix)?.strip_suffix(suffix)
}

fn read(path: &Path) -> CliResult<String> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))
}

fn parse_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> CliResult<T> {
    serde_json::from_str(&read(path)?)
        .map_err(|e| CliError::usage(format!("{} is not {what}: {e}", path.display())))
}

/// The torch files of `bench`'s stem: `torch-<stem>.json` where it exists,
/// else the longest `torch-<t>.json` whose `t-` begins the stem (the call that
/// measured several families: `bench-reduce-copy` beside `torch-reduce`);
/// then each `torch-<that>-<more>.json` that no bench file claims as its own
/// (`torch-norm-compile.json` adds torch.compile to `torch-norm.json`).
pub fn pair(bench: &str, torch: &[&str], benches: &[&str]) -> Vec<String> {
    let base = if torch.contains(&bench) {
        Some(bench)
    } else {
        torch
            .iter()
            .copied()
            .filter(|t| bench.starts_with(&format!("{t}-")))
            .max_by_key(|t| t.len())
    };
    let Some(base) = base else {
        return Vec::new();
    };
    let mut out = vec![base.to_string()];
    let mut extra: Vec<&str> = torch
        .iter()
        .copied()
        .filter(|t| t.starts_with(&format!("{base}-")) && !benches.contains(t))
        .collect();
    extra.sort_unstable();
    out.extend(extra.into_iter().map(String::from));
    out
}

/// Reads `dir` (one GPU's folder).
pub fn load_dir(dir: &Path) -> CliResult<GpuResults> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let meta_path = dir.join("results.toml");
    let meta: Meta = if meta_path.is_file() {
        toml::from_str(&read(&meta_path)?)
            .map_err(|e| CliError::usage(format!("{}: {}", meta_path.display(), e.message())))?
    } else {
        Meta::default()
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| CliError::usage(format!("cannot list {}: {e}", dir.display())))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let benches: Vec<&str> = names
        .iter()
        .filter_map(|n| stem(n, "bench-", ".json"))
        .collect();
    let torch: Vec<&str> = names
        .iter()
        .filter_map(|n| stem(n, "torch-", ".json"))
        .collect();
    for key in meta.files.iter().map(|f| &f.name) {
        if !names.contains(key) {
            return Err(CliError::usage(format!(
                "{} describes {key}, which is not in {}",
                meta_path.display(),
                dir.display()
            )));
        }
    }
    let mut files = Vec::new();
    for b in &benches {
        let file = format!("bench-{b}.json");
        let path = dir.join(&file);
        let value: serde_json::Value = parse_json(&path, "JSON")?;
        let measured = if value.get("candle_ops").is_some() {
            Measured::Candle(parse_json(&path, "a redjit-candle bench file")?)
        } else if value.pointer("/rows/0/fused_us").is_some() {
            Measured::FusedNorm(parse_json(
                &path,
                "a `redjit bench all-reduce --fused-norm --json` file",
            )?)
        } else if value.get("rows").is_some() {
            Measured::AllReduce(parse_json(
                &path,
                "a `redjit bench all-reduce --json` file",
            )?)
        } else {
            Measured::Kernels(Box::new(super::load(&path)?))
        };
        let anchor_files: Vec<String> = pair(b, &torch, &benches)
            .into_iter()
            .map(|t| format!("torch-{t}.json"))
            .collect();
        let (mut anchors, mut torch_version, mut anchor_gpu) = (Vec::new(), None, None);
        for a in &anchor_files {
            let f: TorchRef = parse_json(&dir.join(a), "a `torch_ref.py` file")?;
            anchors.extend(f.entries);
            torch_version = torch_version.or(f.torch);
            anchor_gpu = anchor_gpu.or(f.gpu);
        }
        files.push(BenchFile {
            meta: meta
                .position(&file)
                .map(|i| meta.files[i].clone())
                .unwrap_or_default(),
            file,
            measured,
            anchor_files,
            anchors,
            torch_version,
            anchor_gpu,
        });
    }
    // The files results.toml describes first, in its order, then the others
    // by name.
    files.sort_by_key(|f| (meta.position(&f.file).unwrap_or(usize::MAX), f.file.clone()));
    Ok(GpuResults {
        dir: name,
        meta,
        files,
    })
}

/// Every `<root>/<dir>/` with at least one bench file, in report order.
pub fn load_all(root: &Path) -> CliResult<Vec<GpuResults>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .map_err(|e| CliError::usage(format!("cannot list {}: {e}", root.display())))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for d in dirs {
        let g = load_dir(&d)?;
        if !g.files.is_empty() {
            out.push(g);
        }
    }
    if out.is_empty() {
        return Err(CliError::usage(format!(
            "no results under {}: expected {}/<gpu>/bench-*.json",
            root.display(),
            root.display()
        )));
    }
    out.sort_by(|a, b| {
        (a.meta.order.unwrap_or(100), &a.dir).cmp(&(b.meta.order.unwrap_or(100), &b.dir))
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_files_pair_with_their_torch_files() {
        let torch = ["norm", "norm-compile", "reduce", "ar"];
        let benches = [
            "norm",
            "norm-long",
            "norm-llm",
            "reduce",
            "reduce-copy",
            "ar-graph",
        ];
        assert_eq!(pair("norm", &torch, &benches), ["norm", "norm-compile"]);
        assert_eq!(
            pair("norm-long", &torch, &benches),
            ["norm", "norm-compile"]
        );
        assert_eq!(pair("reduce-copy", &torch, &benches), ["reduce"]);
        assert_eq!(pair("ar-graph", &torch, &benches), ["ar"]);
        assert!(pair("nms", &torch, &benches).is_empty());
        // A torch file of a bench file's own is not another's extra.
        let torch = ["norm", "norm-llm"];
        assert_eq!(pair("norm", &torch, &benches), ["norm"]);
        assert_eq!(pair("norm-llm", &torch, &benches), ["norm-llm"]);
    }
}
