//! A tuning table's text -> [`TuningTable`], every row checked: a row that
//! names an impossible strategy is refused here, with its file and line, so a
//! table never sends an invalid spec towards a GPU.

use std::ops::RangeInclusive;

use serde::Deserialize;
use toml::Spanned;

use super::{
    AllReduceRule, Form, NormRule, NormStrategy, ReduceCopyRule, ReduceRule, TableDevice,
    TuningTable, TypePair,
};
use crate::SpecError;
use crate::registry::{Arch, DType, NormLayout, NormOp, ReduceAxis, ReduceOp, SoftmaxAlgo};
use crate::spec::KernelSpec;
use crate::spec::norm::{Fp8Scale, MAX_CLUSTER, NormSpec};
use crate::spec::reduce::ReduceSpec;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    device: Spanned<RawDevice>,
    base: Option<Spanned<String>>,
    #[serde(default)]
    norm: Vec<Spanned<RawNormRule>>,
    #[serde(default)]
    reduce: Vec<Spanned<RawReduceRule>>,
    #[serde(default)]
    all_reduce: Vec<Spanned<RawAllReduceRule>>,
    #[serde(default)]
    reduce_copy: Vec<Spanned<RawReduceCopyRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReduceCopyRule {
    threads: u32,
    #[serde(default)]
    write_heavy_blocks_per_sm: std::collections::BTreeMap<String, u32>,
    reason: String,
    result: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAllReduceRule {
    world: u32,
    ll_max: Option<String>,
    push_max: Option<String>,
    push_max_copied: Option<String>,
    one_shot_max: Option<String>,
    cp_async_min: Option<String>,
    narrow_max: Option<String>,
    nccl_min: Option<String>,
    nccl_min_copied: Option<String>,
    fused_push_max: Option<String>,
    reason: String,
    result: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    name: String,
    arch: String,
    sms: u32,
    l2_mib: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNormRule {
    op: String,
    algo: Option<String>,
    residual: bool,
    types: String,
    cols: String,
    rows: Option<String>,
    strategy: String,
    form: String,
    held: Option<u32>,
    #[serde(default)]
    pairs: bool,
    #[serde(default)]
    raw: bool,
    bound: Option<u32>,
    reason: String,
    result: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReduceRule {
    axis: String,
    #[serde(default)]
    ops: Vec<String>,
    input: String,
    n: Option<String>,
    cols: Option<String>,
    rows: Option<String>,
    strategy: String,
    reason: String,
    result: Option<String>,
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|&b| b == b'\n')
        .count()
        + 1
}

/// Parses and checks the table `text`, read from `file` (named in errors).
pub fn parse_table(file: &str, text: &str) -> Result<TuningTable, SpecError> {
    let err = |line: usize, rule: String| SpecError::Table {
        file: file.into(),
        line,
        rule,
    };
    let raw: RawTable = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_of(text, s.start));
        err(line, e.message().trim().to_string())
    })?;
    let dline = line_of(text, raw.device.span().start);
    let d = raw.device.into_inner();
    let device = TableDevice {
        arch: d
            .arch
            .parse::<Arch>()
            .map_err(|e| err(dline, e.to_string()))?,
        name: d.name,
        sms: d.sms,
        l2_mib: d.l2_mib,
    };
    if device.sms == 0 || device.l2_mib == 0 {
        return Err(err(
            dline,
            "device sms and l2_mib must be at least 1".into(),
        ));
    }
    let mut norm = Vec::with_capacity(raw.norm.len());
    for r in raw.norm {
        let line = line_of(text, r.span().start);
        let rule = norm_rule(r.into_inner(), line).map_err(|rule| err(line, rule))?;
        norm.push(rule);
    }
    let mut reduce = Vec::with_capacity(raw.reduce.len());
    for r in raw.reduce {
        let line = line_of(text, r.span().start);
        let rule = reduce_rule(r.into_inner(), line).map_err(|rule| err(line, rule))?;
        reduce.push(rule);
    }
    let mut all_reduce: Vec<AllReduceRule> = Vec::with_capacity(raw.all_reduce.len());
    for r in raw.all_reduce {
        let line = line_of(text, r.span().start);
        let rule = all_reduce_rule(r.into_inner(), line).map_err(|rule| err(line, rule))?;
        if let Some(first) = all_reduce.iter().find(|o| o.world == rule.world) {
            return Err(err(
                line,
                format!(
                    "world {} has a row already, at line {}",
                    rule.world, first.line
                ),
            ));
        }
        all_reduce.push(rule);
    }
    let mut reduce_copy: Option<ReduceCopyRule> = None;
    for r in raw.reduce_copy {
        let line = line_of(text, r.span().start);
        if let Some(first) = &reduce_copy {
            return Err(err(
                line,
                format!(
                    "a table has one reduce_copy row; its first is at line {}",
                    first.line
                ),
            ));
        }
        let r = r.into_inner();
        if r.reason.trim().is_empty() {
            return Err(err(
                line,
                "reason is empty: say in a line why the row is there".into(),
            ));
        }
        reduce_copy = Some(ReduceCopyRule {
            threads: super::reduce_copy::check_threads(r.threads)
                .map_err(|rule| err(line, rule))?,
            write_heavy_blocks_per_sm: super::reduce_copy::check_held_blocks(
                &r.write_heavy_blocks_per_sm,
            )
            .map_err(|rule| err(line, rule))?,
            reason: r.reason.trim().to_string(),
            result: r.result,
            line,
        });
    }
    Ok(TuningTable {
        name: file.into(),
        device,
        base: raw.base.map(Spanned::into_inner),
        norm,
        reduce,
        all_reduce,
        reduce_copy,
    })
}

