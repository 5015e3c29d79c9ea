//! `redjit tune`: on the present GPU, times each candidate strategy of a
//! family at each shape with `bench`'s method (rotated over 4x L2, the launch
//! gap hidden, alternating rounds), keeps the fastest that matches the CPU
//! twin, and writes a tuning table the runtime then takes for this device.
//!
//! Each finished shape is appended to `<out>.partial.jsonl`, so a killed run
//! starts where it stopped; the table is written when every shape is done.
//! A table already at `--out` keeps its other families' rows.

mod norm;
mod reduce;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use redjit_codegen::tuning::{DeviceKey, TableDevice, Tuning, TuningTable, write_table};
use redjit_codegen::{DType, KernelSpec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::bench::{Bench, Common};
use crate::error::{CliError, CliResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TuneFamily {
    /// Softmax, log-softmax, layer norm and RMS norm (and the residual forms):
    /// layouts per row length and row count.
    Norm,
    /// Full-array, row and column reductions: threads per block and loads in
    /// flight per size.
    Reduce,
}

/// A norm tune's output type (`--outputs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NormOutput {
    /// The input type.
    Same,
    /// FP8 e4m3 with a scale per row (`_qd`).
    E4m3,
}

#[derive(Debug, Clone, Args)]
pub struct TuneArgs {
    #[command(flatten)]
    pub common: Common,

    /// The family to tune.
    #[arg(long, value_enum, default_value_t = TuneFamily::Norm)]
    pub family: TuneFamily,

    /// Shapes ROWSxCOLS, comma-separated [default: norm: the benchmark's main
    /// and LLM shapes; reduce: 32768x4096,8192x16384 for row and column sums].
    /// A reduce tune takes its full-array sizes from --sizes [default:
    /// 2^20,2^24,2^28].
    #[arg(long)]
    pub shapes: Option<String>,

    /// Element types, comma-separated (norm: input = output; reduce: the input).
    #[arg(long, value_delimiter = ',', value_parser = crate::args::parse_dtype, default_values_t = vec![DType::F32, DType::BF16])]
    pub dtypes: Vec<DType>,

    /// Norm outputs, comma-separated: `same` (the input type) and `e4m3`
    /// (layer and RMS norm, with and without the residual, a scale per row;
    /// rows up to 16384).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = vec![NormOutput::Same, NormOutput::E4m3])]
    pub outputs: Vec<NormOutput>,

    /// Where to write the table [default: the cache directory's table for
    /// this device, which the runtime then takes].
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// Rounds over each shape's candidates, in alternating order.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,

    /// After the first round, only the candidates within FACTOR of its
    /// fastest are timed again (`inf`: every candidate that ran, every round).
    #[arg(long, value_name = "FACTOR", default_value_t = DEFAULT_SCREEN)]
    pub screen: f64,

    /// (norm) After the rounds, a shape's two fastest candidates again, in
    /// rounds of their own, at each of these launch bounds (blocks an SM,
    /// comma-separated) other than their own that an SM holds [default: none].
    #[arg(long, value_delimiter = ',')]
    pub bounds: Vec<u32>,

    /// The `result` each row names (e.g. the committed JSON of this run).
    #[arg(long)]
    pub result: Option<String>,

    /// Write the table (`--out`) from a finished tune's per-shape results
    /// (its `.partial.jsonl`), without a GPU: the tables shipped in the
    /// repository are made so from their committed results.
    #[arg(long, value_name = "JSONL")]
    pub from_results: Option<PathBuf>,
}

/// The device a results line was measured on, as the tables key it (the
/// same fields in every family's lines).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CellDevice {
    gpu: String,
    arch: String,
    sms: u32,
    l2_mib: u32,
}

impl CellDevice {
    fn of(d: &TableDevice) -> CellDevice {
        CellDevice {
            gpu: d.name.clone(),
            arch: d.arch.to_string(),
            sms: d.sms,
            l2_mib: d.l2_mib,
        }
    }

    fn table_device(&self) -> CliResult<TableDevice> {
        Ok(TableDevice {
            name: self.gpu.clone(),
            arch: self.arch.parse()?,
            sms: self.sms,
            l2_mib: self.l2_mib,
        })
    }
}

/// `--screen`'s default: a candidate 10 % behind the fastest after one round
/// is no pick (the rounds of one candidate differ by a few per cent), and
/// the later rounds of such candidates were most of a tune's time.
pub const DEFAULT_SCREEN: f64 = 1.10;

