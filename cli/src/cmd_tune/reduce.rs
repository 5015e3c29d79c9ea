//! `redjit tune --family reduce`: threads per block and loads in flight of
//! each full-array reduction at each size, and of the row and column sums at
//! each shape.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use redjit_codegen::spec::reduce::{COL_MAX_UNROLL, ReduceStrategy, Shape};
use redjit_codegen::tuning::{ROW_CLASSES, ReduceRule, row_class};
use redjit_codegen::{DType, KernelSpec, ReduceAxis, ReduceOp, ReduceSpec};
use redjit_runtime::{KernelInput, Matrix};
use serde::{Deserialize, Serialize};

use super::{
    CellDevice, Run, TuneArgs, fastest_matching, finished, middle, read_cells, timed_rounds,
};
use crate::bench::Bench;
use crate::devbuf::DevBuf;
use crate::error::{CliError, CliResult, DriverContext};

/// Full-array sizes a one-GPU tune covers by default.
pub const DEFAULT_SIZES: &str = "2^20,2^24,2^28";
/// Row and column sums' shapes a one-GPU tune covers by default.
pub const DEFAULT_SHAPES: &str = "32768x4096,8192x16384";
/// Threads per block a tune tries.
const THREADS: &[u32] = &[128, 256, 512];

/// One shape's measurement: every candidate's median per round, and the pick.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cell {
    key: String,
    #[serde(flatten)]
    device: CellDevice,
    axis: String,
    op: String,
    input: String,
    /// Full array: elements; else 0.
    n: u64,
    rows: u64,
    cols: u64,
    /// (kernel name, median µs of each round)
    times: Vec<(String, Vec<f64>)>,
    /// The kernel the table in use launched before the tune.
    before: String,
    /// The fastest that matched the CPU twin.
    pick: String,
}

impl Cell {
    fn key_of(c: &Cell) -> String {
        c.key.clone()
    }

    fn device_of(c: &Cell) -> &CellDevice {
        &c.device
    }

    /// The row length (rows, columns) or element count (full array) the
    /// table's rows key on.
    fn size(&self) -> u64 {
        if self.n > 0 { self.n } else { self.cols }
    }
}

/// One call to measure.
struct Todo {
    key: String,
    spec: ReduceSpec,
    shape: Shape,
    n: usize,
    matrix: Option<Matrix>,
}

