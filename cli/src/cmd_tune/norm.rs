//! `redjit tune --family norm`: each row op's layouts at each shape.

use std::collections::BTreeMap;

use redjit_codegen::spec::norm::Fp8Scale;
use redjit_codegen::spec::norm::row_ops;
use redjit_codegen::tuning::{
    NormRule, NormStrategy, ROW_CLASSES, Tuning, TypePair, bound_candidates, candidates,
    cols_class, row_class,
};
use redjit_codegen::{DType, KernelSpec, NormLayout, NormOp, NormSpec, SoftmaxAlgo};
use redjit_runtime::Matrix;
use serde::{Deserialize, Serialize};

use super::{
    CellDevice, NormOutput, Run, TuneArgs, fastest_matching, finished, middle, read_cells,
    timed_rounds,
};
use crate::bench::Bench;
use crate::bench::norm::{Buffers, Case, time_case};
use crate::error::{CliError, CliResult};

/// The shapes a one-GPU tune covers by default: the norm benchmark's main
/// shapes and the token counts x hidden sizes of LLM serving.
pub const DEFAULT_SHAPES: &str = "32768x4096,8192x16384,8192x32768,262144x128,\
1x4096,16x4096,128x4096,512x4096,4096x4096,1x8192,16x8192,128x8192,512x8192,4096x8192";

/// One shape's measurement: every candidate's median per round, and the pick.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Cell {
    key: String,
    /// The device, as the tables key it.
    #[serde(flatten)]
    device: CellDevice,
    op: String,
    algo: Option<String>,
    residual: bool,
    dtype: String,
    /// The output type where it is not the input's (`e4m3`: FP8, a scale a
    /// row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<String>,
    rows: u64,
    cols: u64,
    /// (kernel name, median µs of each round)
    times: Vec<(String, Vec<f64>)>,
    /// The kernel the table in use picked before the tune.
    before: String,
    /// The fastest that matched the CPU twin.
    pick: String,
}

fn cell_key(spec: &NormSpec, rows: u64, cols: u64) -> String {
    let algo = spec.algo.map_or(String::new(), |a| format!("_{a}"));
    let res = if spec.residual { "_res" } else { "" };
    let out = if spec.fp8.is_some() {
        format!("_{}", spec.output)
    } else {
        String::new()
    };
    format!("{}{algo}{res}_{}{out}_{rows}x{cols}", spec.op, spec.input)
}

/// The table row a cell's times decide: its op, types and output (the key
/// without the shape), its row-length class (the class's longest row) and its
/// row-count class (`ROW_CLASSES`).
type ClassKey = (String, u64, usize);

fn class_of(key: &str, rows: u64, cols: u64) -> ClassKey {
    let op = key.rsplit_once('_').map_or(key, |(op, _)| op);
    (op.to_string(), cols_class(cols).1, row_class(rows))
}

/// The ops a tune of `dtypes` and `outputs` times, each over its rows
/// (the safe log-softmax adds nothing the safe softmax does not show).
fn tuned_ops(dtypes: &[DType], outputs: &[NormOutput]) -> Vec<NormSpec> {
    let mut out = Vec::new();
    for &d in dtypes {
        for &o in outputs {
            for ops in row_ops() {
                if ops.0 == NormOp::LogSoftmax && ops.1 == Some(SoftmaxAlgo::Safe) {
                    continue;
                }
                out.extend(tuned_op(ops, d, o));
            }
        }
    }
    out
}

/// `tuning`'s kernel for `base` at `rows` x `cols`, the first candidate of
/// the cell; `None` where no kernel of the op holds the rows (an FP8
/// output's past 16384): no cell.
fn cell_pick(base: &NormSpec, rows: usize, cols: usize, tuning: &Tuning) -> Option<NormSpec> {
    let current = base.for_shape(Some(rows as u64), cols as u64, tuning);
    holds_rows(&current, cols as u64).then_some(current)
}

/// Whether `spec` is a valid kernel that holds rows of `cols`.
fn holds_rows(spec: &NormSpec, cols: u64) -> bool {
    spec.validate().is_ok() && spec.capacity().is_none_or(|c| c >= cols)
}

