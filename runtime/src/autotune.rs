//! Autotune: on a device no table was measured on, the first call of a norm
//! operation at a shape class times a few layouts once and keeps the fastest,
//! in memory and in the cache directory, so later calls and later processes
//! take it without timing anything.
//!
//! A class is the operation and dtypes, the row-count class and the row-length
//! class the tuning tables use ([`ROW_CLASSES`], [`cols_class`]). The
//! candidates are [`closest_candidates`]: the table's pick first, then the
//! layouts that hold the row with the fewest spare columns, at most
//! [`MAX_CANDIDATES`], compiled in one parallel batch. Each is timed on the
//! runtime's stream with CUDA events over scratch buffers of the call's shape
//! (random rows), never the caller's. Anything that goes wrong (a compile, an
//! allocation, a launch) is one warning and the table's pick: autotune can
//! make a call faster, never make it fail.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use cudarc::driver::sys::CUevent_flags;
use redjit_codegen::spec::norm::closest_candidates;
use redjit_codegen::tuning::{DeviceKey, ROW_CLASSES, cols_class, device_slug, row_class};
use redjit_codegen::{DType, KernelSpec, NormSpec};

use crate::elem::DeviceElem;
use crate::error::{DriverContext, Result};
use crate::norm::NormArgs;
use crate::reduce::Matrix;
use crate::runtime::Runtime;

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

/// The most layouts one class times.
pub const MAX_CANDIDATES: usize = 8;
/// Calls whose scratch buffers would pass this are left to the table.
pub const MAX_SCRATCH_BYTES: u64 = 1 << 30;
/// Timed launches per candidate (after one untimed), in two rounds of
/// alternating order; a candidate's time is its median.
const ITERS_PER_ROUND: usize = 3;

