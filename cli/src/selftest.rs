//! `redjit selftest`: every kernel family present, checked against its CPU twin on
//! random inputs (with a GPU), or generated and compiled with NVRTC (without one).
//!
//! Exit codes: 0 every check passed on the GPU; 3 no GPU, but every kernel was
//! generated and compiled by NVRTC; 1 a check failed, or NVRTC is missing.

use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use cudarc::driver::CudaStream;
use half::{bf16, f16};
use redjit_codegen::{DType, KernelSpec, Op, ReduceCopySpec, Role, Rounding, Src};
use redjit_runtime::reference::{self, HostBuffer, Params};
use redjit_runtime::{
    Arch, CompileCache, Jit, KernelInput, KernelOutput, LaunchOptions, Output, ReduceCopyArgs,
    Runtime, Stochastic, Target,
};

use crate::devbuf::{DevBuf, random_block};
use crate::error::{CliError, CliResult, DriverContext};

/// Exit code when there is no GPU but generation and compilation passed.
pub const NO_GPU_EXIT: u8 = 3;

#[derive(Debug, Clone, Args)]
pub struct SelftestArgs {
    /// Elements per buffer (odd by default: the scalar tail is exercised).
    #[arg(long, default_value_t = 100_003)]
    pub n: usize,
}

/// What selftest checks: every type configuration at every unroll and transport,
/// and every op x rounding for config 2 (Ta_T) and for eight sources with two
/// destinations.
pub fn selftest_specs() -> Vec<ReduceCopySpec> {
    let mut out = Vec::new();
    for &unroll in redjit_codegen::spec::reduce_copy::UNROLLS {
        for transport in [DType::BF16, DType::F16] {
            out.extend(ReduceCopySpec::matrix(unroll, transport));
        }
    }
    let (t, a) = (Src::from(Role::Transport), Src::read_only(Role::Accum));
    for transport in [DType::BF16, DType::F16] {
        for &op in Op::ALL {
            for &rounding in Rounding::ALL {
                for (srcs, dsts) in [
                    (vec![t, a], vec![Role::Transport]),
                    (
                        vec![t, a, t, a, t, a, t, a],
                        vec![Role::Transport, Role::Accum],
                    ),
                ] {
                    out.push(ReduceCopySpec {
                        unroll: 4,
                        transport,
                        srcs,
                        dsts,
                        op,
                        rounding,
                        ..ReduceCopySpec::default()
                    });
                }
            }
        }
    }
    out
}

pub fn selftest_cmd(args: &SelftestArgs) -> CliResult {
    if args.n == 0 {
        return Err(CliError::usage("--n must be at least 1"));
    }
    let specs = selftest_specs();
    match redjit_runtime::gpu_available() {
        Ok(_) => on_gpu(&specs, args.n),
        Err(e) => {
            println!("no GPU ({e}): checking generation and NVRTC compilation only");
            compile_only(&specs)
        }
    }
}

fn row(family: &str, kernels: usize, checks: usize, failed: usize, ms: f64) {
    let verdict = if failed == 0 { "pass" } else { "FAIL" };
    println!("{family:<22} {kernels:>8} {checks:>8} {failed:>7}  {verdict:<5} {ms:>9.0}");
}

fn header() {
    println!(
        "{:<22} {:>8} {:>8} {:>7}  {:<5} {:>9}",
        "family", "kernels", "checks", "failed", "", "ms"
    );
}

/// Without a GPU: every kernel and its `_any` twin rendered and compiled to sm_90
/// cubin. Exit 3 when all pass.
fn compile_only(specs: &[ReduceCopySpec]) -> CliResult {
    let t0 = Instant::now();
    let jit = Jit::with_target(
        Target {
            arch: Arch::SM90,
            output: Output::Cubin,
        },
        CompileCache::in_memory(),
    );
    let all: Vec<ReduceCopySpec> = specs
        .iter()
        .flat_map(|s| [s.clone(), s.for_any_alignment()])
        .collect();
    let results = jit.compile_all(&all);
    let failed: Vec<String> = all
        .iter()
        .zip(&results)
        .filter_map(|(s, r)| r.as_ref().err().map(|e| format!("{}: {e}", s.name())))
        .collect();
    header();
    row(
        "reduce_copy (compile)",
        all.len(),
        all.len(),
        failed.len(),
        t0.elapsed().as_secs_f64() * 1e3,
    );
    if let Some(first) = failed.first() {
        return Err(CliError::failure(format!(
            "{} kernel(s) failed to compile; first: {first}",
            failed.len()
        )));
    }
    Err(CliError::NoGpu(format!(
        "no GPU: {} kernels generated and compiled for sm_90; nothing was run (exit {NO_GPU_EXIT})",
        all.len()
    )))
}