/// The op over `d` rows with `out`'s output type; `None` where the op has
/// no such output (a softmax's FP8).
fn tuned_op(
    ops: (NormOp, Option<SoftmaxAlgo>, bool),
    d: DType,
    out: NormOutput,
) -> Option<NormSpec> {
    let base = NormSpec::with(ops, d, d, 1);
    match out {
        NormOutput::Same => Some(base),
        NormOutput::E4m3 if ops.0.info().softmax => None,
        NormOutput::E4m3 => Some(base.to_e4m3(Fp8Scale::PerRow)),
    }
}

impl Cell {
    fn key_of(c: &Cell) -> String {
        c.key.clone()
    }

    fn device_of(c: &Cell) -> &CellDevice {
        &c.device
    }
}

/// `redjit tune --family norm`.
pub fn tune(a: &TuneArgs) -> CliResult {
    let shapes = crate::bench::reduce::parse_shapes(a.shapes.as_deref().unwrap_or(DEFAULT_SHAPES))?;
    if shapes.iter().any(|&(r, c)| r == 0 || c == 0) {
        return Err(CliError::usage("a shape has no rows or no columns"));
    }
    if let Some(results) = &a.from_results {
        let (done, run) = finished(a, results, Cell::key_of, Cell::device_of)?;
        return write_rules(&run, &done, a);
    }
    crate::bench::run(&a.common, None, "tune", |b| tune_norm(b, a, &shapes))
}