/// Each candidate's times over `rounds` alternating rounds (`time(i)`: the
/// median µs of candidate i, infinite where it cannot run). The first round
/// times every candidate; later rounds only those that ran within `screen`
/// of that round's fastest, so a candidate's list is one or `rounds` long.
fn timed_rounds(
    n: usize,
    rounds: usize,
    screen: f64,
    mut time: impl FnMut(usize) -> CliResult<f64>,
) -> CliResult<Vec<Vec<f64>>> {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut timed: Vec<usize> = (0..n).collect();
    for round in 0..rounds {
        if round == 1 {
            let best = times.iter().map(|t| t[0]).fold(f64::INFINITY, f64::min);
            timed.retain(|&i| times[i][0].is_finite() && times[i][0] <= best * screen);
        }
        let order: Vec<usize> = if round % 2 == 0 {
            timed.clone()
        } else {
            timed.iter().rev().copied().collect()
        };
        for i in order {
            let us = time(i)?;
            times[i].push(us);
        }
    }
    Ok(times)
}

/// The fastest of `times` (sorted, fastest first) that ran and that `check`
/// finds matching the CPU twin, each one it drops said on `b`; an error
/// naming the cell `key` where none does.
fn fastest_matching<S: KernelSpec + Clone>(
    b: &Bench<'_>,
    key: &str,
    times: &[(S, Vec<f64>)],
    mut check: impl FnMut(&S) -> CliResult<Result<(), String>>,
) -> CliResult<S> {
    for (spec, ts) in times {
        if !middle(ts).is_finite() {
            break;
        }
        match check(spec)? {
            Ok(()) => return Ok(spec.clone()),
            Err(why) => b.println(format!("tune: {} dropped: {why}", spec.name())),
        }
    }
    Err(CliError::failure(format!(
        "{key}: no candidate matched the CPU twin"
    )))
}

/// The median of a candidate's round medians.
fn middle(times: &[f64]) -> f64 {
    let mut t = times.to_vec();
    t.sort_by(f64::total_cmp);
    t.get(t.len() / 2).copied().unwrap_or(f64::INFINITY)
}

/// Where a tune of `out` keeps its finished shapes.
fn partial_path(out: &Path) -> PathBuf {
    let mut p = out.as_os_str().to_owned();
    p.push(".partial.jsonl");
    PathBuf::from(p)
}

/// A results file's cells by key; a line cut by a kill is left out (and
/// measured again).
fn read_cells<C: DeserializeOwned>(
    path: &Path,
    key: fn(&C) -> String,
) -> CliResult<BTreeMap<String, C>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(CliError::failure(format!("{}: {e}", path.display()))),
    };
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<C>(l).ok())
        .map(|c| (key(&c), c))
        .collect())
}

/// The device a tune measures, the table it started from and the files it
/// writes.
struct Run {
    device: TableDevice,
    before: Tuning,
    out: PathBuf,
    partial: PathBuf,
    log: Option<File>,
}

