//! softmax_all in selftest: whole-array softmax and log-softmax of every
//! input x output dtype pair at the selftest size, the input one element into a
//! NaN-padded buffer and the output between NaN poison, against the f64 twin
//! (`reference_norm::check_softmax_all`: f32 within the launch's derived bound,
//! 16-bit within it or one ulp of the correctly rounded value).

use std::time::Instant;

use redjit_codegen::{KernelSpec, SoftmaxAllSpec, SoftmaxAllStage};
use redjit_runtime::Runtime;
use redjit_runtime::reference::HostBuffer;
use redjit_runtime::reference_norm::check_softmax_all;

use super::FamilyResult;
use crate::args::AnySpec;
use crate::devbuf::{DevBuf, random_block};
use crate::error::CliResult;

/// NaN elements after each buffer.
const SLACK: usize = 3;
/// The scale (temperature) applied to x.
const SCALE: f32 = 1.5;

/// The normalise kernels (each brings its stats twin).
pub fn specs() -> Vec<SoftmaxAllSpec> {
    SoftmaxAllSpec::matrix()
        .into_iter()
        .filter(|s| s.stage == SoftmaxAllStage::Normalize)
        .collect()
}

/// Every kernel of the family: the normalise kernels and the stats kernels.
pub fn compile_list() -> Vec<AnySpec> {
    SoftmaxAllSpec::matrix()
        .into_iter()
        .map(|s| Box::new(s) as AnySpec)
        .collect()
}

pub fn check(rt: &Runtime, n: usize) -> CliResult<FamilyResult> {
    let t0 = Instant::now();
    let specs = specs();
    let mut r = FamilyResult {
        kernels: specs.len(),
        ..FamilyResult::default()
    };
    let s = rt.stream();
    for (k, spec) in specs.iter().enumerate() {
        let what = format!("{} n={n}", spec.name());
        let block = random_block(n.min(1 << 16), 0x50f7 ^ k as u64);
        // Values in +-[2, 6): a softmax with a real spread.
        let x = HostBuffer::from_fn(spec.input, n, |i| 4.0 * block[i % block.len()]);
        let verdict = (|| -> CliResult<Result<f64, String>> {
            let kernel = rt.softmax_all(spec)?;
            let xd = DevBuf::upload_padded(s, &x, 1, SLACK)?;
            let poison = HostBuffer::from_fn(spec.output, 0, |_| 0.0);
            let mut yd = DevBuf::upload_padded(s, &poison, 0, n + 2 * SLACK)?;
            {
                let xv = xd.view(1, n);
                let mut yv = yd.view_mut(SLACK, n);
                kernel.launch(s, xv.input(), yv.output(), SCALE)?;
            }
            let got = yd.download(s)?;
            if let Some(i) = (0..SLACK)
                .chain(SLACK + n..n + 2 * SLACK)
                .find(|&i| !got.get_f32(i).is_nan())
            {
                return Ok(Err(format!("wrote outside its elements at {i}")));
            }
            let y = HostBuffer::from_fn(spec.output, n, |i| got.get_f32(SLACK + i));
            let grid = kernel.stats_plan(n as u64).grid.0;
            Ok(check_softmax_all(spec, &x, SCALE, grid, &y))
        })();
        r.record(&what, verdict);
    }
    r.time = t0.elapsed();
    Ok(r)
}
