//! `redjit bench reduce-copy`: every reduce_copy configuration at each size.

use std::collections::HashSet;

use clap::Args;
use redjit_codegen::{DType, KernelSpec, ReduceCopySpec, Role, Rounding};
use redjit_runtime::{KernelInput, KernelOutput, LaunchOptions, ReduceCopyArgs, Stochastic};

use super::{Bench, Common, KernelRow};
use crate::devbuf::DevBuf;
use crate::error::{CliError, CliResult, DriverContext};

#[derive(Debug, Clone, Args)]
pub struct ReduceCopyBenchArgs {
    #[command(flatten)]
    pub common: Common,

    /// Unroll factor(s), comma-separated, e.g. 4 or 1,2,4,8.
    #[arg(long, value_delimiter = ',', default_values_t = vec![ReduceCopySpec::default().unroll])]
    pub unroll: Vec<u32>,

    /// Rounding mode(s), comma-separated: rn (nearest), sr (stochastic; only
    /// for kernels with a transport destination).
    #[arg(long, value_delimiter = ',', value_parser = crate::args::parse_rounding, default_values_t = vec![Rounding::Nearest])]
    pub rounding: Vec<Rounding>,

    /// Bench these kernels (names as the runtime prints them, comma-separated
    /// or the flag repeated) instead of the
    /// matrix of every type configuration.
    #[arg(long = "spec", value_name = "NAME", value_delimiter = ',')]
    pub specs: Vec<String>,

    /// Also time misaligned placements, reported beside the aligned figure:
    /// every mix of per-buffer offsets 0..3 elements (63 for three buffers) where
    /// the kernel has at most three buffers, else each buffer in turn 1, 2, 3 off
    /// and every buffer off at once.
    #[arg(long)]
    pub misaligned: bool,
}

impl ReduceCopyBenchArgs {
    /// What `bench all` runs: the defaults of every flag.
    pub fn defaults(common: Common) -> Self {
        ReduceCopyBenchArgs {
            common,
            unroll: vec![ReduceCopySpec::default().unroll],
            rounding: vec![Rounding::Nearest],
            specs: Vec::new(),
            misaligned: false,
        }
    }
}

/// The kernels: `--spec` names, or the matrix.
pub fn specs(a: &ReduceCopyBenchArgs) -> CliResult<Vec<ReduceCopySpec>> {
    if a.specs.is_empty() {
        return bench_specs(&a.unroll, &a.rounding);
    }
    a.specs
        .iter()
        .map(|n| {
            let s = n.parse::<ReduceCopySpec>()?;
            s.validate()?;
            Ok(s)
        })
        .collect()
}

