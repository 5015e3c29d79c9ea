//! nms in selftest: the whole pipeline (sort, mask, walk) on random boxes of
//! the benchmark's distribution at sizes that take one and several 64-box
//! blocks, with scores on a grid of 1/64 so ties occur, at two thresholds; the
//! kept indices must equal the CPU twin's exactly.

use std::time::Instant;

use redjit_codegen::NmsSpec;
use redjit_runtime::{Runtime, reference_nms};

use super::FamilyResult;
use crate::args::AnySpec;
use crate::error::{CliResult, DriverContext};
use redjit_runtime::reference_nms::random_boxes;

/// Box counts: one box, a partial block, blocks and a remainder, many blocks.
const COUNTS: &[usize] = &[1, 63, 1000, 20_000];
const THRESHOLDS: &[f32] = &[0.5, 0.7];

pub fn specs() -> Vec<NmsSpec> {
    vec![NmsSpec::default()]
}

/// Every stage of each spec's pipeline.
pub fn compile_list(specs: &[NmsSpec]) -> Vec<AnySpec> {
    specs
        .iter()
        .flat_map(|s| s.pipeline())
        .map(|s| Box::new(s) as AnySpec)
        .collect()
}

pub fn check(rt: &Runtime) -> CliResult<FamilyResult> {
    let t0 = Instant::now();
    let specs = specs();
    let mut r = FamilyResult {
        kernels: specs.len(),
        ..FamilyResult::default()
    };
    let s = rt.stream();
    for spec in &specs {
        let kernel = rt.nms(spec)?;
        for (k, &n) in COUNTS.iter().enumerate() {
            let (boxes, mut scores) = random_boxes(n, 0x5e1f_7e57 ^ k as u64);
            for x in &mut scores {
                *x = (*x * 64.0).floor() / 64.0;
            }
            let bd = s.clone_htod(&boxes).during(|| "uploading boxes".into())?;
            let sd = s.clone_htod(&scores).during(|| "uploading scores".into())?;
            for &thr in THRESHOLDS {
                r.checks += 1;
                let want = reference_nms::nms(&boxes, &scores, thr);
                match kernel.run(s, &bd, &sd, thr) {
                    Ok(got) if got == want => {}
                    Ok(got) => {
                        let first = got.iter().zip(&want).position(|(a, b)| a != b);
                        r.failures.push(format!(
                            "nms n={n} thr={thr}: kept {} boxes, the twin {}; first difference at {first:?}",
                            got.len(),
                            want.len()
                        ));
                    }
                    Err(e) => r.failures.push(format!("nms n={n} thr={thr}: {e}")),
                }
            }
        }
    }
    r.time = t0.elapsed();
    Ok(r)
}
