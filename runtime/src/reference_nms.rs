//! The CPU twin of the `nms` pipeline: torchvision's greedy algorithm, with the
//! kernel's sort key and IoU computed step by step in the same f32 operations
//! (each rounded to nearest, no fused multiply-add), so kept lists match the GPU
//! exactly.
//!
//! ```
//! use redjit_runtime::reference_nms::nms;
//!
//! // Box 1 (score 0.95) suppresses box 0 (IoU 90.25 / 100 > 0.5); box 2 is apart.
//! let boxes = [0.0, 0.0, 10.0, 10.0, 0.5, 0.5, 10.0, 10.0, 20.0, 20.0, 30.0, 30.0];
//! assert_eq!(nms(&boxes, &[0.9, 0.95, 0.1], 0.5), [1, 2]);
//! // At 0.95 nothing is suppressed: kept in score order.
//! assert_eq!(nms(&boxes, &[0.9, 0.95, 0.1], 0.95), [1, 0, 2]);
//! ```
//!
//! Rules (the launcher's module documents the inputs it refuses):
//! - order: score descending, equal scores (`-0.0 == +0.0`) lowest index first;
//! - box b is dropped when a kept, earlier box a has IoU(a, b) > threshold;
//! - IoU = inter / union with inter = max(min(x2) - max(x1), 0) * max(min(y2) -
//!   max(y1), 0), union = (area_a + area_b) - inter, areas (x2 - x1) * (y2 - y1);
//!   a union of 0 or less counts as IoU 0.

/// The sort key of the box at `index` with `score`: ascending key order is
/// score descending, then index ascending (`-0.0` as `+0.0`). The kernel's
/// `rj_nms_key`.
pub fn sort_key(score: f32, index: u32) -> u64 {
    let mut b = score.to_bits();
    if b == 0x8000_0000 {
        b = 0;
    }
    let ascending = if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    };
    (u64::from(!ascending) << 32) | u64::from(index)
}

/// The indices of `scores` in NMS order (score descending, ties lowest index first).
pub fn order(scores: &[f32]) -> Vec<u32> {
    let mut keys: Vec<u64> = scores
        .iter()
        .enumerate()
        .map(|(i, &s)| sort_key(s, i as u32))
        .collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| k as u32).collect()
}

fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

fn min(a: f32, b: f32) -> f32 {
    if a < b { a } else { b }
}

/// IoU of two boxes `[x1, y1, x2, y2]` as the kernel computes it (a union of 0
/// or less gives 0).
pub fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = max(min(a[2], b[2]) - max(a[0], b[0]), 0.0);
    let h = max(min(a[3], b[3]) - max(a[1], b[1]), 0.0);
    let inter = w * h;
    let area_a = (a[2] - a[0]) * (a[3] - a[1]);
    let area_b = (b[2] - b[0]) * (b[3] - b[1]);
    let union = (area_a + area_b) - inter;
    if union > 0.0 { inter / union } else { 0.0 }
}

/// Whether `a` suppresses `b` (or `b` `a`) at `threshold`: IoU > threshold.
pub fn suppresses(a: &[f32; 4], b: &[f32; 4], threshold: f32) -> bool {
    iou(a, b) > threshold
}

fn boxes_of(boxes: &[f32]) -> Vec<[f32; 4]> {
    boxes
        .chunks_exact(4)
        .map(|c| [c[0], c[1], c[2], c[3]])
        .collect()
}

/// torchvision's greedy NMS, every pair tested: the definition the faster
/// [`nms`] is checked against. `boxes` holds 4 values per score.
pub fn nms_all_pairs(boxes: &[f32], scores: &[f32], threshold: f32) -> Vec<i64> {
    let b = boxes_of(boxes);
    assert_eq!(b.len(), scores.len(), "4 coordinates per score");
    let order = order(scores);
    let mut removed = vec![false; scores.len()];
    let mut keep = Vec::new();
    for (p, &i) in order.iter().enumerate() {
        if removed[i as usize] {
            continue;
        }
        keep.push(i64::from(i));
        for &j in &order[p + 1..] {
            if !removed[j as usize] && suppresses(&b[i as usize], &b[j as usize], threshold) {
                removed[j as usize] = true;
            }
        }
    }
    keep
}

