//! Quantized all-reduce (issue 12 item 7, NCCLX-style): f32 inputs and
//! outputs, bf16 in every buffer a peer reads, f32 accumulation, stochastic
//! rounding wherever an f32 becomes a bf16.
//!
//! ```
//! # #[cfg(feature = "cpu-twins")] {
//! use redjit_runtime::all_reduce::Quantize;
//! use redjit_runtime::reference::all_reduce_quantized;
//! use redjit_runtime::{AllReduceAlgo, Op};
//!
//! // Inputs exactly representable in bf16 are not changed by the rounding of
//! // the inputs; their sum (here exact in bf16 too) comes back exactly.
//! let a = vec![1.5f32; 19];
//! let b = vec![-0.25f32; 19];
//! let q = Quantize::default();
//! for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoStage] {
//!     let out = all_reduce_quantized(&[&a, &b], algo, Op::Sum, None, q);
//!     assert_eq!(out, vec![1.25f32; 19]);
//! }
//! // One call spans (R + 1) * s Philox positions, s = n rounded up to 4.
//! assert_eq!(Quantize::span(2, 19), 3 * 20);
//! # }
//! ```
//!
//! How it runs (the design is argued in `redjit_codegen::spec::all_reduce`'s
//! module docs): [`super::Communicator::all_reduce_quantized`] launches, on each
//! rank's stream, the one-source reduce_copy kernel of
//! [`Quantize::reduce_copy_spec`] (f32 -> bf16, stochastic rounding) from the
//! rank's input into its registered staging buffer, where the plain
//! all-reduce copies the input; then the quantized all-reduce kernel
//! (`..._q_bf16_sr`) reduces the bf16 staging buffers in f32.
//!
//! Random bits: key = `seed`; with `s` = n rounded up to a multiple of 4,
//! rank r's input element i draws position `base + r*s + i`
//! ([`Quantize::input_base`]) and the two-stage kernel's partial of element j
//! draws position `base + R*s + j` ([`Quantize::partial_base`]); position p is
//! lane p % 4 of `philox(key = seed, counter = p / 4)`, exactly as in
//! reduce_copy ([`crate::philox::sr_bits`]). The output therefore depends only
//! on (inputs, seed, base, rank, element index): not on the grid, the block
//! size, the input's alignment or which path handled an element. Rounding `s`
//! up to 4 keeps every rank's quantization on reduce_copy's aligned kernel
//! when `base` is a multiple of 4 (otherwise its misaligned twin runs, with the
//! same bits). Calls that must draw fresh bits advance `base` by
//! [`Quantize::span`] or change the seed.
//!
//! Captured into a CUDA graph, a quantized call always stages (the
//! quantization is part of the graph), so it needs no capture session; its
//! seed and base are baked into the graph.

#![warn(missing_docs)]

use redjit_codegen::{DType, Op, ReduceCopySpec, Role, Rounding, Src};

/// Quantized transport of one call: the type peers exchange and stochastic
/// rounding's key and counter offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantize {
    /// The type peers exchange: bf16 (the only one generated).
    pub transport: DType,
    /// The Philox key.
    pub seed: u64,
    /// The call's first Philox position (see the module docs).
    pub base: u64,
}

impl Quantize {
    /// The seed of [`Quantize::default`]: an arbitrary fixed constant, so runs
    /// that do not choose one are reproducible.
    pub const DEFAULT_SEED: u64 = 0x0123_4567_89ab_cdef;

    /// bf16 transport with `seed` and `base`.
    pub fn bf16(seed: u64, base: u64) -> Quantize {
        Quantize {
            transport: DType::BF16,
            seed,
            base,
        }
    }

    /// Positions between two ranks' (or stages') first positions: `n` rounded
    /// up to a multiple of 4 (one Philox counter holds 4 positions).
    pub fn stride(n: usize) -> u64 {
        (n as u64).next_multiple_of(4)
    }

    /// Positions one call of `n` elements over `world` ranks spans: `world`
    /// inputs and one partial.
    pub fn span(world: u32, n: usize) -> u64 {
        (u64::from(world) + 1) * Self::stride(n)
    }

    /// The first position of rank `rank`'s input quantization.
    pub fn input_base(&self, rank: u32, n: usize) -> u64 {
        self.base
            .wrapping_add(u64::from(rank).wrapping_mul(Self::stride(n)))
    }

