//! reduce_copy in selftest: every type configuration at every unroll and
//! transport, every op x rounding for config 2 (Ta_T) and for eight sources
//! with two destinations; each once with every buffer aligned and once through
//! the misaligned twin (src0 and every destination one element in, and a stochastic
//! base that is not a multiple of 4), outputs poisoned on both sides, compared
//! bit for bit with the CPU twin.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaStream;
use half::{bf16, f16};
use redjit_codegen::spec::reduce_copy::Misalignment;
use redjit_codegen::{DType, KernelSpec, Op, ReduceCopySpec, Role, Rounding, Src};
use redjit_runtime::reference::{self, HostBuffer, Params};
use redjit_runtime::{
    KernelInput, KernelOutput, LaunchOptions, ReduceCopyArgs, Runtime, Stochastic,
};

use super::FamilyResult;
use crate::args::AnySpec;
use crate::devbuf::{DevBuf, random_block};
use crate::error::{CliResult, DriverContext};

/// Poisoned elements before each output view: 16 bytes of bf16, so the aligned
/// run's destination stays on a pack boundary.
const HEAD: usize = 8;
/// Poisoned elements after each output view.
const TAIL: usize = 5;

pub fn specs() -> Vec<ReduceCopySpec> {
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

/// Each spec and the misaligned twin `check` needs (src0 and every destination
/// one element in: `HEAD` is a whole number of packs); the launcher picks it.
pub fn compile_list(specs: &[ReduceCopySpec]) -> Vec<AnySpec> {
    specs
        .iter()
        .flat_map(|s| [s.clone(), s.for_misalignment(misaligned_views(s))])
        .map(|s| Box::new(s) as AnySpec)
        .collect()
}

fn misaligned_views(spec: &ReduceCopySpec) -> Misalignment {
    let srcs = (0..spec.srcs.len()).map(|i| u8::from(i == 0));
    Misalignment(srcs.chain(spec.dsts.iter().map(|_| 1)).collect())
}

pub fn check(rt: &Runtime, n: usize) -> CliResult<FamilyResult> {
    let t0 = Instant::now();
    let specs = specs();
    let stream = rt.stream();
    let mut r = FamilyResult {
        kernels: specs.len(),
        ..FamilyResult::default()
    };
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
        let scalar = match spec.op {
            Op::PreMulSum => Some(0.37),
            Op::Avg => Some(3.0),
            _ => None,
        };
        // (offset of src0 and of every destination, stochastic base).
        for (offset, base) in [(0usize, 0u64), (1, 5)] {
            let stochastic = (spec.rounding == Rounding::Stochastic).then_some(Stochastic {
                seed: 0x5e1f + k as u64,
                base,
            });
            let call = ReduceCopyArgs { scalar, stochastic };
            let len = HEAD + n + TAIL;
            let mut outs: Vec<DevBuf> = spec
                .dsts
                .iter()
                .map(|&r| poisoned(stream, spec.dtype_of(r), len))
                .collect::<CliResult<_>>()?;
            let src_offsets: Vec<usize> = (0..devs.len())
                .map(|i| if i == 0 { offset } else { 0 })
                .collect();
            {
                let views: Vec<_> = devs
                    .iter()
                    .zip(&src_offsets)
                    .map(|(d, &o)| d.view(o, n))
                    .collect();
                let ins: Vec<&dyn KernelInput> = views.iter().map(|v| v.input()).collect();
                let mut views_mut: Vec<_> = outs
                    .iter_mut()
                    .map(|o| o.view_mut(HEAD + offset, n))
                    .collect();
                let mut outs_dyn: Vec<&mut dyn KernelOutput> =
                    views_mut.iter_mut().map(|v| v.output()).collect();
                kernel.launch_with(stream, &ins, &mut outs_dyn, call, LaunchOptions::default())?;
            }
            let params = Params {
                op_arg: scalar.unwrap_or(0.0),
                sr_seed: stochastic.map_or(0, |s| s.seed),
                sr_base: stochastic.map_or(0, |s| s.base),
            };
            let srcs: Vec<&HostBuffer> = hosts.iter().collect();
            // The twin runs while the GPU does (the download below synchronises).
            let want = reference::reduce_copy(spec, &srcs, &src_offsets, n, params);
            for (d, (out, want)) in outs.iter().zip(&want).enumerate() {
                let got = download(stream, out)?;
                r.checks += 1;
                let start = HEAD + offset;
                let bad = (0..n)
                    .filter(|&i| got.bits(start + i) != want.bits(i))
                    .count();
                let poison = poison_bits(got.dtype());
                let clobbered = (0..start)
                    .chain(start + n..len)
                    .filter(|&i| got.bits(i) != poison)
                    .count();
                if bad > 0 || clobbered > 0 {
                    r.failures.push(format!(
                        "{} (src0 and dsts {offset} in, base {base}) dst{d}: {bad} of {n} elements differ, {clobbered} written outside the view",
                        spec.name()
                    ));
                }
            }
        }
    }
    stream
        .synchronize()
        .during(|| "finishing the reduce_copy checks".into())?;
    r.time = t0.elapsed();
    Ok(r)
}