fn tune_norm(b: &mut Bench<'_>, a: &TuneArgs, shapes: &[(usize, usize)]) -> CliResult {
    let rt = b.rt;
    let mut run = Run::on_gpu(b, a)?;
    let mut done = read_cells(&run.partial, Cell::key_of)?;
    let device = run.device.clone();
    let selection = rt.tuning().clone();
    // Every cell's candidates, compiled at once (in parallel).
    struct Todo {
        key: String,
        base: NormSpec,
        m: Matrix,
        current: NormSpec,
        cands: Vec<NormSpec>,
    }
    let mut todo = Vec::new();
    for base in tuned_ops(&a.dtypes, &a.outputs) {
        for &(rows, cols) in shapes {
            let key = cell_key(&base, rows as u64, cols as u64);
            if done.contains_key(&key) {
                continue;
            }
            let Some(current) = cell_pick(&base, rows, cols, &selection.tuning) else {
                continue;
            };
            let cands = candidates(&base, &current, cols as u64);
            let m = Matrix {
                rows,
                cols,
                ld: cols,
            };
            todo.push(Todo {
                key,
                base: base.clone(),
                m,
                current,
                cands,
            });
        }
    }
    let mut all: Vec<NormSpec> = Vec::new();
    for t in &todo {
        for c in &t.cands {
            if !all.contains(c) {
                all.push(c.clone());
            }
        }
    }
    b.progress
        .set_message(format!("compiling {} norm kernels", all.len()));
    let prep = rt.prepare(&all)?;
    b.println(format!(
        "tune: {} shapes to measure, {} kernels prepared in {:.1} s",
        todo.len(),
        prep.kernels,
        prep.wall.as_secs_f64()
    ));
    b.expect(todo.len() as u64);
    // Shapes of one type pair and size share their buffers.
    let buf_key = |t: &Todo| (t.base.input, t.base.output, t.m.rows, t.m.cols);
    todo.sort_by_key(|t| {
        let (i, o, rows, cols) = buf_key(t);
        (i.to_string(), o.to_string(), rows, cols)
    });
    let mut bufs: Option<((DType, DType, usize, usize), Buffers)> = None;
    for t in todo {
        b.progress.set_message(t.key.clone());
        if bufs.as_ref().is_none_or(|(k, _)| *k != buf_key(&t)) {
            drop(bufs.take());
            let like = |ops| NormSpec {
                output: t.base.output,
                fp8: t.base.fp8,
                ..NormSpec::with(ops, t.base.input, t.base.input, 1)
            };
            // A layer norm with the residual takes every buffer any op does;
            // the op moving the fewest bytes sets the rotation.
            let widest = Case {
                spec: like((NormOp::LayerNorm, None, true)),
                m: t.m,
            };
            let narrowest = Case {
                spec: if t.base.fp8.is_some() {
                    like((NormOp::RmsNorm, None, false))
                } else {
                    like((NormOp::Softmax, Some(SoftmaxAlgo::Online), false))
                },
                m: t.m,
            };
            b.check_fits(&t.key, widest.bytes())?;
            bufs = Some((
                buf_key(&t),
                Buffers::new(b, &widest, None, narrowest.bytes())?,
            ));
        }
        let Some((_, buffers)) = bufs.as_mut() else {
            continue;
        };
        // The picks of this class's cells measured before (in this run or the
        // one it resumes) are candidates here too, so that a class of several
        // shapes has a pick timed at each of them (`rules` takes only such).
        let class = class_of(&t.key, t.m.rows as u64, t.m.cols as u64);
        let mut cands = t.cands.clone();
        let earlier: Vec<NormSpec> = done
            .values()
            .filter(|c| class_of(&c.key, c.rows, c.cols) == class)
            .filter_map(|c| c.pick.parse::<NormSpec>().ok())
            .filter(|s| {
                let cols = t.m.cols as u64;
                !cands.contains(s) && holds_rows(s, cols) && (!s.exact || s.fills_exactly(cols))
            })
            .collect();
        if !earlier.is_empty() {
            rt.prepare(&earlier)?;
            cands.extend(earlier);
        }
        let rounds = timed_rounds(cands.len(), a.rounds, a.screen, |i| {
            time_candidate(b, &cands[i], t.m, buffers)
        })?;
        let mut times: Vec<(NormSpec, Vec<f64>)> = cands.iter().cloned().zip(rounds).collect();
        if !a.bounds.is_empty() {
            times.sort_by(|x, y| middle(&x.1).total_cmp(&middle(&y.1)));
            // The two fastest and their bounds, timed in the same rounds; the
            // two keep these rounds' times.
            let mut group: Vec<NormSpec> = Vec::new();
            for (s, _) in times
                .iter()
                .filter(|(_, ts)| middle(ts).is_finite())
                .take(2)
            {
                group.push(s.clone());
                group.extend(bound_candidates(s, &a.bounds));
            }
            group.retain(|s| s.bound.is_none() || !times.iter().any(|(t, _)| t == s));
            if group.len() > 2 {
                rt.prepare(&group)?;
                let more = timed_rounds(group.len(), a.rounds, f64::INFINITY, |i| {
                    time_candidate(b, &group[i], t.m, buffers)
                })?;
                for (s, ts) in group.into_iter().zip(more) {
                    match times.iter_mut().find(|(t, _)| *t == s) {
                        Some(entry) => entry.1 = ts,
                        None => times.push((s, ts)),
                    }
                }
            }
        }
        times.sort_by(|x, y| middle(&x.1).total_cmp(&middle(&y.1)));
        // The fastest that matches the CPU twin (on a few of its rows).
        let m = Matrix {
            rows: t.m.rows.min(33),
            ..t.m
        };
        let pick = fastest_matching(b, &t.key, &times, |spec| {
            crate::selftest::norm::check_case(rt, spec, &m, 0x7e57 ^ t.m.cols as u64)
        })?;
        let cell = Cell {
            key: t.key.clone(),
            device: CellDevice::of(&device),
            op: t.base.op.to_string(),
            algo: t.base.algo.map(|a| a.to_string()),
            residual: t.base.residual,
            dtype: t.base.input.to_string(),
            output: t.base.fp8.map(|_| t.base.output.to_string()),
            rows: t.m.rows as u64,
            cols: t.m.cols as u64,
            times: times.iter().map(|(s, ts)| (s.name(), ts.clone())).collect(),
            before: t.current.name(),
            pick: pick.name(),
        };
        let best = middle(&times[0].1);
        let before = times
            .iter()
            .find(|(s, _)| *s == t.current)
            .map_or(f64::NAN, |(_, ts)| middle(ts));
        b.println(format!(
            "{:<44} {:>12} pick {:<44} {:>9.2} us (before {} {:.2} us)",
            t.key,
            format!("{}x{}", t.m.rows, t.m.cols),
            cell.pick,
            best,
            cell.before,
            before
        ));
        run.record(&cell)?;
        b.progress.inc(1);
        done.insert(cell.key.clone(), cell);
    }
    drop(bufs);
    write_rules(&run, &done, a)
}