/// `"8193..=16384"`, `"32769.."` (no end) or `"4096"` (one value).
fn range(field: &str, text: &str) -> Result<RangeInclusive<u64>, String> {
    let bad = || {
        format!(
            "{field} = {text:?}: expected a range such as \"8193..=16384\", \"32769..\" or \"4096\""
        )
    };
    let num = |s: &str| s.trim().replace('_', "").parse::<u64>().map_err(|_| bad());
    let r = if let Some((lo, hi)) = text.split_once("..=") {
        num(lo)?..=num(hi)?
    } else if let Some(lo) = text.strip_suffix("..") {
        num(lo)?..=u64::MAX
    } else {
        let v = num(text)?;
        v..=v
    };
    if r.is_empty() || *r.start() == 0 {
        return Err(format!(
            "{field} = {text:?}: the range is empty or starts at 0"
        ));
    }
    Ok(r)
}

/// `s256x8` -> (split, 256, 8).
fn layout(text: &str) -> Result<(NormLayout, u32, u32), String> {
    let bad = || {
        format!(
            "strategy = {text:?}: expected a layout letter (w, b, s, l), lanes, 'x' and packs, e.g. \"s256x8\""
        )
    };
    let mut chars = text.chars();
    let l = chars
        .next()
        .and_then(NormLayout::from_letter)
        .ok_or_else(bad)?;
    let (lanes, packs) = chars.as_str().split_once('x').ok_or_else(bad)?;
    Ok((
        l,
        lanes.parse().map_err(|_| bad())?,
        packs.parse().map_err(|_| bad())?,
    ))
}

/// The one of `all` whose `slug` is `text`, else an error naming `field`
/// and listing the allowed names.
fn by_slug<T: Copy>(
    field: &str,
    text: &str,
    all: &[T],
    slug: fn(T) -> &'static str,
) -> Result<T, String> {
    all.iter()
        .copied()
        .find(|&v| slug(v) == text)
        .ok_or_else(|| {
            let names: Vec<_> = all.iter().map(|&v| slug(v)).collect();
            format!("{field} = {text:?}: expected one of: {}", names.join(", "))
        })
}