/// `spec`'s candidates: every strategy of `THREADS` threads and half, once
/// and twice its default loads in flight (a column kernel's up to
/// `COL_MAX_UNROLL`), the default among them.
fn candidates(spec: &ReduceSpec) -> Vec<ReduceSpec> {
    let d = spec.default_strategy().unroll;
    let most = if spec.axis == ReduceAxis::Cols {
        COL_MAX_UNROLL
    } else {
        redjit_codegen::spec::reduce::MAX_UNROLL
    };
    let mut out = Vec::new();
    for &threads in THREADS {
        for unroll in [d / 2, d, 2 * d] {
            let s = spec.with_strategy(Some(ReduceStrategy {
                threads,
                unroll: unroll.clamp(1, most),
            }));
            if s.validate().is_ok() && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// `redjit tune --family reduce`.
pub fn tune(a: &TuneArgs) -> CliResult {
    if let Some(results) = &a.from_results {
        let (done, run) = finished(a, results, Cell::key_of, Cell::device_of)?;
        return write_rules(&run, &done, a);
    }
    let sizes = match &a.common.sizes {
        Some(s) => s.0.clone(),
        None => crate::sizes::parse_sizes(DEFAULT_SIZES).map_err(CliError::usage)?,
    };
    let shapes = crate::bench::reduce::parse_shapes(a.shapes.as_deref().unwrap_or(DEFAULT_SHAPES))?;
    if sizes.contains(&0) || shapes.iter().any(|&(r, c)| r == 0 || c == 0) {
        return Err(CliError::usage("a size or shape of no elements"));
    }
    let mut todo = Vec::new();
    for &input in &a.dtypes {
        let base = |axis, op| ReduceSpec {
            axis,
            op,
            input,
            accum: ReduceSpec::default_accum(op, input),
            ..ReduceSpec::default()
        };
        for op in crate::bench::reduce::default_ops() {
            let spec = base(ReduceAxis::All, op);
            if spec.validate().is_err() {
                continue;
            }
            for &n in &sizes {
                todo.push(Todo {
                    key: format!("all_{op}_{input}_{n}"),
                    spec: spec.clone(),
                    shape: Shape::All { n: n as u64 },
                    n,
                    matrix: None,
                });
            }
        }
        for axis in [ReduceAxis::Rows, ReduceAxis::Cols] {
            let spec = base(axis, ReduceOp::Sum);
            for &(rows, cols) in &shapes {
                todo.push(Todo {
                    key: format!("{axis}_sum_{input}_{rows}x{cols}"),
                    spec: spec.clone(),
                    shape: Shape::Matrix {
                        rows: rows as u64,
                        cols: cols as u64,
                        ld: cols as u64,
                    },
                    n: rows * cols,
                    matrix: Some(Matrix {
                        rows,
                        cols,
                        ld: cols,
                    }),
                });
            }
        }
    }
    crate::bench::run(&a.common, None, "tune", |b| tune_reduce(b, a, todo))
}

fn tune_reduce(b: &mut Bench<'_>, a: &TuneArgs, todo: Vec<Todo>) -> CliResult {
    let rt = b.rt;
    let mut run = Run::on_gpu(b, a)?;
    let mut done = read_cells(&run.partial, Cell::key_of)?;
    let todo: Vec<Todo> = todo
        .into_iter()
        .filter(|t| !done.contains_key(&t.key) && t.spec.min_arch() <= rt.device().arch)
        .collect();
    let mut all: Vec<ReduceSpec> = Vec::new();
    for t in &todo {
        for c in candidates(&t.spec) {
            if !all.contains(&c) {
                all.push(c);
            }
        }
    }
    b.progress
        .set_message(format!("compiling {} reduce kernels", all.len()));
    let prep = rt.prepare(&all)?;
    b.println(format!(
        "tune: {} shapes to measure, {} kernels prepared in {:.1} s",
        todo.len(),
        prep.kernels,
        prep.wall.as_secs_f64()
    ));
    b.expect(todo.len() as u64);
    let stream = rt.stream();
    for t in todo {
        b.progress.set_message(t.key.clone());
        let inputs = t.spec.op.info().inputs;
        let bytes = (inputs * t.n * t.spec.input.info().bytes as usize) as u64;
        b.check_fits(&t.key, bytes)?;
        let rotations = b.rotations(bytes);
        let mut sets: Vec<Vec<DevBuf>> = Vec::new();
        for _ in 0..rotations {
            sets.push(
                (0..inputs)
                    .map(|_| b.filler.alloc(t.spec.input, t.n))
                    .collect::<CliResult<_>>()?,
            );
        }
        let results = match t.spec.axis {
            ReduceAxis::All => 1,
            ReduceAxis::Rows => t.matrix.map_or(1, |m| m.rows),
            ReduceAxis::Cols => t.matrix.map_or(1, |m| m.cols),
        };
        let what = || "allocating a tune output".to_string();
        let mut out_f32 = stream.alloc_zeros::<f32>(results).during(what)?;
        let mut out_i64 = stream.alloc_zeros::<i64>(results).during(what)?;
        let before = rt.reduce(&t.spec)?.launched(t.shape);
        let cands = candidates(&t.spec);
        // One rotation across the candidates: each continues past the sets
        // the one before touched (a small shape's would still be in L2).
        let mut k = 0usize;
        let rounds = timed_rounds(cands.len(), a.rounds, a.screen, |i| {
            let kernel = rt.reduce(&cands[i])?;
            b.median_us(|| {
                let set = &sets[k % rotations as usize];
                k += 1;
                let views: Vec<_> = set.iter().map(|d| d.view(0, t.n)).collect();
                let srcs: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
                match (kernel.spec().result_i64(), t.matrix) {
                    (false, None) => kernel.launch(stream, &srcs, &mut out_f32)?,
                    (true, None) => kernel.launch(stream, &srcs, &mut out_i64)?,
                    (false, Some(m)) => kernel.launch_matrix(stream, &srcs, m, &mut out_f32)?,
                    (true, Some(m)) => kernel.launch_matrix(stream, &srcs, m, &mut out_i64)?,
                }
                Ok(())
            })
        })?;
        let mut times: Vec<(ReduceSpec, Vec<f64>)> = cands.iter().cloned().zip(rounds).collect();
        drop(sets);
        times.sort_by(|x, y| middle(&x.1).total_cmp(&middle(&y.1)));
        // The fastest that matches the CPU twin, at a smaller call of the
        // same kernel (odd lengths: the tails too).
        let check = match t.matrix {
            None => Matrix {
                rows: 1,
                cols: t.n.min((1 << 20) + 3),
                ld: t.n.min((1 << 20) + 3),
            },
            Some(m) => Matrix {
                rows: m.rows.min(if t.spec.axis == ReduceAxis::Rows {
                    67
                } else {
                    2051
                }),
                ..m
            },
        };
        let pick = fastest_matching(b, &t.key, &times, |spec| {
            crate::selftest::reduce::check_case(rt, spec, check, 0x7e57 ^ t.n as u64)
        })?;
        let (rows, cols) = t.matrix.map_or((0, 0), |m| (m.rows as u64, m.cols as u64));
        let cell = Cell {
            key: t.key.clone(),
            device: CellDevice::of(&run.device),
            axis: t.spec.axis.to_string(),
            op: t.spec.op.to_string(),
            input: t.spec.input.to_string(),
            n: if t.matrix.is_none() { t.n as u64 } else { 0 },
            rows,
            cols,
            times: times.iter().map(|(s, ts)| (s.name(), ts.clone())).collect(),
            before: before.name(),
            pick: pick.name(),
        };
        let strategy_of = |name: &str| name.rsplit('_').next().unwrap_or_default().to_string();
        let before_us = times
            .iter()
            .find(|(s, _)| {
                s.strategy == before.strategy
                    || (before.strategy.is_none() && s.strategy == Some(s.default_strategy()))
            })
            .map_or(f64::NAN, |(_, ts)| middle(ts));
        b.println(format!(
            "{:<36} pick {:<8} {:>9.2} us (before {} {:.2} us)",
            t.key,
            strategy_of(&cell.pick),
            middle(&times[0].1),
            cell.before,
            before_us
        ));
        run.record(&cell)?;
        b.progress.inc(1);
        done.insert(cell.key.clone(), cell);
    }
    write_rules(&run, &done, a)
}

/// `done`'s picks as the table's reduce rows.
fn write_rules(run: &Run, done: &BTreeMap<String, Cell>, a: &TuneArgs) -> CliResult {
    let rules = rules(done, a)?;
    run.write(|t| t.reduce = rules, |t| t.reduce.len())
}

/// The table's rows: per (axis, op, input, row-count class), each measured
/// size's pick serves the sizes above the one measured before it, up to
/// itself (the largest: every size above); neighbours of one pick merge.
fn rules(done: &BTreeMap<String, Cell>, a: &TuneArgs) -> CliResult<Vec<ReduceRule>> {
    type GroupKey = (String, String, String, usize);
    let mut groups: BTreeMap<GroupKey, Vec<&Cell>> = BTreeMap::new();
    for c in done.values() {
        let class = if c.n > 0 { 0 } else { row_class(c.rows) };
        groups
            .entry((c.axis.clone(), c.op.clone(), c.input.clone(), class))
            .or_default()
            .push(c);
    }
    let mut out: Vec<ReduceRule> = Vec::new();
    for ((axis, op, input, class), mut cells) in groups {
        cells.sort_by_key(|c| c.size());
        let axis: ReduceAxis = axis.parse()?;
        let input: DType = input.parse()?;
        let rows = (axis != ReduceAxis::All).then(|| ROW_CLASSES[class].0..=ROW_CLASSES[class].1);
        let mut lo = 1u64;
        // (rule, the sizes it was measured at, candidates)
        let mut group: Vec<(ReduceRule, Vec<String>, usize)> = Vec::new();
        for (i, c) in cells.iter().enumerate() {
            let pick: ReduceSpec = c.pick.parse()?;
            let Some(strategy) = pick.strategy else {
                continue;
            };
            let hi = if i + 1 == cells.len() {
                u64::MAX
            } else {
                c.size()
            };
            let at = if c.n > 0 {
                crate::sizes::fmt_size(c.n)
            } else {
                format!("{}x{}", c.rows, c.cols)
            };
            match group.last_mut() {
                Some((prev, ats, _)) if prev.strategy == strategy => {
                    prev.size = *prev.size.start()..=hi;
                    ats.push(at);
                }
                _ => group.push((
                    ReduceRule {
                        axis,
                        ops: vec![op.parse()?],
                        input,
                        size: RangeInclusive::new(lo, hi),
                        rows: rows.clone(),
                        strategy,
                        reason: String::new(),
                        result: a.result.clone(),
                        line: 0,
                    },
                    vec![at],
                    c.times.len(),
                )),
            }
            lo = hi.saturating_add(1);
        }
        let group = group.into_iter().map(|(mut r, ats, n)| {
            r.reason = format!(
                "fastest of {n} candidates at {} over {} rounds, and matched the CPU twin",
                ats.join(" and "),
                a.rounds
            );
            r
        });
        out.extend(group);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_valid_and_hold_the_default() {
        for axis in [ReduceAxis::All, ReduceAxis::Rows, ReduceAxis::Cols] {
            for input in [DType::F32, DType::BF16, DType::E4M3] {
                let spec = ReduceSpec {
                    axis,
                    input,
                    ..ReduceSpec::default()
                };
                let c = candidates(&spec);
                assert_eq!(c.len(), 9, "{axis} {input}");
                assert!(c.contains(&spec.with_strategy(Some(spec.default_strategy()))));
                for s in &c {
                    assert!(s.validate().is_ok(), "{}", s.name());
                }
            }
        }
    }
}
