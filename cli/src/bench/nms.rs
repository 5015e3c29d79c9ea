//! `redjit bench nms`: the whole NMS call (sort, mask, GPU walk, reading back
//! the count and the kept indices) on random boxes, median of CUDA-event
//! timings; `--compare` adds torchvision.ops.nms measured by
//! `scripts/torch_ref.py --families nms` on the same distribution.
//!
//! Boxes: corners uniform in a 1000 x 1000 image, sides uniform in [1, 128),
//! scores uniform in [0, 1) (torch_ref.py draws the same distribution). Both
//! sides synchronise with the host inside a call (torchvision copies its mask
//! to the host; redjit reads back the count and the indices), so the events
//! time the whole call. GB/s counts the boxes and scores read once (20 bytes a
//! box), only to put NMS in the common table; the times are what matter.

use clap::Args;
use redjit_codegen::{KernelSpec, NmsSpec};
use redjit_runtime::reference_nms::random_boxes;

use super::{Bench, Common, KernelRow};
use crate::error::{CliError, CliResult, DriverContext};

#[derive(Debug, Clone, Args)]
pub struct NmsBenchArgs {
    #[command(flatten)]
    pub common: Common,

    /// IoU thresholds, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![0.5f32])]
    pub thresholds: Vec<f32>,

    /// The walk kernel (the pipeline's reduction stage).
    #[arg(long, default_value = "nms_walk_t256")]
    pub walk: String,
}

/// The box counts `bench nms` runs unless `--sizes` says otherwise.
pub const DEFAULT_BOXES: &[usize] = &[20_000];

/// The name PyTorch's entries are keyed by, and the shape label of a threshold.
pub fn torch_key(thr: f32) -> (&'static str, String) {
    ("nms", format!("thr{thr}"))
}

pub fn bench(b: &mut Bench<'_>, a: &NmsBenchArgs, sizes: &[usize]) -> CliResult {
    let walk: NmsSpec = a.walk.parse()?;
    if a.thresholds.is_empty() {
        return Err(CliError::usage("--thresholds: at least one"));
    }
    let rt = b.rt;
    b.progress
        .set_message(format!("compiling the nms pipeline ({walk})"));
    let kernel = rt.nms(&walk)?;
    b.expect((sizes.len() * a.thresholds.len()) as u64);
    let stream = rt.stream();
    for &n in sizes {
        let (boxes, scores) = random_boxes(n, 0x5eed_0000_0000_0001 ^ n as u64);
        let bd = stream
            .clone_htod(&boxes)
            .during(|| format!("uploading {n} boxes"))?;
        let sd = stream
            .clone_htod(&scores)
            .during(|| format!("uploading {n} scores"))?;
        let copy_gbps = b.copy_gbps(5 * n.max(1))?;
        for &thr in &a.thresholds {
            let (key, label) = torch_key(thr);
            b.progress
                .set_message(format!("{} n={n} {label}", walk.name()));
            let kept = kernel.run(stream, &bd, &sd, thr)?.len();
            // No hold: a call reads its kept indices back, so the host waits
            // inside it and every timed call counts the whole call anyway.
            let us = b.median_us_held(None, || {
                kernel.run(stream, &bd, &sd, thr)?;
                Ok(())
            })?;
            b.println(format!("nms n={n} {label}: kept {kept} boxes, {us:.1} us"));
            let bytes = 20 * n as u64;
            let reference = b
                .torch
                .as_ref()
                .and_then(|t| t.get_named(key, n as u64, Some(&label)));
            b.push(KernelRow::measured(
                "nms",
                walk.name(),
                n as u64,
                Some(label),
                bytes,
                1,
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

    #[test]
    fn boxes_follow_the_distribution() {
        let (boxes, scores) = random_boxes(1000, 7);
        assert_eq!((boxes.len(), scores.len()), (4000, 1000));
        for b in boxes.chunks_exact(4) {
            assert!((0.0..1000.0).contains(&b[0]) && (0.0..1000.0).contains(&b[1]));
            assert!(b[2] - b[0] >= 1.0 && b[2] - b[0] < 128.0 + 1e-3);
            assert!(b[3] - b[1] >= 1.0 && b[3] - b[1] < 128.0 + 1e-3);
        }
        assert!(scores.iter().all(|s| (0.0..1.0).contains(s)));
        assert_eq!(random_boxes(10, 7), random_boxes(10, 7));
        assert_eq!(torch_key(0.5), ("nms", "thr0.5".to_string()));
    }
}