    /// The first position of the two-stage kernel's partials.
    pub fn partial_base(&self, world: u32, n: usize) -> u64 {
        self.input_base(world, n)
    }

    /// Whether a call of `n` elements over `world` ranks stays within 64-bit
    /// positions (the communicator refuses one that does not).
    pub fn fits(&self, world: u32, n: usize) -> bool {
        Self::stride(n)
            .checked_mul(u64::from(world) + 1)
            .and_then(|span| self.base.checked_add(span))
            .is_some()
    }

    /// The reduce_copy kernel that quantizes a rank's f32 input into its
    /// staging buffer: one read-only f32 source, one transport destination,
    /// stochastic rounding (`reduce_copy_u4_f32_bf16_a_T_sum_sr`).
    pub fn reduce_copy_spec(&self) -> ReduceCopySpec {
        ReduceCopySpec {
            accum: DType::F32,
            transport: self.transport,
            srcs: vec![Src::read_only(Role::Accum)],
            dsts: vec![Role::Transport],
            op: Op::Sum,
            rounding: Rounding::Stochastic,
            ..ReduceCopySpec::default()
        }
    }
}

impl Default for Quantize {
    /// bf16 transport, [`Quantize::DEFAULT_SEED`], base 0.
    fn default() -> Self {
        Quantize::bf16(Self::DEFAULT_SEED, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redjit_codegen::KernelSpec;

    #[test]
    fn the_quantizing_reduce_copy_is_a_valid_one_source_sr_kernel() {
        let spec = Quantize::default().reduce_copy_spec();
        spec.validate().unwrap();
        assert_eq!(spec.name(), "reduce_copy_u4_f32_bf16_a_T_sum_sr");
    }

    #[test]
    fn positions_do_not_overlap_between_ranks_and_the_partial() {
        let q = Quantize::bf16(7, 12);
        for n in [1usize, 4, 5, 1031] {
            for world in 2..=8u32 {
                let s = Quantize::stride(n);
                assert!(s >= n as u64 && s.is_multiple_of(4));
                for r in 0..world {
                    assert_eq!(q.input_base(r + 1, n) - q.input_base(r, n), s);
                }
                assert_eq!(
                    q.partial_base(world, n) + s,
                    q.base + Quantize::span(world, n)
                );
                assert!(q.fits(world, n));
            }
        }
        assert!(!Quantize::bf16(0, u64::MAX - 8).fits(2, 4));
        assert!(Quantize::bf16(0, u64::MAX - 12).fits(2, 4));
    }

    use crate::reference::{self, HostBuffer, Params, all_reduce_quantized};
    use redjit_codegen::AllReduceAlgo;

    const ALGOS: [AllReduceAlgo; 2] = [AllReduceAlgo::OneShot, AllReduceAlgo::TwoStage];

    /// A small deterministic generator for test inputs (splitmix64).
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn inputs_exact_in_bf16_give_the_exact_sum_for_every_seed() {
        // Integers in [-16, 16]: exact in bf16, and so is any sum of up to 8.
        for world in [2u32, 4, 8] {
            for n in [1usize, 7, 8, 1031] {
                let ins: Vec<Vec<f32>> = (0..world)
                    .map(|r| {
                        (0..n)
                            .map(|i| (mix(u64::from(r) << 32 | i as u64) % 33) as f32 - 16.0)
                            .collect()
                    })
                    .collect();
                let views: Vec<&[f32]> = ins.iter().map(|v| v.as_slice()).collect();
                let exact: Vec<f32> = (0..n)
                    .map(|i| ins.iter().map(|v| f64::from(v[i])).sum::<f64>() as f32)
                    .collect();
                for seed in [0u64, 1, 0xdead_beef] {
                    for algo in ALGOS {
                        let q = Quantize::bf16(seed, seed * 13);
                        let out = all_reduce_quantized(&views, algo, Op::Sum, None, q);
                        assert_eq!(out, exact, "R={world} n={n} seed={seed} {algo}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_ranks_quantization_is_the_reduce_copy_twin_from_its_input_base() {
        // Rank 0 of 2, the other rank all zeros: the one-shot output is rank 0's
        // quantized input, i.e. what the quantizing reduce_copy writes.
        let n = 1031;
        let x: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 * 1.37e-3).collect();
        let zeros = vec![0.0f32; n];
        let q = Quantize::bf16(42, 8);
        let out = all_reduce_quantized(&[&x, &zeros], AllReduceAlgo::OneShot, Op::Sum, None, q);
        let rc = reference::reduce_copy(
            &q.reduce_copy_spec(),
            &[&HostBuffer::F32(x.clone())],
            &[0],
            n,
            Params {
                op_arg: 0.0,
                sr_seed: q.seed,
                sr_base: q.input_base(0, n),
            },
        );
        let HostBuffer::BF16(staged) = &rc[0] else {
            panic!("a bf16 destination");
        };
        let staged: Vec<f32> = staged.iter().map(|h| h.to_f32()).collect();
        assert_eq!(out, staged);
        // Rank 1's position range differs: swapping the ranks changes the bits.
        let swapped = all_reduce_quantized(&[&zeros, &x], AllReduceAlgo::OneShot, Op::Sum, None, q);
        assert_ne!(out, swapped);
    }

    #[test]
    fn the_result_is_unbiased_over_seeds() {
        // Values off the bf16 grid; the mean over many seeds of every element
        // is within 4 standard errors of the exact (f64) reduction.
        let (world, n, draws) = (4usize, 12usize, 20_000u64);
        let ins: Vec<Vec<f32>> = (0..world)
            .map(|r| (0..n).map(|i| 0.3 + (r * n + i) as f32 * 0.0123).collect())
            .collect();
        let views: Vec<&[f32]> = ins.iter().map(|v| v.as_slice()).collect();
        for (op, scalar) in [
            (Op::Sum, None),
            (Op::Avg, Some(world as f32)),
            (Op::PreMulSum, Some(0.5)),
        ] {
            let scale = match op {
                Op::Avg => 1.0 / world as f64,
                Op::PreMulSum => 0.5,
                _ => 1.0,
            };
            for algo in ALGOS {
                let mut sum = vec![0.0f64; n];
                let mut sq = vec![0.0f64; n];
                for seed in 0..draws {
                    let out = all_reduce_quantized(
                        &views,
                        algo,
                        op,
                        scalar,
                        Quantize::bf16(mix(seed), 0),
                    );
                    for i in 0..n {
                        sum[i] += f64::from(out[i]);
                        sq[i] += f64::from(out[i]).powi(2);
                    }
                }
                for i in 0..n {
                    let exact: f64 = ins.iter().map(|v| f64::from(v[i])).sum::<f64>() * scale;
                    let mean = sum[i] / draws as f64;
                    let var = (sq[i] / draws as f64 - mean * mean).max(0.0);
                    let se = (var / draws as f64).sqrt();
                    assert!(se > 0.0, "element {i} is not rounded at random");
                    assert!(
                        (mean - exact).abs() <= 4.0 * se,
                        "{op} {algo} element {i}: mean {mean} exact {exact} se {se}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_two_stage_partial_is_rounded_again_only_on_whole_packs() {
        // n = 11: elements 0..8 are one bf16 pack (rounded twice), 8..11 the tail.
        let ins: Vec<Vec<f32>> = (0..2)
            .map(|r| (0..11).map(|i| 1.0 + (r * 11 + i) as f32 * 1e-3).collect())
            .collect();
        let views: Vec<&[f32]> = ins.iter().map(|v| v.as_slice()).collect();
        let q = Quantize::bf16(3, 0);
        let one = all_reduce_quantized(&views, AllReduceAlgo::OneShot, Op::Sum, None, q);
        let two = all_reduce_quantized(&views, AllReduceAlgo::TwoStage, Op::Sum, None, q);
        assert_eq!(one[8..], two[8..]);
        for i in 0..8 {
            // The partial is a bf16 value; the one-shot sum of two bf16 values
            // near 2 generally is not.
            assert_eq!(two[i].to_bits() & 0xffff, 0, "{i}");
            assert_eq!(
                two[i],
                reference::bf16_sr(
                    one[i],
                    crate::philox::sr_bits(3, q.partial_base(2, 11), i as u64)
                )
                .to_f32()
            );
        }
    }
}