fn norm_rule(r: RawNormRule, line: usize) -> Result<NormRule, String> {
    let op: NormOp = r.op.parse().map_err(|e: SpecError| e.to_string())?;
    let algo = r
        .algo
        .as_deref()
        .map(|a| a.parse::<SoftmaxAlgo>().map_err(|e| e.to_string()))
        .transpose()?;
    if algo.is_some() && !op.info().softmax {
        return Err(format!(
            "algo = {:?}: only softmax ops have an algorithm",
            r.algo.unwrap_or_default()
        ));
    }
    if r.residual && op.info().softmax {
        return Err(format!("residual = true: {op} has no residual add"));
    }
    let (layout, lanes, packs) = layout(&r.strategy)?;
    let strategy = NormStrategy {
        layout,
        lanes,
        packs,
        form: by_slug("form", &r.form, Form::ALL, Form::slug)?,
        held: r.held,
        pairs: r.pairs,
        raw: r.raw,
        bound: r.bound,
    };
    let rule = NormRule {
        op,
        algo,
        residual: r.residual,
        types: by_slug("types", &r.types, TypePair::NAMED, TypePair::slug)?,
        cols: range("cols", &r.cols)?,
        rows: r.rows.as_deref().map(|t| range("rows", t)).transpose()?,
        strategy,
        reason: r.reason.trim().to_string(),
        result: r.result,
        line,
    };
    if rule.reason.is_empty() {
        return Err("reason is empty: say in a line why the row is there".into());
    }
    check_strategy(&rule)?;
    Ok(rule)
}

fn all_reduce_rule(r: RawAllReduceRule, line: usize) -> Result<AllReduceRule, String> {
    if !(2..=8).contains(&r.world) {
        return Err(format!(
            "world = {}: an all-reduce row is for 2 to 8 ranks",
            r.world
        ));
    }
    let b = |field: &str, v: &Option<String>| {
        v.as_deref()
            .map(|t| super::all_reduce::parse_bytes(field, t))
            .transpose()
    };
    let rule = AllReduceRule {
        world: r.world,
        ll_max: b("ll_max", &r.ll_max)?,
        push_max: b("push_max", &r.push_max)?,
        push_max_copied: b("push_max_copied", &r.push_max_copied)?,
        one_shot_max: b("one_shot_max", &r.one_shot_max)?,
        cp_async_min: b("cp_async_min", &r.cp_async_min)?,
        narrow_max: b("narrow_max", &r.narrow_max)?,
        nccl_min: b("nccl_min", &r.nccl_min)?,
        nccl_min_copied: b("nccl_min_copied", &r.nccl_min_copied)?,
        fused_push_max: b("fused_push_max", &r.fused_push_max)?,
        reason: r.reason.trim().to_string(),
        result: r.result,
        line,
    };
    if rule.reason.is_empty() {
        return Err("reason is empty: say in a line why the row is there".into());
    }
    // The kernels in order of size: each threshold past the one before it.
    if let (Some(ll), Some(push)) = (rule.ll_max, rule.push_max)
        && ll > push
    {
        return Err(format!(
            "ll_max {ll} is past push_max {push}: the LL kernel takes the smaller messages"
        ));
    }
    if let (Some(n), Some(c)) = (rule.narrow_max, rule.cp_async_min)
        && n < c
    {
        return Err(format!(
            "narrow_max {n} is below cp_async_min {c}: it narrows cp.async calls only"
        ));
    }
    if rule.narrow_max.is_some() && rule.cp_async_min.is_none() {
        return Err("narrow_max without cp_async_min: it narrows cp.async calls only".into());
    }
    Ok(rule)
}

