//! `redjit bench softmax-all`: the whole-array softmax and log-softmax (both
//! launches: the statistics and the normalise stage), f32 and bf16 in and out,
//! at `--sizes` elements [default: 2^28], median of CUDA-event timings over
//! rotated buffers larger than L2; GB/s counts x read once and y written once
//! (the statistics pass reads x a second time: 2/3 of copy is the most a
//! two-pass kernel pair can reach unless x stays in L2). `--compare` adds
//! `torch.softmax(x.view(-1), 0)` from `scripts/torch_ref.py --families
//! softmax_all`, keyed by this file's `torch_key`.

use clap::Args;
use redjit_codegen::{DType, KernelSpec, NormOp, SoftmaxAllSpec, SoftmaxAllStage};

use super::{Bench, Common, KernelRow};
use crate::devbuf::DevBuf;
use crate::error::{CliError, CliResult, DriverContext};

#[derive(Debug, Clone, Args)]
pub struct SoftmaxAllBenchArgs {
    #[command(flatten)]
    pub common: Common,

    /// Element types (input = output), comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = crate::args::parse_dtype, default_values_t = vec![DType::F32, DType::BF16])]
    pub dtypes: Vec<DType>,
}

/// The sizes `bench softmax-all` runs unless `--sizes` says otherwise.
pub const DEFAULT_SIZES: &[usize] = &[1 << 28];

/// The name PyTorch's entries are keyed by: `softmax_all_<op>_<in>_<out>`,
/// the kernel's own name.
pub fn torch_key(spec: &SoftmaxAllSpec) -> String {
    spec.name()
}

/// The normalise specs of softmax and log-softmax for each dtype.
pub fn specs(a: &SoftmaxAllBenchArgs) -> CliResult<Vec<SoftmaxAllSpec>> {
    if a.dtypes.is_empty() {
        return Err(CliError::usage("--dtypes: at least one"));
    }
    let mut out = Vec::new();
    for &d in &a.dtypes {
        for op in [NormOp::Softmax, NormOp::LogSoftmax] {
            let spec = SoftmaxAllSpec::matrix()
                .into_iter()
                .find(|s| {
                    s.stage == SoftmaxAllStage::Normalize
                        && s.op == op
                        && s.input == d
                        && s.output == d
                })
                .ok_or_else(|| {
                    CliError::usage(format!("--dtypes {d}: softmax_all takes f32, bf16, f16"))
                })?;
            out.push(spec);
        }
    }
    Ok(out)
}

pub fn bench(b: &mut Bench<'_>, specs: &[SoftmaxAllSpec], sizes: &[usize]) -> CliResult {
    let rt = b.rt;
    b.expect((specs.len() * sizes.len()) as u64);
    let stream = rt.stream();
    for &n in sizes {
        let copy_gbps = b.copy_gbps(n)?;
        for spec in specs {
            let name = spec.name();
            b.progress.set_message(format!("{name} n={n}"));
            let kernel = rt.softmax_all(spec)?;
            let esize = |d: DType| d.info().bytes as u64;
            let bytes = n as u64 * (esize(spec.input) + esize(spec.output));
            b.check_fits(&format!("{name} at n={n}"), bytes)?;
            let rotations = b.rotations(bytes);
            let mut sets: Vec<(DevBuf, DevBuf)> = Vec::new();
            for _ in 0..rotations {
                sets.push((
                    b.filler.alloc(spec.input, n)?,
                    b.filler.alloc(spec.output, n)?,
                ));
            }
            let mut i = 0usize;
            let us = b.median_us(|| {
                let (x, y) = &mut sets[i % rotations as usize];
                i += 1;
                let xv = x.view(0, n);
                let mut yv = y.view_mut(0, n);
                kernel.launch(stream, xv.input(), yv.output(), 1.0)?;
                Ok(())
            })?;
            drop(sets);
            stream
                .synchronize()
                .during(|| format!("finishing {name}"))?;
            let reference = b
                .torch
                .as_ref()
                .and_then(|t| t.get_named(&torch_key(spec), n as u64, None));
            b.push(KernelRow::measured(
                "softmax_all",
                name,
                n as u64,
                None,
                bytes,
                rotations,
                us,
                copy_gbps,
                reference,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(dtypes: Vec<DType>) -> SoftmaxAllBenchArgs {
        SoftmaxAllBenchArgs {
            common: Common::for_tests(),
            dtypes,
        }
    }

    #[test]
    fn both_ops_for_each_dtype_and_names_match_torch_keys() {
        let s = specs(&args(vec![DType::F32, DType::BF16])).unwrap();
        let names: Vec<String> = s.iter().map(|s| s.name()).collect();
        assert_eq!(
            names,
            [
                "softmax_all_softmax_f32_f32",
                "softmax_all_logsoftmax_f32_f32",
                "softmax_all_softmax_bf16_bf16",
                "softmax_all_logsoftmax_bf16_bf16",
            ]
        );
        assert_eq!(torch_key(&s[2]), "softmax_all_softmax_bf16_bf16");
        let e = specs(&args(vec![DType::I8])).unwrap_err().to_string();
        assert!(
            e.contains("--dtypes i8") && e.contains("f32, bf16, f16"),
            "{e}"
        );
    }
}