/// On the GPU: each kernel at n elements, once with every buffer aligned and once
/// with src0 one element in (and, rounding stochastically, a base offset that is
/// not a multiple of 4), both kernels of a spec; outputs poisoned first and
/// compared bit for bit with the CPU twin.
fn on_gpu(specs: &[ReduceCopySpec], n: usize) -> CliResult {
    let rt = Runtime::new(0)?;
    println!("GPU: {} ({})", rt.device().name, rt.device().arch);
    let t0 = Instant::now();
    let prep = rt.prepare(specs)?;
    println!(
        "prepared {} kernels in {:.0} ms ({} compiled)",
        prep.kernels,
        prep.wall.as_secs_f64() * 1e3,
        prep.compiled
    );
    let stream = rt.stream();
    let mut checks = 0;
    let mut failures = Vec::new();
    for (k, spec) in specs.iter().enumerate() {
        let kernel = rt.reduce_copy(spec)?;
        // Distinct random data per source, n + 1 elements so a view can start one in.
        let hosts: Vec<HostBuffer> = spec
            .srcs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let v = random_block(n + 1, 0x5e1f_7e57 ^ ((k * 8 + i) as u64) << 20);
                HostBuffer::from_fn(spec.dtype_of(s.role), n + 1, |j| v[j])
            })
            .collect();
        let devs: Vec<DevBuf> = hosts
            .iter()
            .map(|h| upload(stream, h))
            .collect::<CliResult<_>>()?;
        for (offset, base) in [(0usize, 0u64), (1, 5)] {
            let scalar = match spec.op {
                Op::PreMulSum => Some(0.37),
                Op::Avg => Some(3.0),
                _ => None,
            };
            let stochastic = (spec.rounding == Rounding::Stochastic).then_some(Stochastic {
                seed: 0x5e1f + k as u64,
                base,
            });
            let call = ReduceCopyArgs { scalar, stochastic };
            let mut outs: Vec<DevBuf> = spec
                .dsts
                .iter()
                .map(|&r| poisoned(stream, spec.dtype_of(r), n))
                .collect::<CliResult<_>>()?;
            {
                let views: Vec<_> = devs.iter().map(|d| d.view(offset, n)).collect();
                let ins: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
                let mut views_mut: Vec<_> = outs.iter_mut().map(|o| o.view_mut(0, n)).collect();
                let mut outs_dyn: Vec<&mut dyn KernelOutput> =
                    views_mut.iter_mut().map(|v| v.output()).collect();
                kernel.launch_with(stream, &ins, &mut outs_dyn, call, LaunchOptions::default())?;
            }
            stream
                .synchronize()
                .during(|| format!("running {}", spec.name()))?;
            let params = Params {
                op_arg: scalar.unwrap_or(0.0),
                sr_seed: stochastic.map_or(0, |s| s.seed),
                sr_base: stochastic.map_or(0, |s| s.base),
            };
            let srcs: Vec<&HostBuffer> = hosts.iter().collect();
            let want = reference::reduce_copy(spec, &srcs, &vec![offset; srcs.len()], n, params);
            for (d, (out, want)) in outs.iter().zip(&want).enumerate() {
                let got = download(stream, out)?;
                let bad = (0..n).filter(|&i| got.bits(i) != want.bits(i)).count();
                checks += 1;
                if bad > 0 {
                    failures.push(format!(
                        "{} (src offset {offset}) dst{d}: {bad} of {n} elements differ",
                        spec.name()
                    ));
                }
            }
        }
    }
    header();
    row(
        "reduce_copy",
        specs.len(),
        checks,
        failures.len(),
        t0.elapsed().as_secs_f64() * 1e3,
    );
    match failures.first() {
        None => Ok(()),
        Some(first) => Err(CliError::failure(format!(
            "{} check(s) failed; first: {first}",
            failures.len()
        ))),
    }
}

fn upload(stream: &Arc<CudaStream>, host: &HostBuffer) -> CliResult<DevBuf> {
    let what = || "uploading a selftest input".to_string();
    Ok(match host {
        HostBuffer::F32(v) => DevBuf::F32(stream.clone_htod(v).during(what)?),
        HostBuffer::BF16(v) => DevBuf::BF16(stream.clone_htod(v).during(what)?),
        HostBuffer::F16(v) => DevBuf::F16(stream.clone_htod(v).during(what)?),
    })
}

/// All-ones bits: a NaN no finite input produces, so an unwritten element fails.
fn poisoned(stream: &Arc<CudaStream>, dtype: DType, n: usize) -> CliResult<DevBuf> {
    let what = || "allocating a selftest output".to_string();
    Ok(match dtype {
        DType::F32 => DevBuf::F32(
            stream
                .clone_htod(&vec![f32::from_bits(u32::MAX); n])
                .during(what)?,
        ),
        DType::BF16 => DevBuf::BF16(
            stream
                .clone_htod(&vec![bf16::from_bits(u16::MAX); n])
                .during(what)?,
        ),
        DType::F16 => DevBuf::F16(
            stream
                .clone_htod(&vec![f16::from_bits(u16::MAX); n])
                .during(what)?,
        ),
    })
}

fn download(stream: &Arc<CudaStream>, buf: &DevBuf) -> CliResult<HostBuffer> {
    let what = || "downloading a selftest output".to_string();
    Ok(match buf {
        DevBuf::F32(s) => HostBuffer::F32(stream.clone_dtoh(s).during(what)?),
        DevBuf::BF16(s) => HostBuffer::BF16(stream.clone_dtoh(s).during(what)?),
        DevBuf::F16(s) => HostBuffer::F16(stream.clone_dtoh(s).during(what)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_list_is_valid_and_distinct() {
        let specs = selftest_specs();
        assert_eq!(specs.len(), 96 + 2 * 6 * 2 * 2);
        let names: std::collections::HashSet<_> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), specs.len());
        for s in &specs {
            s.validate().unwrap();
        }
    }
}