fn upload(stream: &Arc<CudaStream>, host: &HostBuffer) -> CliResult<DevBuf> {
    let what = || "uploading a selftest input".to_string();
    Ok(match host {
        HostBuffer::F32(v) => DevBuf::F32(stream.clone_htod(v).during(what)?),
        HostBuffer::BF16(v) => DevBuf::BF16(stream.clone_htod(v).during(what)?),
        HostBuffer::F16(v) => DevBuf::F16(stream.clone_htod(v).during(what)?),
        other => return Err(no_buffers(other.dtype())),
    })
}

/// A valid reduce_copy spec's buffers are store types (f32, bf16, f16).
fn no_buffers(dtype: DType) -> crate::error::CliError {
    crate::error::CliError::failure(format!(
        "reduce_copy has no {dtype} buffers (its types: {})",
        DType::store_types()
    ))
}

/// All-ones bits: a NaN no finite input produces, so an unwritten element fails.
fn poison_bits(dtype: DType) -> u32 {
    match dtype {
        DType::F32 => u32::MAX,
        DType::BF16 | DType::F16 => u32::from(u16::MAX),
        DType::E4M3 | DType::E5M2 | DType::I8 => u32::from(u8::MAX),
        DType::I64 => u32::MAX,
    }
}

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
        other => return Err(no_buffers(other)),
    })
}

fn download(stream: &Arc<CudaStream>, buf: &DevBuf) -> CliResult<HostBuffer> {
    let what = || "downloading a selftest output".to_string();
    Ok(match buf {
        DevBuf::F32(s) => HostBuffer::F32(stream.clone_dtoh(s).during(what)?),
        DevBuf::BF16(s) => HostBuffer::BF16(stream.clone_dtoh(s).during(what)?),
        DevBuf::F16(s) => HostBuffer::F16(stream.clone_dtoh(s).during(what)?),
        DevBuf::E4M3(_) => return Err(no_buffers(DType::E4M3)),
        DevBuf::E5M2(_) => return Err(no_buffers(DType::E5M2)),
        DevBuf::I8(_) => return Err(no_buffers(DType::I8)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_list_is_valid_and_distinct() {
        let specs = specs();
        assert_eq!(specs.len(), 96 + 2 * 6 * 2 * 2);
        let names: std::collections::HashSet<_> = specs.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), specs.len());
        for s in &specs {
            s.validate().unwrap();
        }
        assert_eq!(compile_list(&specs).len(), 2 * specs.len());
    }

    /// The host half of a check (inputs and the twin at the default size) is
    /// cheap: the whole family's stays far below the time budget.
    #[test]
    fn the_twin_at_selftest_size_is_fast() {
        let spec = &specs()[specs().len() - 1]; // 8 sources, 2 destinations
        let n = 100_003;
        let t0 = Instant::now();
        let hosts: Vec<HostBuffer> = spec
            .srcs
            .iter()
            .map(|s| {
                let v = random_block(n + 1, 7);
                HostBuffer::from_fn(spec.dtype_of(s.role), n + 1, |j| v[j])
            })
            .collect();
        let srcs: Vec<&HostBuffer> = hosts.iter().collect();
        let params = Params {
            op_arg: 3.0,
            sr_seed: 1,
            sr_base: 5,
        };
        let want = reference::reduce_copy(spec, &srcs, &[1, 0, 0, 0, 0, 0, 0, 0], n, params);
        assert_eq!(want.len(), 2);
        eprintln!("host work of one check: {:?}", t0.elapsed());
    }
}
