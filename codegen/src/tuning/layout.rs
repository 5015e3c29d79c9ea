//! Laying a norm out by a tuning table: the layout (and form) a table row or
//! the heuristic ladder gives an operation for a row length, and the kernels
//! a launcher hands the calls one layout does not take. Here, not in
//! `spec::norm`, so that specs know nothing of tables and tables key on specs.

use super::{Form, Tuning, TypePair};
use crate::registry::{NormLayout, NormOp, SoftmaxAlgo};
use crate::spec::KernelSpec;
use crate::spec::norm::{FP8_MAX_PACKS, MAX_CLUSTER, MAX_COLS, NormSpec};

impl NormSpec {
    /// The same kernel for rows of any length up to its capacity: without
    /// `exact` (the launcher takes it for the rows an exact kernel does not
    /// fit) and in packs (for the rows off a paired kernel's grid of pairs),
    /// its columns held by the rule (`held_cols`).
    pub fn ragged_twin(&self) -> NormSpec {
        let ragged = self.without_row_forms();
        // An exact-only layout (its ragged form spills): other rows take the
        // ladder's layout, as for a row a pack past the entry's first length.
        if !(self.exact && self.prefetch) {
            return ragged;
        }
        let exact_only = Tuning::builtin().norm_rules().iter().find(|m| {
            let s = m.strategy;
            s.form == Form::PrefetchExactOnly
                && m.serves(self, TypePair::of_spec(self))
                && (s.layout, s.lanes, s.packs) == (self.layout, self.lanes, self.packs)
        });
        match exact_only {
            Some(m) => ragged.for_cols(m.cols.start() + 4),
            None => ragged,
        }
    }

    /// The same operation laid out for rows of `cols` by the built-in (H100)
    /// table ([`Tuning::builtin`]), else the heuristic ladder. A launcher on a
    /// known device takes [`NormSpec::for_shape`] with the device's table.
    pub fn for_cols(&self, cols: u64) -> NormSpec {
        self.laid_out(None, cols, true, Tuning::builtin())
    }

    /// The same operation laid out for `rows` (`None`: unknown) rows of
    /// `cols` by the first row of `tuning` that serves it, else the heuristic
    /// ladder (the smallest register footprint that holds the row).
    pub fn for_shape(&self, rows: Option<u64>, cols: u64, tuning: &Tuning) -> NormSpec {
        self.laid_out(rows, cols, true, tuning)
    }

    /// The kernel the ladder gives this kernel's op and types without
    /// clusters, for rows up to this kernel's capacity: what a cluster row
    /// (`_c<n>`) hands the calls it does not take (rows off the pack grid,
    /// and devices below sm_90). Other kernels are their own.
    pub fn unclustered(&self) -> NormSpec {
        match (self.cluster, self.capacity()) {
            (Some(_), Some(cap)) => NormSpec {
                cluster: None,
                ..self.clone()
            }
            .laid_out(None, cap, false, Tuning::builtin()),
            _ => self.clone(),
        }
    }

    /// The kernel this one hands its calls off the pack grid to (odd `cols`
    /// or `ld`, misaligned buffers), with its own twins, if any: a cluster
    /// row's `unclustered()`, and a loop row's long-row split kernel (the
    /// ladder's for `MAX_COLS`), whose staging twins ran faster there than
    /// the loop's general twin at 4096 rows of 33001 to 45001 (f32 layer
    /// norm, f32 -> bf16, bf16 layer norm + residual; bf16 RMS norm but at
    /// 36865). 16-bit layer norm keeps its loop twin, ahead of s256x8_o2_p_g
    /// at 4096x50257 (H100; commit 7eca7bb).
    pub fn off_grid_kernel(&self) -> Option<NormSpec> {
        let layer_16 =
            self.op == NormOp::LayerNorm && !self.residual && self.input.info().bytes < 4;
        match self.layout {
            _ if self.general => None,
            NormLayout::Split if self.cluster.is_some() => Some(self.unclustered()),
            NormLayout::Loop if !layer_16 => Some(
                self.laid_out(None, MAX_COLS, false, Tuning::builtin())
                    .ragged_twin(),
            ),
            _ => None,
        }
    }