fn reduce_rule(r: RawReduceRule, line: usize) -> Result<ReduceRule, String> {
    let axis: ReduceAxis = r.axis.parse().map_err(|e: SpecError| e.to_string())?;
    let ops = r
        .ops
        .iter()
        .map(|o| o.parse::<ReduceOp>().map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let input: DType = r.input.parse().map_err(|e: SpecError| e.to_string())?;
    let size = match (axis, &r.n, &r.cols) {
        (ReduceAxis::All, Some(n), None) => range("n", n)?,
        (ReduceAxis::All, _, _) => {
            return Err("a full-array row names its sizes as n (elements), and no cols".into());
        }
        (_, None, Some(c)) => range("cols", c)?,
        (_, _, _) => {
            return Err(format!(
                "a {axis} row names its row lengths as cols, and no n"
            ));
        }
    };
    if axis == ReduceAxis::All && r.rows.is_some() {
        return Err("a full-array row has no rows".into());
    }
    let rule = ReduceRule {
        axis,
        ops,
        input,
        size,
        rows: r.rows.as_deref().map(|t| range("rows", t)).transpose()?,
        strategy: r.strategy.parse().map_err(|e: SpecError| e.to_string())?,
        reason: r.reason.trim().to_string(),
        result: r.result,
        line,
    };
    if rule.reason.is_empty() {
        return Err("reason is empty: say in a line why the row is there".into());
    }
    let examples: Vec<ReduceSpec> = if rule.ops.is_empty() {
        vec![rule.example()]
    } else {
        rule.ops
            .iter()
            .map(|&op| ReduceSpec {
                op,
                accum: ReduceSpec::default_accum(op, input),
                ..rule.example()
            })
            .collect()
    };
    for spec in examples {
        spec.validate()
            .map_err(|e| format!("strategy = {:?}: {e}", r.strategy))?;
    }
    Ok(rule)
}

/// The strategy must make a valid kernel for the row's op and types, of the
/// form it names, that holds the row's longest row.
fn check_strategy(rule: &NormRule) -> Result<(), String> {
    let s = rule.strategy;
    let name = s.to_string();
    let longest_cols = |r: &NormRule| *r.cols.end();
    let form_needs = match s.form {
        Form::Exact => (s.layout != NormLayout::Loop)
            .then_some(())
            .ok_or("the exact form needs the warp, block or split layout"),
        Form::PrefetchExactOnly | Form::Cluster => (s.layout == NormLayout::Split)
            .then_some(())
            .ok_or("this form needs the split layout"),
        Form::Prefetch | Form::PrefetchExact => {
            matches!(s.layout, NormLayout::Block | NormLayout::Split)
                .then_some(())
                .ok_or("the prefetching form needs the block or split layout")
        }
        Form::NoL1 | Form::NoL1Exact => (s.layout == NormLayout::Block)
            .then_some(())
            .ok_or("the no-L1 form needs the block layout"),
        Form::Plain => Ok(()),
    };
    form_needs.map_err(|why| format!("{name}: {why}"))?;
    // An FP8 output's registers hold the row and its scaling (f32 layer norm
    // b512x4_x_h4_qd spilled 32 bytes, ptxas 13.0).
    if rule.types.is_fp8() && s.held.is_some() {
        return Err(format!(
            "{name}: an FP8 output's kernel holds no columns (`held`): its registers hold the row and its scaling"
        ));
    }
    let (input, output) = rule.types.example();
    let spec = NormSpec {
        op: rule.op,
        algo: rule
            .op
            .info()
            .softmax
            .then_some(rule.algo.unwrap_or(SoftmaxAlgo::Online)),
        residual: rule.residual,
        input,
        output,
        layout: s.layout,
        lanes: s.lanes,
        packs: s.packs,
        prefetch: s.form.prefetches(),
        no_l1: s.form.no_l1(),
        cluster: (s.form == Form::Cluster).then(|| {
            let chunk = u64::from(s.lanes) * u64::from(s.packs) * 4;
            longest_cols(rule)
                .div_ceil(chunk.max(1))
                .clamp(2, MAX_CLUSTER.into()) as u32
        }),
        held: s.held,
        bound: s.bound,
        raw: s.raw,
        fp8: rule.types.is_fp8().then_some(Fp8Scale::PerRow),
        ..NormSpec::default()
    };
    spec.validate().map_err(|e| format!("{name}: {e}"))?;
    // Pairs as the rows that fill an exact form take them (the others take
    // the ragged form, which may not pair: `NormSpec::can_pair_packs`).
    if s.pairs {
        let paired = NormSpec {
            pairs: true,
            exact: s.form.exact(),
            ..spec.clone()
        };
        paired.validate().map_err(|e| format!("{name}: {e}"))?;
    }
    let longest = longest_cols(rule);
    if let Some(cap) = spec.capacity()
        && cap < longest
    {
        return Err(format!(
            "{name} holds rows of at most {cap}, but cols reaches {}",
            if longest == u64::MAX {
                "any length".to_string()
            } else {
                longest.to_string()
            }
        ));
    }
    Ok(())
}