/// torchvision's greedy NMS, testing only the pairs whose x ranges overlap
/// (for threshold >= 0, the only ones the launcher accepts, a pair without
/// overlap has IoU 0 and suppresses nothing): the same result as
/// [`nms_all_pairs`], fast enough for 10^5 boxes. A negative threshold falls
/// back to every pair.
pub fn nms(boxes: &[f32], scores: &[f32], threshold: f32) -> Vec<i64> {
    // NaN or negative: IoU 0 may exceed it, so every pair counts.
    if threshold.is_nan() || threshold < 0.0 {
        return nms_all_pairs(boxes, scores, threshold);
    }
    let b = boxes_of(boxes);
    assert_eq!(b.len(), scores.len(), "4 coordinates per score");
    let n = b.len();
    let order = order(scores);
    // rank[i]: position of box i in score order.
    let mut rank = vec![0u32; n];
    for (p, &i) in order.iter().enumerate() {
        rank[i as usize] = p as u32;
    }
    // Boxes with a positive x extent (the others never overlap anything), by x1.
    let mut by_x: Vec<u32> = (0..n as u32)
        .filter(|&i| b[i as usize][2] > b[i as usize][0])
        .collect();
    by_x.sort_by(|&p, &q| b[p as usize][0].total_cmp(&b[q as usize][0]));
    let x1s: Vec<f64> = by_x.iter().map(|&i| f64::from(b[i as usize][0])).collect();
    // In f64 the difference of two f32 is exact.
    let widest = by_x
        .iter()
        .map(|&i| f64::from(b[i as usize][2]) - f64::from(b[i as usize][0]))
        .fold(0.0f64, f64::max);
    let mut removed = vec![false; n];
    let mut keep = Vec::new();
    for &i in &order {
        let i = i as usize;
        if removed[i] {
            continue;
        }
        keep.push(i as i64);
        let a = b[i];
        if a[2] <= a[0] {
            continue;
        }
        // Overlap in x needs x1_j < a.x2 and x2_j > a.x1, so x1_j > a.x1 - widest
        // (in f64, with a margin for its rounding).
        let lo_x = f64::from(a[0]) - widest * (1.0 + 1e-9);
        let lo = x1s.partition_point(|&x| x < lo_x);
        let hi = x1s.partition_point(|&x| x < f64::from(a[2]));
        for &j in &by_x[lo..hi] {
            let j = j as usize;
            if rank[j] > rank[i] && !removed[j] && suppresses(&a, &b[j], threshold) {
                removed[j] = true;
            }
        }
    }
    keep
}