/// One class's outcome, as [`Runtime::autotuned`] lists it.
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
        rt: &Runtime,
        spec: &NormSpec,
        table: &NormSpec,
        rows: usize,
        cols: usize,
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
        match time_candidates(rt, &cands, rows, cols) {
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

/// Element types the scratch rows are made of.
trait Sample: DeviceElem {
    fn of(v: f32) -> Self;
}
impl Sample for f32 {
    fn of(v: f32) -> f32 {
        v
    }
}
impl Sample for half::bf16 {
    fn of(v: f32) -> half::bf16 {
        half::bf16::from_f32(v)
    }
}
impl Sample for half::f16 {
    fn of(v: f32) -> half::f16 {
        half::f16::from_f32(v)
    }
}

/// What stopped a class's timing, in a line (a warning, never the caller's error).
type Tried<T> = std::result::Result<T, String>;

/// Each candidate's median time (µs) at `rows` x `cols` (infinite where its
/// launch was refused).
fn time_candidates(
    rt: &Runtime,
    cands: &[NormSpec],
    rows: usize,
    cols: usize,
) -> Tried<Vec<(NormSpec, f64)>> {
    let spec = &cands[0];
    let bytes = |d: DType| d.info().bytes as u64;
    let n = rows as u64 * cols as u64;
    let scratch = n * (2 * bytes(spec.input) + bytes(spec.output))
        + if spec.residual {
            n * 2 * bytes(spec.input)
        } else {
            0
        };
    if scratch > MAX_SCRATCH_BYTES {
        return Err(format!(
            "{scratch} bytes of scratch rows, past the {MAX_SCRATCH_BYTES} autotune takes"
        ));
    }
    use half::{bf16, f16};
    let timed = match (spec.input, spec.output) {
        (DType::F32, DType::F32) => time_typed::<f32, f32>(rt, cands, rows, cols),
        (DType::F32, DType::BF16) => time_typed::<f32, bf16>(rt, cands, rows, cols),
        (DType::F32, DType::F16) => time_typed::<f32, f16>(rt, cands, rows, cols),
        (DType::BF16, DType::F32) => time_typed::<bf16, f32>(rt, cands, rows, cols),
        (DType::BF16, DType::BF16) => time_typed::<bf16, bf16>(rt, cands, rows, cols),
        (DType::BF16, DType::F16) => time_typed::<bf16, f16>(rt, cands, rows, cols),
        (DType::F16, DType::F32) => time_typed::<f16, f32>(rt, cands, rows, cols),
        (DType::F16, DType::BF16) => time_typed::<f16, bf16>(rt, cands, rows, cols),
        (DType::F16, DType::F16) => time_typed::<f16, f16>(rt, cands, rows, cols),
        (i, o) => return Err(format!("no scratch rows of {i} to {o}")),
    };
    timed.map_err(|e| e.to_string())
}

fn time_typed<I: Sample, O: Sample>(
    rt: &Runtime,
    cands: &[NormSpec],
    rows: usize,
    cols: usize,
) -> Result<Vec<(NormSpec, f64)>> {
    let spec = &cands[0];
    let info = spec.op.info();
    let stream = rt.stream();
    // A fixed pseudo-random row (xorshift): values in [-2, 2).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
    };
    let n = rows * cols;
    let host_rows: Vec<I> = (0..n).map(|_| I::of(next())).collect();
    let host_cols: Vec<I> = (0..cols).map(|_| I::of(next())).collect();
    let up = |v: &[I]| -> Result<CudaSlice<I>> {
        stream
            .clone_htod(v)
            .during(|| "autotune: copying scratch rows".into())
    };
    let x = up(&host_rows)?;
    let residual = if spec.residual {
        Some(up(&host_rows)?)
    } else {
        None
    };
    let weight = if info.softmax {
        None
    } else {
        Some(up(&host_cols)?)
    };
    let bias = if info.bias {
        Some(up(&host_cols)?)
    } else {
        None
    };
    let alloc = |len: usize| -> Result<CudaSlice<O>> {
        // SAFETY: every element is written by the launch before it is read
        // (nothing reads the scratch outputs).
        unsafe { stream.alloc::<O>(len) }.during(|| "autotune: allocating scratch rows".into())
    };
    let mut out = alloc(n)?;
    let mut residual_out = if spec.residual {
        Some(
            unsafe { stream.alloc::<I>(n) }
                .during(|| "autotune: allocating scratch rows".into())?,
        )
    } else {
        None
    };
    rt.prepare(cands)?;
    let kernels = cands
        .iter()
        .map(|s| rt.norm(s))
        .collect::<Result<Vec<_>>>()?;
    let shape = Matrix {
        rows,
        cols,
        ld: cols,
    };
    let mut launch = |k: usize| -> Result<()> {
        kernels[k].launch(
            stream,
            NormArgs {
                x: &x,
                residual: residual.as_ref().map(|r| r as _),
                weight: weight.as_ref().map(|w| w as _),
                bias: bias.as_ref().map(|b| b as _),
                out: &mut out,
                residual_out: residual_out.as_mut().map(|r| r as _),
                mean: None,
                rstd: None,
                shape,
                param: if info.softmax { 1.0 } else { 1e-5 },
            },
        )
    };
    let event = || {
        rt.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .during(|| "autotune: creating a timing event".into())
    };
    let (start, end) = (event()?, event()?);
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); cands.len()];
    // A candidate whose launch is refused (a split row past what this device
    // holds at once) is timed as infinite; the table's pick is among the rest.
    let runs: Vec<bool> = (0..cands.len()).map(|k| launch(k).is_ok()).collect();
    for round in 0..2 {
        for i in 0..cands.len() {
            let k = if round % 2 == 0 {
                i
            } else {
                cands.len() - 1 - i
            };
            if !runs[k] {
                times[k].push(f64::INFINITY);
                continue;
            }
            for _ in 0..ITERS_PER_ROUND {
                start
                    .record(stream)
                    .during(|| "autotune: recording an event".into())?;
                launch(k)?;
                end.record(stream)
                    .during(|| "autotune: recording an event".into())?;
                let ms = start
                    .elapsed_ms(&end)
                    .during(|| "autotune: reading an event time".into())?;
                times[k].push(f64::from(ms) * 1e3);
            }
        }
    }
    Ok(cands
        .iter()
        .cloned()
        .zip(times.into_iter().map(|mut t| {
            t.sort_by(f64::total_cmp);
            t[t.len() / 2]
        }))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use redjit_codegen::{Arch, NormOp};

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
