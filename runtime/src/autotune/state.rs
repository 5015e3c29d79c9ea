//! Autotune's state: the mode, the picks kept so far and the file they
//! persist in. It times nothing itself: the caller hands it the timing.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redjit_codegen::tuning::closest_candidates;
use redjit_codegen::tuning::{DeviceKey, ROW_CLASSES, cols_class, device_slug, row_class};
use redjit_codegen::{KernelSpec, NormSpec};

/// What stopped a class's timing, in a line (a warning, never the caller's error).
pub type Tried<T> = std::result::Result<T, String>;

/// The most layouts one class times.
pub const MAX_CANDIDATES: usize = 8;

/// When a runtime times layouts itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Autotune {
    /// Never: the tuning table decides.
    #[default]
    Off,
    /// On a device no table was measured on (`Selection::measured_here`).
    Untuned,
    /// On every device, the table's pick one candidate among others.
    Always,
}

impl Autotune {
    /// `$REDJIT_AUTOTUNE`: `1` (or `untuned`) and `always`; unset, empty or
    /// `0` is off. Another value is a warning and off.
    pub fn from_env() -> Autotune {
        match std::env::var("REDJIT_AUTOTUNE").as_deref() {
            Err(_) | Ok("" | "0") => Autotune::Off,
            Ok("1" | "untuned") => Autotune::Untuned,
            Ok("always") => Autotune::Always,
            Ok(other) => {
                eprintln!(
                    "redjit: warning: REDJIT_AUTOTUNE={other:?} is not 0, 1, untuned or always; autotune stays off"
                );
                Autotune::Off
            }
        }
    }
}

/// One class's outcome, as [`Runtime::autotuned`](crate::Runtime::autotuned) lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct AutotunePick {
    /// The class (operation, dtypes, row and row-length classes).
    pub class: String,
    /// The layout kept.
    pub pick: NormSpec,
    /// Timed by this process (false: read from the cache directory).
    pub timed_here: bool,
    /// Wall time of the first use: compiles, scratch buffers and timing.
    pub first_use: Duration,
    /// Candidates timed.
    pub candidates: usize,
}

/// A runtime's autotune state: the mode, the picks so far, and the file
/// they persist in.
pub(crate) struct AutotuneState {
    mode: Autotune,
    file: Option<PathBuf>,
    picks: Mutex<HashMap<String, AutotunePick>>,
}

/// `<cache dir>/tuning/<device slug>.autotune.jsonl`: one pick a line.
pub fn picks_path(dir: &Path, key: &DeviceKey) -> PathBuf {
    dir.join("tuning")
        .join(format!("{}.autotune.jsonl", device_slug(key)))
}

/// The class of a call of `spec`'s operation at `rows` x `cols`.
pub fn class_of(spec: &NormSpec, rows: usize, cols: usize) -> String {
    let (lo_rows, hi_rows) = ROW_CLASSES[row_class(rows as u64)];
    let (lo_cols, hi_cols) = cols_class(cols as u64);
    let algo = spec.algo.map_or(String::new(), |a| format!("_{a}"));
    let res = if spec.residual { "_res" } else { "" };
    format!(
        "{}{algo}{res}_{}_{}_rows{lo_rows}-{hi_rows}_cols{lo_cols}-{hi_cols}",
        spec.op, spec.input, spec.output
    )
}

impl AutotuneState {
    /// The state of a runtime whose table is `measured_here` or not, its picks
    /// read from `dir` (lines that do not read are skipped with a warning).
    pub(crate) fn new(
        mode: Autotune,
        measured_here: bool,
        dir: Option<&Path>,
        key: &DeviceKey,
    ) -> AutotuneState {
        let mode = match mode {
            Autotune::Untuned if measured_here => Autotune::Off,
            m => m,
        };
        let file = dir.map(|d| picks_path(d, key));
        let mut picks = HashMap::new();
        if mode != Autotune::Off
            && let Some(f) = &file
        {
            read_picks(f, &mut picks);
        }
        AutotuneState {
            mode,
            file,
            picks: Mutex::new(picks),
        }
    }

    /// The mode in effect (`Untuned` on a measured device is `Off`).
    pub(crate) fn mode(&self) -> Autotune {
        self.mode
    }