impl Run {
    /// A tune on `b`'s GPU: its table's path (`--out`, else the cache
    /// directory's for this device) and its results file, opened to append.
    fn on_gpu(b: &Bench<'_>, a: &TuneArgs) -> CliResult<Run> {
        let rt = b.rt;
        let key = redjit_runtime::tuning::device_key(rt.device());
        let out = match &a.out {
            Some(p) => p.clone(),
            None => {
                let dir = redjit_runtime::cache::default_dir().ok_or_else(|| {
                    CliError::usage(
                        "no cache directory (REDJIT_CACHE_DIR, XDG_CACHE_HOME, HOME): give --out",
                    )
                })?;
                redjit_runtime::tuning::user_table_path(&dir, &key)
            }
        };
        if let Some(dir) = out.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::failure(format!("creating {}: {e}", dir.display())))?;
        }
        let partial = partial_path(&out);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&partial)
            .map_err(|e| CliError::failure(format!("{}: {e}", partial.display())))?;
        let selection = rt.tuning();
        b.println(format!(
            "tune: table in use {} ({}); results in {}",
            selection.tuning.chain().join(" -> "),
            selection.why,
            partial.display()
        ));
        Ok(Run {
            device: TableDevice {
                name: key.name.clone(),
                arch: key.arch,
                sms: key.sms,
                l2_mib: (key.l2_bytes >> 20).max(1) as u32,
            },
            before: selection.tuning.clone(),
            out,
            partial,
            log: Some(log),
        })
    }

    /// A table written from finished results, without a GPU: `device` is
    /// the one they were measured on.
    fn offline(device: TableDevice, out: &Path) -> Run {
        let before = Tuning::for_device(&DeviceKey {
            name: device.name.clone(),
            arch: device.arch,
            sms: device.sms,
            l2_bytes: u64::from(device.l2_mib) << 20,
        })
        .tuning;
        Run {
            device,
            before,
            out: out.to_path_buf(),
            partial: partial_path(out),
            log: None,
        }
    }

    /// Appends one finished shape to the results file.
    fn record(&mut self, cell: &impl Serialize) -> CliResult {
        let line = serde_json::to_string(cell).map_err(|e| CliError::failure(e.to_string()))?;
        if let Some(log) = &mut self.log {
            writeln!(log, "{line}")
                .map_err(|e| CliError::failure(format!("{}: {e}", self.partial.display())))?;
        }
        Ok(())
    }

    /// Writes the table at `out`: a table already there keeps its other
    /// families' rows (`set` replaces this family's); a new one takes the
    /// root of the table the tune started from as its base.
    fn write(
        &self,
        set: impl FnOnce(&mut TuningTable),
        rows: impl Fn(&TuningTable) -> usize,
    ) -> CliResult {
        let name = self.out.display().to_string();
        let kept = std::fs::read_to_string(&self.out)
            .ok()
            .and_then(|text| redjit_codegen::tuning::parse_table(&name, &text).ok())
            .filter(|t| t.device == self.device);
        let mut table = kept.unwrap_or_else(|| TuningTable {
            name: name.clone(),
            // Calls the tune did not measure keep the shipped table they took
            // (a shipped table written anew takes its own base).
            base: self
                .before
                .chain()
                .iter()
                .find(|n| {
                    Some(n.as_str()) != self.out.file_stem().and_then(|f| f.to_str())
                        && Tuning::shipped(n).is_ok()
                })
                .cloned(),
            device: self.device.clone(),
            norm: Vec::new(),
            reduce: Vec::new(),
            all_reduce: Vec::new(),
            reduce_copy: None,
        });
        set(&mut table);
        let d = &self.device;
        let first = format!(
            "Strategies measured on the {} ({}, {} SMs) by `redjit tune`,",
            d.name, d.arch, d.sms
        );
        let header = [
            first.as_str(),
            "each row the fastest of its candidates over the shapes of its class that",
            "matched the CPU twin; calls no row serves take the base table's rows.",
        ];
        let text = write_table(&table, &header);
        // The text must read back as a table before it replaces anything.
        redjit_codegen::tuning::parse_table(&name, &text)?;
        std::fs::write(&self.out, text)
            .map_err(|e| CliError::failure(format!("{}: {e}", self.out.display())))?;
        println!(
            "wrote {} ({} rows of this family)",
            self.out.display(),
            rows(&table)
        );
        Ok(())
    }
}

pub fn tune_cmd(a: &TuneArgs) -> CliResult {
    if a.rounds == 0 {
        return Err(CliError::usage("--rounds must be at least 1"));
    }
    if a.screen.is_nan() || a.screen < 1.0 {
        return Err(CliError::usage(format!(
            "--screen {}: a factor of the fastest first-round time, at least 1 (inf: time every candidate every round)",
            a.screen
        )));
    }
    if let Some(out) = &a.out
        && let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty())
        && !dir.is_dir()
    {
        return Err(CliError::usage(format!(
            "--out {}: the folder {} does not exist",
            out.display(),
            dir.display()
        )));
    }
    if a.from_results.is_some() && a.out.is_none() {
        return Err(CliError::usage("--from-results needs --out"));
    }
    match a.family {
        TuneFamily::Norm => norm::tune(a),
        TuneFamily::Reduce => reduce::tune(a),
    }
}