    /// `for_shape`, with or without the table's cluster layouts.
    fn laid_out(&self, rows: Option<u64>, cols: u64, clusters: bool, tuning: &Tuning) -> NormSpec {
        let packs_for = |lanes: u64| {
            let p = cols.div_ceil(lanes * 4).next_power_of_two();
            p.clamp(1, 16) as u32
        };
        let rule = tuning.norm_rule(self, rows, cols, clusters);
        let measured = rule.map(|m| m.strategy);
        // An FP8 output laid out by a row of its own types (measured with
        // that output) takes the row as it is.
        let own_fp8 = rule.is_some_and(|m| m.types.is_fp8());
        let (layout, lanes, packs) = if let Some(m) = measured {
            (m.layout, m.lanes, m.packs)
        } else if cols <= 128 {
            // Up to 4 packs a lane and a group of lanes per row, several rows a
            // warp: at 262144 x 128 on the H100, 8 lanes x 4 packs beat a warp
            // of 1 pack for layer norm and the online softmax, and were level
            // with it for the other f32 row ops (commit 5ea69af).
            let packs = cols.div_ceil(4).next_power_of_two().clamp(1, 4);
            let lanes = cols.div_ceil(4 * packs).next_power_of_two().clamp(1, 32);
            (NormLayout::Warp, lanes as u32, packs as u32)
        } else if cols <= 1024 {
            (NormLayout::Warp, 32, packs_for(32))
        } else if cols <= 4096 {
            (NormLayout::Block, 256, packs_for(256))
        } else if cols > 8192
            && cols <= 16384
            && self.op == NormOp::RmsNorm
            && !self.residual
            && self.input.info().bytes < 4
        {
            // 16-bit RMS norm: 256 threads of 16 packs, well ahead of 512 x 8
            // (bf16 8192x16384, H100; commit c71bf85);
            // softmax and layer norm measured slower so.
            // Rows of exactly 16384 take 512 x 8's exact kernel at 2 blocks
            // an SM (the H100 table).
            (NormLayout::Block, 256, packs_for(256))
        } else if cols <= 32768 && !(self.op == NormOp::LayerNorm && self.input != self.output) {
            // 16 packs at 16384 < cols: one block of 512 holds the row, as
            // Triton's one-row-per-program kernel does (8192 x 32768 f32 on the
            // H100, the table), where the split layout, waiting on the
            // row's other blocks, ran behind it.
            // Layer norm between two dtypes spilled 152-176 bytes there
            // (ptxas 13.0) and stays split.
            (NormLayout::Block, 512, packs_for(512))
        } else {
            (NormLayout::Split, 512, 8)
        };
        // An FP8 output scales a row one block holds: longer rows stay
        // refused by the block's capacity. A row's layout replaced so takes
        // the plain form, not its row's.
        let one_block = (NormLayout::Block, 512, packs_for(512).min(FP8_MAX_PACKS));
        let ((layout, lanes, packs), measured) = match layout {
            _ if self.fp8.is_none() || own_fp8 => ((layout, lanes, packs), measured),
            NormLayout::Split | NormLayout::Loop => (one_block, None),
            _ if packs > FP8_MAX_PACKS => (one_block, None),
            _ => ((layout, lanes, packs), measured),
        };
        let mut spec = NormSpec {
            layout,
            lanes,
            packs,
            prefetch: measured.is_some_and(|m| m.form.prefetches()),
            no_l1: measured.is_some_and(|m| m.form.no_l1()),
            exact: false,
            cluster: None,
            // An FP8 output's register budget holds the row and its scaling,
            // not held columns (f32 layer norm b512x4_x_h4_qd spilled 32
            // bytes, ptxas 13.0).
            held: measured.and_then(|m| m.held).filter(|_| self.fp8.is_none()),
            pairs: measured.is_some_and(|m| m.pairs),
            raw: measured.is_some_and(|m| m.raw),
            // A bound measured for the row's own kernel (not an FP8 output
            // laid out by its input type's row).
            bound: measured
                .and_then(|m| m.bound)
                .filter(|_| self.fp8.is_none() || own_fp8),
            ..self.clone()
        };
        // A cluster of the row's chunks.
        if measured.is_some_and(|m| m.form == Form::Cluster) {
            spec.cluster = Some(cols.div_ceil(spec.chunk()).clamp(2, MAX_CLUSTER.into()) as u32);
        }
        // Exact where measured, and only for rows that fill the layout. An
        // FP8 output's block takes its exact form: 3-6 points of copy ahead of
        // the plain one at 2048x4096, 512x8192 and 4096x8192 with the residual
        // (bf16 in, H200: benchmarks/h200/layouts-norm-fp8.json).
        let fp8_block = spec.fp8.is_some() && !own_fp8 && spec.layout == NormLayout::Block;
        spec.exact = (measured.is_some_and(|m| m.form.exact()) || fp8_block)
            && !spec.general
            && spec.fills_exactly(cols);
        // Pairs where measured and the kernel takes them: not an FP8 output's
        // (16-bit outputs only), nor a ragged form that spills in pairs.
        spec.pairs = spec.pairs && spec.can_pair_packs();
        // A raw row where measured and the kernel takes it (not an FP8
        // output's, nor a layout the block replaced).
        spec.raw = spec.raw && spec.can_hold_raw();
        // Safe softmax needs two exchanges across blocks; the split layout does one.
        if layout == NormLayout::Split && spec.algo == Some(SoftmaxAlgo::Safe) {
            spec.algo = Some(SoftmaxAlgo::Online);
        }
        // An FP8 output laid out by its input's row that its kernel cannot
        // take (a form or held columns of a layout the block replaced) takes
        // the ladder's.
        if spec.fp8.is_some() && measured.is_some() && spec.validate().is_err() {
            return self.laid_out(rows, cols, clusters, &Tuning::ladder());
        }
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::super::NormRule;
    use super::*;
    use crate::registry::DType;
    use crate::spec::KernelSpec;
    use crate::spec::norm::TypePair;

    #[test]
    fn measured_layouts_by_direction_and_clusters() {
        // (op, input, output, cols, the kernel's layout: its name past the types)
        let layout = |op, i, o, cols| {
            let s = NormSpec::with(op, i, o, cols);
            let types = format!("_{}_{}_", s.input, s.output);
            s.name().split_once(&types).map(|(_, l)| l.to_string())
        };
        let layer = (NormOp::LayerNorm, None, false);
        let soft = (NormOp::Softmax, Some(SoftmaxAlgo::Online), false);
        let (b, f) = (DType::BF16, DType::F32);
        for (op, i, o, cols, want) in [
            (layer, b, f, 12_288, "s256x8_c2_p"),
            (layer, f, b, 20_000, "s512x8_c2_p"),
            (layer, f, b, 16_384, "b512x8_x"),
            (layer, f, b, 16_380, "s256x8_c2_p"),
            (layer, b, f, 50_256, "s256x8_p"),
            (layer, b, f, 1 << 20, "s512x8_p"),
            (layer, f, b, 1 << 20, "s512x4_p"),
            (layer, f, b, 50_256, "l512x8"),
            (layer, f, b, 57_344, "s256x8_c7_p"),
            (layer, f, b, 57_340, "l512x8"),
            (layer, f, b, 65_536, "l512x8"),
            (soft, b, f, 50_256, "s256x8_p"),
            (soft, b, f, 1 << 20, "s512x8_p"),
            (soft, f, b, 50_256, "s512x4_p"),
            (soft, f, b, 1 << 20, "s512x8_p"),
            (layer, b, b, 36_864, "l512x4"),
            (layer, b, b, 45_000, "l512x4"),
            (layer, b, b, 49_152, "s512x8_p_x"),
            (layer, b, b, 50_256, "l512x4"),
            (layer, b, b, 57_345, "s512x8_p"),
            ((NormOp::RmsNorm, None, false), b, b, 40_000, "l512x4"),
            ((NormOp::RmsNorm, None, false), b, b, 45_000, "s512x16_p"),
            ((NormOp::LayerNorm, None, true), b, b, 33_000, "l512x4"),
            ((NormOp::LayerNorm, None, true), b, b, 36_864, "l512x4"),
            ((NormOp::LayerNorm, None, true), b, b, 49_152, "s512x8_p_x"),
            ((NormOp::LayerNorm, None, true), b, b, 57_344, "l512x4"),
            ((NormOp::LayerNorm, None, true), b, b, 57_348, "s512x8_p"),
            ((NormOp::LayerNorm, None, true), f, f, 33_000, "l512x8"),
            ((NormOp::LayerNorm, None, true), f, f, 36_864, "s512x4_p"),
            ((NormOp::RmsNorm, None, true), b, b, 33_000, "l512x4"),
            ((NormOp::RmsNorm, None, true), b, b, 36_864, "s512x8_p"),
            ((NormOp::RmsNorm, None, true), f, f, 36_864, "l512x8"),
            ((NormOp::RmsNorm, None, true), f, f, 50_256, "s512x4_p"),
            (soft, b, f, 32_768, "b512x16_x"),
            (layer, f, b, 128, "w16x2"),
            (layer, b, f, 4096, "b256x4_x"),
            (layer, b, f, 4000, "b256x4"),
            (layer, f, f, 36_864, "l512x8"),
            (layer, f, f, 40_000, "s512x4_p"),
            (layer, f, f, 50_256, "l512x8"),
            (layer, f, f, 57_344, "s512x4_p"),
            // Two 16-bit types: the ladder's rule.
            (layer, b, DType::F16, 50_256, "s512x8"),
        ] {
            assert_eq!(
                layout(op, i, o, cols).as_deref(),
                Some(want),
                "{op:?} {i} -> {o} at {cols}"
            );
        }
        let c: NormSpec = "norm_layernorm_bf16_bf16_s256x8_c7_p".parse().unwrap();
        assert_eq!(c.unclustered().name(), "norm_layernorm_bf16_bf16_l512x4");
        let c: NormSpec = "norm_layernorm_f32_bf16_s256x8_c7_p".parse().unwrap();
        assert_eq!(c.unclustered().name(), "norm_layernorm_f32_bf16_s512x4_p");
        let spec = |m: &NormRule, input, output| NormSpec {
            op: m.op,
            algo: m.algo,
            residual: m.residual,
            input,
            output,
            ..NormSpec::default()
        };
        let builtin = Tuning::builtin().norm_rules();
        for m in builtin.iter().filter(|m| m.strategy.form == Form::Cluster) {
            let (i, o) = match m.types {
                TypePair::Widening => (b, f),
                TypePair::Narrowing => (f, b),
                TypePair::Sixteen => (b, b),
                other => panic!("no cluster rows measured for {other:?}"),
            };
            for cols in [*m.cols.start(), *m.cols.end()] {
                let s = spec(m, i, o).for_cols(cols);
                assert!(s.cluster.is_some() && s.validate().is_ok(), "{}", s.name());
                assert!(s.capacity().unwrap() >= cols, "{} {cols}", s.name());
                assert!(s.unclustered().cluster.is_none(), "{}", s.name());
            }
        }
    }
}