/// One round's median µs of `spec` over `m`, the calls rotating over `bufs`;
/// infinite for a split row that does not fit the device at once (no
/// candidate: its launch would be refused).
fn time_candidate(b: &Bench<'_>, spec: &NormSpec, m: Matrix, bufs: &mut Buffers) -> CliResult<f64> {
    let kernel = b.rt.norm(spec)?;
    if spec.layout == NormLayout::Split
        && u64::from(kernel.plan(m.rows, m.cols).splits) > kernel.resident()
    {
        return Ok(f64::INFINITY);
    }
    let case = Case {
        spec: spec.clone(),
        m,
    };
    time_case(b, &kernel, &case, bufs)
}

/// `done`'s picks as the table's norm rows.
fn write_rules(run: &Run, done: &BTreeMap<String, Cell>, a: &TuneArgs) -> CliResult {
    let rules = rules(done, &run.before, a.rounds, a.result.as_deref())?;
    run.write(|t| t.norm = rules, |t| t.norm.len())
}

/// The table's rows: one per (op, types, row-length class, row-count class),
/// the strategy whose time summed over the class's shapes, each relative to
/// that shape's fastest, is least.
fn rules(
    done: &BTreeMap<String, Cell>,
    before: &Tuning,
    rounds: usize,
    result: Option<&str>,
) -> CliResult<Vec<NormRule>> {
    let mut groups: BTreeMap<ClassKey, Vec<&Cell>> = BTreeMap::new();
    for c in done.values() {
        groups
            .entry(class_of(&c.key, c.rows, c.cols))
            .or_default()
            .push(c);
    }
    let mut out = Vec::new();
    for ((op, hi, class), cells) in groups {
        // Candidates every cell of the group measured.
        let mut score: BTreeMap<String, f64> = BTreeMap::new();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for c in &cells {
            let best = c
                .times
                .iter()
                .map(|(_, t)| middle(t))
                .fold(f64::INFINITY, f64::min);
            for (name, t) in &c.times {
                *score.entry(name.clone()).or_default() += middle(t) / best;
                *seen.entry(name.clone()).or_default() += 1;
            }
        }
        // Only kernels that were some cell's checked pick can win a class.
        let picks: Vec<&str> = cells.iter().map(|c| c.pick.as_str()).collect();
        let Some((name, _)) = score
            .iter()
            .filter(|(n, _)| seen[*n] == cells.len() && picks.contains(&n.as_str()))
            .min_by(|x, y| x.1.total_cmp(y.1))
        else {
            // Cells tuned apart (each before the others' picks existed) may
            // share no pick: the class keeps the table's row, said aloud.
            eprintln!(
                "redjit: warning: no pick of {op} at {} was timed at each of its shapes: its class keeps the base table's row (tune them in one run)",
                cells
                    .iter()
                    .map(|c| format!("{}x{}", c.rows, c.cols))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            continue;
        };
        let spec: NormSpec = name.parse()?;
        let c0 = cells[0];
        let algo = c0.algo.as_deref().map(str::parse).transpose()?;
        // A safe softmax whose rows went to the online kernel (long rows, which
        // only the online softmax splits) needs no row: it hands such calls to
        // the online softmax, whose own cells give that kernel's row.
        if spec.algo != algo {
            continue;
        }
        // A pick the table in use made keeps that row's form (an exact-only
        // row's form is not in the kernel's name).
        // (Not an FP8 output's pick laid out by its input type's row.)
        let types = TypePair::of(spec.input, spec.output);
        let strategy = match before.norm_rule(&spec, Some(c0.rows), c0.cols, true) {
            Some(r)
                if r.types == types && spec.for_shape(Some(c0.rows), c0.cols, before) == spec =>
            {
                r.strategy
            }
            _ => NormStrategy::of(&spec),
        };
        let (lo_rows, hi_rows) = ROW_CLASSES[class];
        let shapes: Vec<String> = cells
            .iter()
            .map(|c| format!("{}x{}", c.rows, c.cols))
            .collect();
        out.push(NormRule {
            op: spec.op,
            algo,
            residual: spec.residual,
            types,
            cols: cols_class(hi).0..=hi,
            rows: Some(lo_rows..=hi_rows),
            strategy,
            reason: format!(
                "fastest of {} candidates at {} over {} rounds, and matched the CPU twin",
                c0.times.len(),
                shapes.join(", "),
                rounds
            ),
            result: result.map(str::to_owned),
            line: 0,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_hold_the_row_and_start_with_the_pick() {
        let shapes = crate::bench::reduce::parse_shapes(DEFAULT_SHAPES).unwrap();
        let mut total = 0;
        let ops = tuned_ops(
            &[DType::F32, DType::BF16],
            &[NormOutput::Same, NormOutput::E4m3],
        );
        for base in ops {
            for &(rows, cols) in &shapes {
                let Some(current) = cell_pick(&base, rows, cols, Tuning::builtin()) else {
                    continue;
                };
                let c = candidates(&base, &current, cols as u64);
                assert_eq!(c[0], current);
                for s in &c {
                    assert!(s.validate().is_ok(), "{}", s.name());
                    assert!(
                        s.capacity().is_none_or(|k| k >= cols as u64),
                        "{} {cols}",
                        s.name()
                    );
                }
                total += c.len();
            }
        }
        // Enough to choose among, few enough for one device call: with
        // --screen's default, the H200's tune of these (FP8 outputs too) fits
        // one, compiles included (benchmarks/h200/results.toml).
        assert!((1000..7500).contains(&total), "{total}");
    }

    #[test]
    fn a_safe_softmax_handed_to_the_online_kernel_writes_no_row() {
        let line = |algo: &str, pick: &str| {
            format!(
                r#"{{"key":"softmax_{algo}_bf16_4x1000003","gpu":"NVIDIA H200","arch":"sm_90","sms":132,"l2_mib":60,"op":"softmax","algo":"{algo}","residual":false,"dtype":"bf16","rows":4,"cols":1000003,"times":[["{pick}",[12.37,12.38,12.35]],["norm_softmax_online_bf16_bf16_s512x8",[12.4,12.38,12.29]]],"before":"norm_softmax_online_bf16_bf16_s512x8_p","pick":"{pick}"}}"#
            )
        };
        let mut done = BTreeMap::new();
        for (algo, pick) in [
            ("safe", "norm_softmax_online_bf16_bf16_s512x16"),
            ("online", "norm_softmax_online_bf16_bf16_s512x16_p"),
        ] {
            let cell: Cell = serde_json::from_str(&line(algo, pick)).unwrap();
            done.insert(cell.key.clone(), cell);
        }
        let rules = rules(&done, Tuning::builtin(), 3, None).unwrap();
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert_eq!(rules[0].algo, Some(SoftmaxAlgo::Online));
        assert_eq!(
            rules[0].strategy,
            NormStrategy::of(&"norm_softmax_online_bf16_bf16_s512x16_p".parse().unwrap())
        );
    }

    #[test]
    fn fp8_cells_write_rows_of_their_own_types() {
        let spec = tuned_op((NormOp::RmsNorm, None, true), DType::BF16, NormOutput::E4m3).unwrap();
        assert_eq!(cell_key(&spec, 16, 4096), "rmsnorm_res_bf16_e4m3_16x4096");
        assert!(
            tuned_op(
                (NormOp::Softmax, Some(SoftmaxAlgo::Online), false),
                DType::BF16,
                NormOutput::E4m3
            )
            .is_none()
        );
        let line = r#"{"key":"rmsnorm_res_bf16_e4m3_16x4096","gpu":"NVIDIA H200","arch":"sm_90","sms":132,"l2_mib":60,"op":"rmsnorm","algo":null,"residual":true,"dtype":"bf16","output":"e4m3","rows":16,"cols":4096,"times":[["norm_rmsnorm_res_bf16_e4m3_b128x8_x_qd",[4.4,4.5,4.4]],["norm_rmsnorm_res_bf16_e4m3_b256x4_x_qd",[4.8,4.7,4.9]]],"before":"norm_rmsnorm_res_bf16_e4m3_b256x4_x_qd","pick":"norm_rmsnorm_res_bf16_e4m3_b128x8_x_qd"}"#;
        let cell: Cell = serde_json::from_str(line).unwrap();
        // Written back, the line keeps its output.
        assert!(
            serde_json::to_string(&cell)
                .unwrap()
                .contains(r#""output":"e4m3""#)
        );
        let mut done = BTreeMap::new();
        done.insert(cell.key.clone(), cell);
        let rules = rules(&done, Tuning::builtin(), 3, None).unwrap();
        assert_eq!(rules.len(), 1, "{rules:?}");
        assert_eq!(rules[0].types, TypePair::SixteenToE4m3);
        assert_eq!(rules[0].strategy.to_string(), "b128x8 exact");
        // A line of a 16-bit output has none.
        let same = tuned_op((NormOp::RmsNorm, None, true), DType::BF16, NormOutput::Same).unwrap();
        assert_eq!(cell_key(&same, 16, 4096), "rmsnorm_res_bf16_16x4096");
    }

    #[test]
    fn cells_of_one_class_share_a_row_only_through_a_pick_timed_at_each() {
        // The key without its shape, the row length's class and the row
        // count's: 4096x4096 and 32768x4096 are one class, 512x4096 another.
        let big = class_of("layernorm_bf16_32768x4096", 32768, 4096);
        assert_eq!(class_of("layernorm_bf16_4096x4096", 4096, 4096), big);
        assert_ne!(class_of("layernorm_bf16_512x4096", 512, 4096), big);
        assert_ne!(class_of("layernorm_res_bf16_32768x4096", 32768, 4096), big);
        assert_eq!(big.0, "layernorm_bf16");
        let cell = |rows: u64, times: &[(&str, f64)], pick: &str| -> Cell {
            let times: Vec<String> = times
                .iter()
                .map(|(n, t)| format!(r#"["norm_layernorm_bf16_bf16_{n}",[{t},{t},{t}]]"#))
                .collect();
            let line = format!(
                r#"{{"key":"layernorm_bf16_{rows}x4096","gpu":"NVIDIA H200","arch":"sm_90","sms":132,"l2_mib":60,"op":"layernorm","algo":null,"residual":false,"dtype":"bf16","rows":{rows},"cols":4096,"times":[{}],"before":"norm_layernorm_bf16_bf16_b256x4_x_h4","pick":"norm_layernorm_bf16_bf16_{pick}"}}"#,
                times.join(",")
            );
            serde_json::from_str(&line).unwrap()
        };
        let small = cell(
            4096,
            &[("b128x8_o7_x_h8", 20.2), ("b256x4_x_h4", 20.9)],
            "b128x8_o7_x_h8",
        );
        // Tuned apart: neither pick was timed at the other shape, so no row.
        let apart = cell(
            32768,
            &[("b128x8_o7_x_h4", 131.3), ("b256x4_x_h4", 135.9)],
            "b128x8_o7_x_h4",
        );
        let mut done = BTreeMap::new();
        done.insert(small.key.clone(), small);
        done.insert(apart.key.clone(), apart);
        assert!(rules(&done, Tuning::builtin(), 3, None).unwrap().is_empty());
        // The later cell timed the earlier one's pick too (`tune_norm`): the
        // class takes the pick timed at both, the least relative time summed.
        let joined = cell(
            32768,
            &[
                ("b128x8_o7_x_h4", 131.3),
                ("b128x8_o7_x_h8", 132.0),
                ("b256x4_x_h4", 135.9),
            ],
            "b128x8_o7_x_h4",
        );
        done.insert(joined.key.clone(), joined);
        let rows = rules(&done, Tuning::builtin(), 3, None).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].strategy.to_string(), "b128x8 exact held 8 bound 7");
    }

    #[test]
    fn middle_is_the_median() {
        assert_eq!(middle(&[3.0, 1.0, 2.0]), 2.0);
    }
}