/// `n` random boxes (x1, y1, x2, y2) and scores from `seed` (SplitMix64): the
/// benchmark's distribution (corners uniform in a 1000 x 1000 image, sides in
/// [1, 128), scores in [0, 1)), shared by `redjit bench nms`, selftest and the
/// GPU tests; `scripts/torch_ref.py` draws the same distribution.
pub fn random_boxes(n: usize, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut s = seed;
    let mut u = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut boxes = Vec::with_capacity(4 * n);
    let mut scores = Vec::with_capacity(n);
    for _ in 0..n {
        let (x, y) = (u() * 1000.0, u() * 1000.0);
        let (w, h) = (1.0 + u() * 127.0, 1.0 + u() * 127.0);
        boxes.extend([x, y, x + w, y + h]);
        scores.push(u());
    }
    (boxes, scores)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_scores_descending_then_index() {
        let scores = [
            0.5,
            1.0,
            -1.0,
            0.5,
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-40,
        ];
        assert_eq!(order(&scores), [6, 1, 0, 3, 8, 4, 5, 2, 7]);
        assert!(sort_key(-0.0, 3) > sort_key(0.0, 2));
        assert!(sort_key(-0.0, 1) < sort_key(0.0, 2));
    }

    #[test]
    fn identical_boxes_keep_the_best_only() {
        let boxes = [1.0, 1.0, 5.0, 5.0].repeat(4);
        assert_eq!(nms(&boxes, &[0.1, 0.7, 0.3, 0.2], 0.5), [1]);
        // IoU 1 is not > 1: all kept.
        assert_eq!(nms(&boxes, &[0.1, 0.7, 0.3, 0.2], 1.0), [1, 2, 3, 0]);
    }

    #[test]
    fn ties_keep_the_lowest_index() {
        let boxes = [0.0, 0.0, 2.0, 2.0].repeat(3);
        assert_eq!(nms(&boxes, &[0.5, 0.5, 0.5], 0.5), [0]);
        assert_eq!(nms(&boxes, &[-0.0, 0.0, -0.0], 0.5), [0]);
        let apart = [0.0, 0.0, 1.0, 1.0, 5.0, 5.0, 6.0, 6.0, 9.0, 9.0, 10.0, 10.0];
        assert_eq!(nms(&apart, &[0.5, 0.5, 0.5], 0.5), [0, 1, 2]);
    }

    #[test]
    fn zero_area_boxes_never_suppress() {
        // Points and lines: union 0 (or inter 0) -> IoU 0.
        let boxes = [
            3.0, 3.0, 3.0, 3.0, // point
            3.0, 3.0, 3.0, 3.0, // the same point
            0.0, 3.0, 6.0, 3.0, // a horizontal line through it
            0.0, 0.0, 6.0, 6.0, // a box around them
        ];
        assert_eq!(iou(&[3.0, 3.0, 3.0, 3.0], &[3.0, 3.0, 3.0, 3.0]), 0.0);
        assert_eq!(nms(&boxes, &[0.9, 0.8, 0.7, 0.6], 0.0), [0, 1, 2, 3]);
    }

    #[test]
    fn iou_equal_to_the_threshold_is_kept() {
        // IoU = 50 / 150 = 1/3 exactly as f32 division of the same values.
        let a = [0.0, 0.0, 10.0, 10.0];
        let b = [5.0, 0.0, 15.0, 10.0];
        let t = iou(&a, &b);
        assert_eq!(t, 50.0f32 / 150.0);
        let boxes = [a, b].concat();
        assert_eq!(nms(&boxes, &[0.9, 0.8], t), [0, 1]);
        assert_eq!(
            nms(&boxes, &[0.9, 0.8], f32::from_bits(t.to_bits() - 1)),
            [0]
        );
        // Chains: 0 suppresses 1, so 1 cannot suppress 2.
        let chain = [
            0.0, 0.0, 10.0, 10.0, 3.0, 0.0, 13.0, 10.0, 6.0, 0.0, 16.0, 10.0,
        ];
        assert_eq!(nms(&chain, &[0.9, 0.8, 0.7], 0.5), [0, 2]);
    }

    #[test]
    fn inverted_boxes_are_computed_not_refused() {
        let boxes = [10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 10.0, 10.0];
        assert_eq!(nms(&boxes, &[0.9, 0.8], 0.0), [0, 1]);
    }

    #[test]
    fn the_fast_twin_equals_every_pair() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 40) as f32 / (1u64 << 24) as f32
        };
        for (n, thr) in [
            (0, 0.5),
            (1, 0.5),
            (200, 0.3),
            (500, 0.5),
            (700, 0.0),
            (300, 0.9),
        ] {
            let mut boxes = Vec::new();
            let mut scores = Vec::new();
            for _ in 0..n {
                let (x, y) = (next() * 100.0, next() * 100.0);
                let (w, h) = (next() * 20.0, next() * 20.0);
                boxes.extend([x, y, x + w, y + h]);
                // Coarse scores: many ties.
                scores.push((next() * 8.0).floor() / 8.0);
            }
            assert_eq!(
                nms(&boxes, &scores, thr),
                nms_all_pairs(&boxes, &scores, thr),
                "n = {n}, thr = {thr}"
            );
        }
    }
}