/// `--from-results`' cells, and the device they were measured on (`device`
/// reads it from a cell).
fn finished<C: DeserializeOwned>(
    a: &TuneArgs,
    results: &Path,
    key: fn(&C) -> String,
    device: fn(&C) -> &CellDevice,
) -> CliResult<(BTreeMap<String, C>, Run)> {
    let done = read_cells(results, key)?;
    let Some(first) = done.values().next() else {
        return Err(CliError::usage(format!(
            "--from-results {}: no finished shape of this family in it",
            results.display()
        )));
    };
    let out = a
        .out
        .as_deref()
        .ok_or_else(|| CliError::usage("--from-results needs --out"))?;
    let run = Run::offline(device(first).table_device()?, out);
    Ok((done, run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redjit_codegen::tuning::parse_table;

    fn args(family: TuneFamily, result: &str) -> TuneArgs {
        TuneArgs {
            common: Common::for_tests(),
            family,
            shapes: None,
            dtypes: vec![DType::F32, DType::BF16],
            outputs: vec![NormOutput::Same, NormOutput::E4m3],
            out: None,
            rounds: 3,
            screen: DEFAULT_SCREEN,
            bounds: Vec::new(),
            result: Some(result.into()),
            from_results: None,
        }
    }

    #[test]
    fn later_rounds_time_only_the_candidates_near_the_first_rounds_fastest() {
        // First-round times: candidate 3 cannot run, 2 is 20 % behind.
        let first = [1.0, 1.05, 1.2, f64::INFINITY, 1.1];
        let mut calls = Vec::new();
        let times = timed_rounds(5, 3, 1.1, |i| {
            calls.push(i);
            Ok(first[i] + 0.01 * calls.len() as f64)
        })
        .unwrap();
        let lens: Vec<usize> = times.iter().map(Vec::len).collect();
        // 4, at 1.15 with the drift, is past 1.1 x 1.01.
        assert_eq!(lens, [3, 3, 1, 1, 1]);
        // Rounds alternate their order.
        assert_eq!(calls, [0, 1, 2, 3, 4, 1, 0, 0, 1]);
        // Without a screen every candidate that ran runs every round.
        let all = timed_rounds(5, 3, f64::INFINITY, |i| Ok(first[i])).unwrap();
        assert_eq!(
            all.iter().map(Vec::len).collect::<Vec<_>>(),
            [3, 3, 3, 1, 3]
        );
        // An error stops the rounds.
        assert!(timed_rounds(2, 3, 1.1, |_| Err(CliError::failure("x"))).is_err());
    }

    #[test]
    fn a_screen_below_one_is_refused_by_name() {
        let a = TuneArgs {
            screen: 0.9,
            ..args(TuneFamily::Norm, "x")
        };
        let err = tune_cmd(&a).unwrap_err().to_string();
        assert!(
            err.contains("--screen 0.9") && err.contains("at least 1"),
            "{err}"
        );
    }

    #[test]
    fn the_shipped_h200_table_is_what_its_committed_tunes_make() {
        // The table must not drift from the measurements it names: written
        // again from them, each family's rows come out the same.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let shipped_text = std::fs::read_to_string(root.join("codegen/tuning/h200.toml")).unwrap();
        let shipped = parse_table("h200", &shipped_text).unwrap();
        let dir = std::env::temp_dir().join(format!("redjit-tune-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("h200.toml");
        for (family, results) in [
            (TuneFamily::Norm, "benchmarks/h200/tune-norm.jsonl"),
            (TuneFamily::Reduce, "benchmarks/h200/tune-reduce.jsonl"),
        ] {
            let a = TuneArgs {
                out: Some(out.clone()),
                from_results: Some(root.join(results)),
                ..args(family, results)
            };
            tune_cmd(&a).unwrap();
        }
        let made = parse_table("h200", &std::fs::read_to_string(&out).unwrap()).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(made.base, shipped.base);
        assert_eq!(made.device, shipped.device);
        let strip_lines = |t: &TuningTable| {
            let norm: Vec<_> = t
                .norm
                .iter()
                .map(|r| {
                    (
                        r.op,
                        r.algo,
                        r.residual,
                        r.types,
                        r.cols.clone(),
                        r.rows.clone(),
                        r.strategy,
                        r.reason.clone(),
                    )
                })
                .collect();
            let reduce: Vec<_> = t
                .reduce
                .iter()
                .map(|r| {
                    (
                        r.axis,
                        r.ops.clone(),
                        r.input,
                        r.size.clone(),
                        r.rows.clone(),
                        r.strategy,
                        r.reason.clone(),
                    )
                })
                .collect();
            (norm, reduce)
        };
        assert_eq!(strip_lines(&made), strip_lines(&shipped));
    }
}