/// `ReduceCopySpec::matrix` for each unroll and transport dtype, without repeats
/// (a kernel whose buffers are all accum is the same for every transport: the
/// first is kept).
pub fn bench_specs(unrolls: &[u32], roundings: &[Rounding]) -> CliResult<Vec<ReduceCopySpec>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for &rounding in roundings {
        for &unroll in unrolls {
            for &t in DType::ALL.iter().filter(|d| d.info().transport) {
                for spec in ReduceCopySpec::matrix(unroll, t) {
                    let spec = ReduceCopySpec { rounding, ..spec };
                    if rounding == Rounding::Stochastic && !spec.dsts.contains(&Role::Transport) {
                        continue;
                    }
                    spec.validate()?;
                    let dtypes: Vec<DType> = spec.roles().map(|r| spec.dtype_of(r)).collect();
                    let key = (spec.unroll, dtypes, spec.srcs.len(), spec.op, spec.rounding);
                    if seen.insert(key) {
                        out.push(spec);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Bytes one launch moves per element: each source read once, each destination written once.
pub fn bytes_per_elem(spec: &ReduceCopySpec) -> u64 {
    spec.roles()
        .map(|r| u64::from(spec.dtype_of(r).info().bytes))
        .sum()
}

/// Role letters without load kinds, as scripts/torch_ref.py keys its entries.
fn letters(roles: impl Iterator<Item = Role>) -> String {
    roles.map(|r| r.info().letter).collect()
}

/// Host values every bench launch passes: a scalar for ops that take one, a
/// fixed seed for stochastic rounding.
fn call_args(spec: &ReduceCopySpec) -> ReduceCopyArgs {
    ReduceCopyArgs {
        scalar: spec.op.info().scalar.map(|_| 2.0),
        stochastic: (spec.rounding == Rounding::Stochastic).then_some(Stochastic {
            seed: 0x5eed,
            base: 0,
        }),
    }
}

pub fn bench(
    b: &mut Bench<'_>,
    a: &ReduceCopyBenchArgs,
    specs: &[ReduceCopySpec],
    sizes: &[usize],
) -> CliResult {
    let rt = b.rt;
    b.progress
        .set_message(format!("compiling {} reduce_copy kernels", specs.len()));
    let prep = rt.prepare(specs)?;
    b.println(format!(
        "reduce_copy: prepared {} kernels in {:.1} ms (compiled {}, from disk {})",
        prep.kernels,
        prep.wall.as_secs_f64() * 1e3,
        prep.compiled,
        prep.from_disk
    ));
    b.expect((specs.len() * sizes.len()) as u64);
    let stream = rt.stream();
    for &n in sizes {
        let copy_gbps = b.copy_gbps(n)?;
        for spec in specs {
            b.progress.set_message(format!(
                "{} n={}",
                spec.name(),
                crate::sizes::fmt_size(n as u64)
            ));
            let kernel = rt.reduce_copy(spec)?;
            let bpe = bytes_per_elem(spec);
            let bytes = bpe * n as u64;
            b.check_fits(&format!("{} at n = {n}", spec.name()), bytes)?;
            let rotations = b.rotations(bytes);
            // Spare elements let a buffer be viewed 1..3 elements in.
            let slack = if a.misaligned { 3 } else { 0 };
            let mut sets = Vec::new();
            for _ in 0..rotations {
                let srcs: Vec<DevBuf> = spec
                    .srcs
                    .iter()
                    .map(|s| b.filler.alloc(spec.dtype_of(s.role), n + slack))
                    .collect::<CliResult<_>>()?;
                let dsts: Vec<DevBuf> = spec
                    .dsts
                    .iter()
                    .map(|&r| b.filler.alloc(spec.dtype_of(r), n + slack))
                    .collect::<CliResult<_>>()?;
                sets.push((srcs, dsts));
            }
            let call = call_args(spec);
            let timer = &*b;
            // One rotation across the placements timed on these sets: each
            // continues past the sets the one before touched.
            let mut i = 0usize;
            let mut time_at = |src_off: &[usize], dst_off: &[usize]| -> CliResult<f64> {
                timer.median_us(|| {
                    let (srcs, dsts) = &mut sets[i % rotations as usize];
                    i += 1;
                    let views: Vec<_> = srcs
                        .iter()
                        .zip(src_off)
                        .map(|(b, &o)| b.view(o, n))
                        .collect();
                    let mut views_mut: Vec<_> = dsts
                        .iter_mut()
                        .zip(dst_off)
                        .map(|(b, &o)| b.view_mut(o, n))
                        .collect();
                    let ins: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
                    let mut outs: Vec<&mut dyn KernelOutput> =
                        views_mut.iter_mut().map(|v| v.output()).collect();
                    kernel.launch_with(stream, &ins, &mut outs, call, LaunchOptions::default())?;
                    Ok(())
                })
            };
            let (ns, nd) = (spec.srcs.len(), spec.dsts.len());
            let us = time_at(&vec![0; ns], &vec![0; nd])?;
            let mut misaligned = Vec::new();
            if a.misaligned {
                for mix in misaligned_mixes(ns, nd) {
                    misaligned.push((mix.label(ns), time_at(&mix.0[..ns], &mix.0[ns..])?));
                }
            }
            // Free this configuration's buffers before the next one allocates.
            drop(sets);
            stream
                .synchronize()
                .during(|| format!("finishing {}", spec.name()))?;
            let gbps = bytes as f64 / us / 1e3;
            let (srcs_l, dsts_l) = (
                letters(spec.srcs.iter().map(|s| s.role)),
                letters(spec.dsts.iter().copied()),
            );
            let transport = spec.transport.slug().to_string();
            let reference = b
                .torch
                .as_ref()
                .and_then(|t| t.get(&transport, &srcs_l, &dsts_l, n as u64));
            let row = KernelRow {
                family: "reduce_copy".into(),
                name: spec.name(),
                n: n as u64,
                shape: None,
                config: spec.seed_config(),
                unroll: Some(spec.unroll),
                transport: Some(transport.clone()),
                srcs: Some(srcs_l),
                dsts: Some(dsts_l),
                bytes_per_elem: Some(bpe),
                bytes,
                rotations,
                median_us: us,
                gbps,
                pct_of_copy: 100.0 * gbps / copy_gbps,
                pct_of_copy_same_bytes: None,
                torch_eager_gbps: reference.and_then(|r| r.eager_gbps),
                torch_compile_gbps: reference.and_then(|r| r.compile_gbps),
                misaligned: misaligned.clone(),
            };
            b.push(row);
            for (label, t) in &misaligned {
                let g = bytes as f64 / t / 1e3;
                b.println(format!(
                    "    misaligned {label:<22} {t:10.1} us {g:9.1} GB/s  {:5.1}% of aligned",
                    100.0 * us / t
                ));
            }
            if let Some((label, t)) = misaligned.iter().max_by(|x, y| x.1.total_cmp(&y.1)) {
                b.println(format!(
                    "    slowest of {} misaligned placements: {label}, {:5.1}% of aligned",
                    misaligned.len(),
                    100.0 * us / t
                ));
            }
        }
    }
    if specs.is_empty() {
        return Err(CliError::usage("no reduce_copy kernel to bench"));
    }
    Ok(())
}

/// Elements each buffer is viewed off its pack boundary (sources, then
/// destinations); at least one is non-zero.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mix(Vec<usize>);

impl Mix {
    /// The buffers that are off, e.g. `src0+1 dst0+3`.
    fn label(&self, ns: usize) -> String {
        self.0
            .iter()
            .enumerate()
            .filter(|&(_, &o)| o != 0)
            .map(|(b, o)| match b < ns {
                true => format!("src{b}+{o}"),
                false => format!("dst{}+{o}", b - ns),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Most buffers for which every mix of offsets is timed (4^3 - 1 = 63 placements,
/// each its own compiled twin); past it the number of mixes grows too fast.
const EVERY_MIX_BUFFERS: usize = 3;

/// The misaligned placements `--misaligned` times: every mix of offsets 0..=3 per
/// buffer (all zero left out) for at most `EVERY_MIX_BUFFERS` buffers; else each
/// buffer in turn 1..=3 off, then every buffer off at once by differing amounts.
fn misaligned_mixes(ns: usize, nd: usize) -> Vec<Mix> {
    let k = ns + nd;
    if k <= EVERY_MIX_BUFFERS {
        return (1..4usize.pow(k as u32))
            .map(|code| Mix((0..k).map(|b| (code >> (2 * b)) & 3).collect()))
            .collect();
    }
    let each = (0..k).flat_map(|b| {
        (1..=3).map(move |off| Mix((0..k).map(|i| if i == b { off } else { 0 }).collect()))
    });
    let all_off = (0..3).map(|shift| Mix((0..k).map(|b| 1 + (b + shift) % 3).collect()));
    each.chain(all_off).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrix_is_deduplicated_across_transports() {
        let specs = bench_specs(&[4], &[Rounding::Nearest]).unwrap();
        // 12 per transport; config 7 (AA_A) and the A_A copy are shared.
        assert_eq!(specs.len(), 22);
        let names: HashSet<_> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), specs.len());
        assert!(bench_specs(&[3], &[Rounding::Nearest]).is_err());
    }

    #[test]
    fn bytes_per_element() {
        let spec = ReduceCopySpec::default(); // bf16 + f32 -> bf16
        assert_eq!(bytes_per_elem(&spec), 8);
    }

    #[test]
    fn every_mix_of_three_buffers_and_a_sample_of_more() {
        let mixes = misaligned_mixes(2, 1);
        assert_eq!(mixes.len(), 63);
        let distinct: HashSet<_> = mixes.iter().map(|m| m.0.clone()).collect();
        assert_eq!(distinct.len(), 63);
        assert!(
            mixes
                .iter()
                .all(|m| m.0.len() == 3 && m.0.iter().any(|&o| o != 0))
        );
        assert!(mixes.iter().all(|m| m.0.iter().all(|&o| o <= 3)));
        assert_eq!(Mix(vec![1, 0, 3]).label(2), "src0+1 dst0+3");
        // Eight sources and two destinations: 10 buffers x 3 offsets, then 3
        // placements with every buffer off.
        let many = misaligned_mixes(8, 2);
        assert_eq!(many.len(), 33);
        assert!(
            many[30..]
                .iter()
                .all(|m| m.0.iter().all(|&o| (1..=3).contains(&o)))
        );
    }
}