    /// Whether calls are timed on this runtime.
    pub(crate) fn on(&self) -> bool {
        self.mode != Autotune::Off
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, AutotunePick>> {
        self.picks.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn list(&self) -> Vec<AutotunePick> {
        let mut v: Vec<AutotunePick> = self.lock().values().cloned().collect();
        v.sort_by(|a, b| a.class.cmp(&b.class));
        v
    }

    /// The layout for `spec`'s operation at `rows` x `cols`, `table` the
    /// tuning table's pick: a kept pick, or one timed now.
    pub(crate) fn norm(
        &self,
        spec: &NormSpec,
        table: &NormSpec,
        rows: usize,
        cols: usize,
        time: impl FnOnce(&[NormSpec]) -> Tried<Vec<(NormSpec, f64)>>,
    ) -> NormSpec {
        if !self.on() || rows == 0 || cols == 0 {
            return table.clone();
        }
        let class = class_of(spec, rows, cols);
        if let Some(p) = self.lock().get(&class) {
            // A kept pick that cannot hold this row (a class spans row lengths
            // an exact kernel's ragged twin takes) still runs: the launcher
            // routes it, as it routes the table's.
            return p.pick.clone();
        }
        let t0 = Instant::now();
        let base = NormSpec {
            general: false,
            ..spec.clone()
        };
        let cands = closest_candidates(&base, table, cols as u64, MAX_CANDIDATES);
        match time(&cands) {
            Ok(times) => {
                let (pick, _) = times
                    .iter()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .cloned()
                    .unwrap_or((table.clone(), 0.0));
                let kept = AutotunePick {
                    class: class.clone(),
                    pick: pick.clone(),
                    timed_here: true,
                    first_use: t0.elapsed(),
                    candidates: times.len(),
                };
                if let Some(f) = &self.file
                    && let Err(e) = append_pick(f, &class, &pick)
                {
                    eprintln!(
                        "redjit: warning: autotune could not keep {class} in {}: {e}",
                        f.display()
                    );
                }
                self.lock().insert(class, kept);
                pick
            }
            Err(e) => {
                eprintln!(
                    "redjit: warning: autotune of {class} failed ({e}); using the table's {}",
                    table.name()
                );
                // Not timed again in this process.
                self.lock().insert(
                    class.clone(),
                    AutotunePick {
                        class,
                        pick: table.clone(),
                        timed_here: false,
                        first_use: t0.elapsed(),
                        candidates: 0,
                    },
                );
                table.clone()
            }
        }
    }
}

fn read_picks(path: &Path, picks: &mut HashMap<String, AutotunePick>) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return;
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = line
            .split_once('\t')
            .ok_or_else(|| "not a class, a tab and a kernel name".to_owned())
            .and_then(|(class, name)| {
                let spec: NormSpec = name.parse().map_err(|e| format!("{e}"))?;
                spec.validate().map_err(|e| format!("{e}"))?;
                Ok((class.to_owned(), spec))
            });
        match parsed {
            Ok((class, pick)) => {
                picks.insert(
                    class.clone(),
                    AutotunePick {
                        class,
                        pick,
                        timed_here: false,
                        first_use: Duration::ZERO,
                        candidates: 0,
                    },
                );
            }
            Err(why) => eprintln!(
                "redjit: warning: {}:{}: skipped an autotune pick: {why}",
                path.display(),
                i + 1
            ),
        }
    }
}

fn append_pick(path: &Path, class: &str, pick: &NormSpec) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    // One write a line: concurrent processes append whole lines.
    f.write_all(format!("{class}\t{}\n", pick.name()).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use redjit_codegen::{Arch, DType, NormOp};

    fn key() -> DeviceKey {
        DeviceKey {
            name: "NVIDIA B200".into(),
            arch: Arch::SM90,
            sms: 148,
            l2_bytes: 126 << 20,
        }
    }

    #[test]
    fn classes_name_the_operation_and_both_classes() {
        let spec = NormSpec::with((NormOp::RmsNorm, None, true), DType::BF16, DType::BF16, 1);
        assert_eq!(
            class_of(&spec, 16, 4096),
            "rmsnorm_res_bf16_bf16_rows1-32_cols2049-4096"
        );
        assert_eq!(class_of(&spec, 16, 4096), class_of(&spec, 1, 2049));
        assert_ne!(class_of(&spec, 16, 4096), class_of(&spec, 33, 4096));
    }

    #[test]
    fn picks_persist_and_bad_lines_are_skipped() {
        let dir = std::env::temp_dir().join(format!("redjit-autotune-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = picks_path(&dir, &key());
        let spec: NormSpec = "norm_rmsnorm_bf16_bf16_b256x4_x".parse().unwrap();
        append_pick(&path, "rmsnorm_bf16_bf16_rows1-32_cols2049-4096", &spec).unwrap();
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("garbage\nsoftmax_x\tnorm_not_a_kernel\n");
        std::fs::write(&path, text).unwrap();
        let state = AutotuneState::new(Autotune::Untuned, false, Some(&dir), &key());
        let list = state.list();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].pick, spec);
        assert!(!list[0].timed_here);
        // A device its table was measured on is left to the table.
        assert!(!AutotuneState::new(Autotune::Untuned, true, Some(&dir), &key()).on());
        assert!(AutotuneState::new(Autotune::Always, true, Some(&dir), &key()).on());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
