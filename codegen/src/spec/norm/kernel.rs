//! `NormSpec` as a kernel: validation (the one place a configuration is
//! accepted or rejected), its name and parsing, and the template's context.

use super::*;
use crate::spec::NameParse;

impl NormSpec {
    /// An FP8 output's rules: an e4m3 output takes a scale and the other way
    /// round, on a layer or RMS norm whose row one block or lane group holds.
    fn validate_fp8(&self) -> Result<(), SpecError> {
        let Some(q) = self.fp8 else {
            if self.output == DType::E4M3 {
                return Err(SpecError::invalid(
                    "output",
                    self.output,
                    format!(
                        "a norm kernel's output must be one of: {}, or e4m3 with its scaling in the name: _qd (each row's own scale) or _qs (one given scale)",
                        DType::store_types()
                    ),
                ));
            }
            return Ok(());
        };
        let suffix = format!("_{}", q.suffix());
        if self.output != DType::E4M3 {
            return Err(SpecError::invalid(
                "fp8",
                suffix,
                format!(
                    "FP8 scaling needs an e4m3 output (this kernel writes {})",
                    self.output
                ),
            ));
        }
        if self.op.info().softmax {
            return Err(SpecError::invalid(
                "fp8",
                suffix,
                format!("{} has no FP8 output (layernorm and rmsnorm do)", self.op),
            ));
        }
        if self.general {
            return Err(SpecError::invalid(
                "fp8",
                suffix,
                "an FP8 output takes whole packs: cols and ld multiples of 4 and every buffer aligned to 4 elements (it has no general twin, _g)",
            ));
        }
        if self.packs > FP8_MAX_PACKS {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!("a thread of an FP8-output kernel holds at most {FP8_MAX_PACKS} packs"),
            ));
        }
        if !matches!(self.layout, NormLayout::Warp | NormLayout::Block) {
            return Err(SpecError::invalid(
                "fp8",
                suffix,
                format!(
                    "an FP8 output scales a row held in one block or lane group: the warp or block layout (this is the {} layout)",
                    self.layout
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn functor(&self) -> String {
        match self.op {
            NormOp::Softmax | NormOp::LogSoftmax => format!(
                "rj_norm_softmax<{}, {}>",
                self.algo == Some(SoftmaxAlgo::Online),
                self.op == NormOp::LogSoftmax
            ),
            NormOp::LayerNorm | NormOp::RmsNorm => {
                // A prefetching kernel may read weight and bias from its
                // staged slots; a layer norm may exchange f64 sums.
                let f = self.op.info().functor;
                let cols = |staged| {
                    if staged {
                        "rj_cols_staged"
                    } else {
                        "rj_cols_global"
                    }
                };
                let cols = if self.held_cols() > 0 {
                    "Held"
                } else {
                    cols(self.staged_cols())
                };
                match (cols, self.f64_sums()) {
                    ("rj_cols_global", false) => format!("{f}<T>"),
                    (cols, false) => format!("{f}<T, {cols}>"),
                    (cols, true) => format!("{f}<T, {cols}, true>"),
                }
            }
        }
    }

    fn context(&self) -> NormContext {
        NormContext {
            name: self.name(),
            op: self.op.slug(),
            softmax: self.op.info().softmax,
            algo: self.algo.map_or("", |a| a.slug()),
            residual: self.residual,
            functor: self.functor(),
            input: self.input.slug(),
            output: self.output.slug(),
            out_type: match self.fp8 {
                Some(_) => "rj_dtype_e4m3_sat".into(),
                None => format!("rj_dtype_{}", self.output.slug()),
            },
            fp8: self.fp8.map_or("", |q| q.suffix()),
            // The input type's rounding policy: the residual sum is rounded to it.
            input_round: self.input.info().reduce_accum.unwrap_or("rj_acc_f32"),
            layout: self.layout.slug(),
            threads: self.threads(),
            min_blocks: self.min_blocks(),
            lanes: self.lanes,
            packs: self.packs,
            general: self.general,
            partial_bytes: self.partial_bytes(),
            fetch_ahead: self.fetch_ahead(),
            fetch_early: self.fetch_early(),
            fetch_wide: self.fetch_wide(),
            two_pass: self.two_pass(),
            flagged: self.flagged_states(),
            second_pass: self.second_pass(),
            split_asks_early: self.split_asks_early(),
            ticket_beside_epoch: self.ticket_beside_epoch(),
            one_wave: self.one_wave(),
            ticket_ahead: self.ticket_ahead(),
            sum_pair: self.sum_pair(),
            prefetch: self.prefetch,
            staged_cols: self.staged_cols(),
            row_shift: self.row_shift(),
            paired: self.paired_packs(),
            raw_rows: self.raw_rows(),
            grid: self.row_grid(),
            balanced: self.balances(),
            exact: self.exact,
            cluster: self.cluster.unwrap_or(0),
            stages_next: self.prefetch
                && (self.layout == NormLayout::Block || self.cluster.is_some()),
            stores_each_pack: self.stores_each_pack(),
            gated_stores: self.exact && self.layout == NormLayout::Warp,
            held: self.held_cols(),
            row_load: self.row_load(),
        }
    }
}

/// What the `norm.cu` template is rendered from.
#[derive(Serialize)]
struct NormContext {
    name: String,
    op: &'static str,
    softmax: bool,
    algo: &'static str,
    residual: bool,
    functor: String,
    input: &'static str,
    output: &'static str,
    /// The output's device type: the dtype's, or the saturating e4m3 store.
    out_type: String,
    /// FP8 output's scaling: "qd" (per row), "qs" (given), "" (none).
    fp8: &'static str,
    input_round: &'static str,
    layout: &'static str,
    threads: u32,
    min_blocks: u32,
    lanes: u32,
    packs: u32,
    general: bool,
    partial_bytes: usize,
    fetch_ahead: u32,
    fetch_early: u32,
    fetch_wide: bool,
    two_pass: bool,
    /// Split rows whose states carry the launch's flag (all but a cluster's
    /// and the one-pass whole-pack kernels, which count arrivals).
    flagged: bool,
    /// Split rows that publish their states and finish them in a second pass
    /// (deferred `_p`, or two passes).
    second_pass: bool,
    /// A one-pass split row asks for its first slots as it publishes.
    split_asks_early: bool,
    /// A one-pass split row loads its epoch beside its first ticket.
    ticket_beside_epoch: bool,
    /// A one-pass split row of one wave takes its item from its block index.
    one_wave: bool,
    /// A two-pass split row takes its next ticket as it starts an item.
    ticket_ahead: bool,
    sum_pair: bool,
    prefetch: bool,
    staged_cols: bool,
    row_shift: bool,
    /// A thread's packs in adjacent pairs (`paired_packs`).
    paired: bool,
    /// The row held as raw 16-bit words (`raw_rows`).
    raw_rows: bool,
    /// Elements of the grid a general twin's chunks start on (`row_grid`).
    grid: u64,
    balanced: bool,
    exact: bool,
    /// Blocks of a cluster row, 0 for none.
    cluster: u32,
    /// A prefetching block that stages its next row (or chunk) as it reads
    /// this one: the block layout's, and a cluster row's.
    stages_next: bool,
    stores_each_pack: bool,
    /// An exact warp kernel: a group past the last row reads the last row
    /// (its packs have no bounds test) and stores nothing.
    gated_stores: bool,
    /// Packs of the weight and bias held in registers (`held_cols`), 0 for none.
    held: u32,
    row_load: &'static str,
}

fn list(values: &[u32]) -> String {
    values
        .iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl KernelSpec for NormSpec {
    fn family(&self) -> Family {
        Family::Norm
    }

    fn params(&self) -> Vec<Param> {
        // Ordered by first use: what every row's loads need comes first, in
        // the parameter bank's first 64-byte line. A warp waits on each line
        // of that bank it reads before its first load, one after the other.
        let mut p = vec![
            Param::ptr("x_ptr"),
            Param::ptr("w_ptr"),
            Param::ptr("out_ptr"),
            Param::u64("rows"),
            Param::u64("cols"),
            Param::u64("ld"),
            Param::f32("param"),
            Param::u32("splits"),
            Param::u32("span"),
        ];
        p.extend(
            [
                "res_ptr",
                "res_out_ptr",
                "b_ptr",
                "mean_ptr",
                "rstd_ptr",
                "counters_ptr",
                "partials_ptr",
            ]
            .into_iter()
            .map(Param::ptr),
        );
        if self.fp8.is_some() {
            p.push(Param::ptr("scale_ptr"));
        }
        p
    }

    fn validate(&self) -> Result<(), SpecError> {
        self.validate_fp8()?;
        for (field, d) in [("input", self.input), ("output", self.output)] {
            if field == "output" && self.fp8.is_some() {
                continue;
            }
            if !d.info().store {
                return Err(SpecError::invalid(
                    field,
                    d,
                    format!(
                        "a norm kernel's input and output must be one of: {} (types with loads and stores; {d} is a reduction input only)",
                        DType::store_types()
                    ),
                ));
            }
        }
        let softmax = self.op.info().softmax;
        match (softmax, self.algo) {
            (true, None) => {
                return Err(SpecError::invalid(
                    "algo",
                    "none",
                    format!(
                        "{} needs an algorithm: one of {}",
                        self.op,
                        SoftmaxAlgo::allowed()
                    ),
                ));
            }
            (false, Some(a)) => {
                return Err(SpecError::invalid(
                    "algo",
                    a,
                    format!("{} takes no softmax algorithm", self.op),
                ));
            }
            _ => {}
        }
        if softmax && self.residual {
            return Err(SpecError::invalid(
                "residual",
                "true",
                format!(
                    "{} has no fused residual add (layernorm and rmsnorm do)",
                    self.op
                ),
            ));
        }
        let lanes_ok = match self.layout {
            NormLayout::Warp => GROUP_LANES,
            NormLayout::Block | NormLayout::Split | NormLayout::Loop => BLOCK_THREADS,
        };
        if !lanes_ok.contains(&self.lanes) {
            return Err(SpecError::invalid(
                "lanes",
                self.lanes,
                format!(
                    "the {} layout takes {} threads per row",
                    self.layout,
                    list(lanes_ok)
                ),
            ));
        }
        if !PACKS.contains(&self.packs) {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!(
                    "a thread holds {} packs of 4 elements in registers",
                    list(PACKS)
                ),
            ));
        }
        if self.layout == NormLayout::Warp && self.packs > WARP_MAX_PACKS {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!("a lane of the warp layout holds at most {WARP_MAX_PACKS} packs"),
            ));
        }
        if let Some(b) = self.bound
            && (b == 0 || b * self.threads() > MAX_THREADS_PER_SM)
        {
            return Err(SpecError::invalid(
                "bound",
                b,
                format!(
                    "a launch bound is 1 to {} blocks of {} threads per SM",
                    MAX_THREADS_PER_SM / self.threads(),
                    self.threads()
                ),
            ));
        }
        if self.algo == Some(SoftmaxAlgo::Safe) {
            let why = match self.layout {
                NormLayout::Split => {
                    Some("the split layout exchanges one state per row across blocks")
                }
                NormLayout::Loop => {
                    Some("the loop layout reduces a row once, between its two passes")
                }
                NormLayout::Warp | NormLayout::Block => None,
            };
            if let Some(why) = why {
                return Err(SpecError::invalid(
                    "algo",
                    "safe",
                    format!("{why}: use the online softmax"),
                ));
            }
        }
        if self.layout == NormLayout::Loop && self.packs > GENERAL_MAX_PACKS {
            return Err(SpecError::invalid(
                "packs",
                self.packs,
                format!(
                    "a loop's thread holds at most {GENERAL_MAX_PACKS} packs of a chunk (its general twin's)"
                ),
            ));
        }
        if let Some(n) = self.cluster {
            if self.layout != NormLayout::Split {
                return Err(SpecError::invalid(
                    "cluster",
                    n,
                    format!(
                        "only the split layout spreads a row over a cluster of blocks (this is the {} layout)",
                        self.layout
                    ),
                ));
            }
            if !(2..=MAX_CLUSTER).contains(&n) {
                return Err(SpecError::invalid(
                    "cluster",
                    n,
                    format!(
                        "a cluster row is 2 to {MAX_CLUSTER} blocks (the portable cluster size)"
                    ),
                ));
            }
            if self.packs > GENERAL_MAX_PACKS {
                return Err(SpecError::invalid(
                    "packs",
                    self.packs,
                    format!(
                        "a cluster row's thread holds at most {GENERAL_MAX_PACKS} packs (its general twin's)"
                    ),
                ));
            }
            if self.exact {
                return Err(SpecError::invalid(
                    "exact",
                    "true",
                    "a cluster row (`_c<n>`) cuts its rows in equal parts: it has no exact form",
                ));
            }
        }
        // `_x` is a form of a whole-pack kernel, `_p` of the block or split layout's;
        // `what` says what the form does.
        let whole_only = |field: &'static str, layouts: &str, what: &str| {
            SpecError::invalid(
                field,
                "true",
                format!(
                    "only the {layouts} whole-pack kernel {what} (this is the {} layout{})",
                    self.layout,
                    if self.general { ", general twin" } else { "" }
                ),
            )
        };
        if self.exact && self.general {
            return Err(SpecError::invalid(
                "exact",
                "true",
                "a general twin (`_g`) takes rows of any length: only a whole-pack kernel has an exact-length form (`_x`)",
            ));
        }
        if self.prefetch {
            if matches!(self.layout, NormLayout::Warp | NormLayout::Loop) {
                return Err(whole_only(
                    "prefetch",
                    "block or split layout's",
                    "stages its next row or chunk",
                ));
            }
            if self.general && self.layout != NormLayout::Split {
                return Err(SpecError::invalid(
                    "prefetch",
                    "true",
                    "of the general twins only the split layout's stages its chunks (`_p_g`); the block layout's loads its rows directly",
                ));
            }
            if self.no_l1 {
                return Err(SpecError::invalid(
                    "no_l1",
                    "true",
                    "a prefetching block stages its rows with cp.async, which takes no L1-bypassing load form for 8-byte packs: ask for one or the other",
                ));
            }
            let bytes = self.stage_bytes();
            if bytes > MAX_STAGE_BYTES {
                return Err(SpecError::invalid(
                    "prefetch",
                    format!("{bytes} bytes of staged row"),
                    format!(
                        "a block stages at most {MAX_STAGE_BYTES} bytes of shared memory: ({} row(s) x {} stream(s) + {} vector(s)) x {} threads x {} packs x 4 {} elements",
                        self.staged_rows(),
                        self.streams(),
                        self.staged_vectors(),
                        self.lanes,
                        self.packs,
                        self.input
                    ),
                ));
            }
        }
        if self.pairs && !self.can_pair_packs() {
            return Err(SpecError::invalid(
                "pairs",
                true,
                "only a 16-bit (in and out) whole-pack block or warp kernel of an even number of packs, not prefetching (no `_p` or `_g`), takes its packs in pairs (`_v`), where some launch bound compiles it without a spill",
            ));
        }
        if self.raw && !self.can_hold_raw() {
            return Err(SpecError::invalid(
                "raw",
                true,
                "only a block kernel, 16-bit in and out, without held columns (`_h`), an FP8 output or staging (`_p`), and with the residual of 8 packs a thread or more, holds its row as raw words (`_r`)",
            ));
        }
        if let Some(h) = self.held {
            if !self.can_hold_cols() {
                return Err(SpecError::invalid(
                    "held",
                    h,
                    "only a deferred split kernel's whole-pack form (`_p`, no `_c<n>` or `_g`), a plain block kernel (no `_p` or `_g`) or a warp kernel (no `_g`) of layer or RMS norm holds its weight and bias in registers (`_h<n>`)",
                ));
            }
            if h > self.packs {
                return Err(SpecError::invalid(
                    "held",
                    h,
                    format!(
                        "a thread holds 0 to {} packs of the weight and bias (its packs a chunk)",
                        self.packs
                    ),
                ));
            }
        }
        Ok(())
    }

    fn name(&self) -> String {
        let mut s = format!("{}_{}", Family::Norm.slug(), self.op);
        if let Some(a) = self.algo {
            s += &format!("_{a}");
        }
        if self.residual {
            s += "_res";
        }
        format!(
            "{s}_{}_{}_{}{}x{}{}{}{}{}{}{}{}{}{}{}",
            self.input,
            self.output,
            self.layout.info().letter,
            self.lanes,
            self.packs,
            self.bound.map_or(String::new(), |b| format!("_o{b}")),
            self.cluster.map_or(String::new(), |n| format!("_c{n}")),
            if self.prefetch { "_p" } else { "" },
            if self.no_l1 { "_n" } else { "" },
            if self.exact { "_x" } else { "" },
            if self.pairs { "_v" } else { "" },
            if self.raw { "_r" } else { "" },
            if self.general { "_g" } else { "" },
            self.held.map_or(String::new(), |h| format!("_h{h}")),
            self.fp8
                .map_or(String::new(), |q| format!("_{}", q.suffix()))
        )
    }

    fn min_arch(&self) -> Arch {
        // max.NaN and the 16-bit cvt are sm_80+; acquire loads and nanosleep sm_70+.
        // A cluster row's barrier and distributed shared memory are sm_90+.
        [
            if self.cluster.is_some() {
                Arch::SM90
            } else {
                Arch::SM80
            },
            self.input.info().min_arch,
            self.output.info().min_arch,
        ]
        .into_iter()
        .max()
        .unwrap_or(Arch::SM80)
    }

    fn preludes(&self) -> Vec<&'static str> {
        let mut p = Family::Norm.info().preludes.to_vec();
        if self.fp8.is_some() {
            p.push("prelude/norm_fp8.cuh");
        }
        p
    }

    fn render_body(&self) -> Result<String, SpecError> {
        crate::spec::render_body(self, &self.context())
    }
}

impl FromStr for NormSpec {
    type Err = SpecError;

    /// Parses a kernel name, e.g. `norm_softmax_online_bf16_bf16_w32x4` or
    /// `norm_rmsnorm_res_f16_f16_b256x2`, and validates it.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let (name, rest) = NameParse::of(s, Family::Norm)?;
        let mut parts: Vec<&str> = rest.split('_').collect();
        let fp8 = [Fp8Scale::PerRow, Fp8Scale::Given]
            .into_iter()
            .find(|q| parts.last() == Some(&q.suffix()));
        if fp8.is_some() {
            parts.pop();
        }
        let mut held = None;
        if let Some(h) = parts.last().and_then(|p| p.strip_prefix('h')) {
            held = Some(h.parse::<u32>().map_err(|_| name.bad())?);
            parts.pop();
        }
        // The flag suffixes, last first: `_g`, `_r`, `_v`, `_x`, `_n`, `_p`.
        let mut suffix = |flag: &str| {
            let present = parts.last() == Some(&flag);
            if present {
                parts.pop();
            }
            present
        };
        let general = suffix("g");
        let raw = suffix("r");
        let pairs = suffix("v");
        let exact = suffix("x");
        let no_l1 = suffix("n");
        let prefetch = suffix("p");
        let mut cluster = None;
        if let Some(n) = parts.last().and_then(|p| p.strip_prefix('c')) {
            cluster = Some(n.parse::<u32>().map_err(|_| name.bad())?);
            parts.pop();
        }
        let mut bound = None;
        if let Some(b) = parts.last().and_then(|p| p.strip_prefix('o')) {
            bound = Some(b.parse::<u32>().map_err(|_| name.bad())?);
            parts.pop();
        }
        if parts.len() < 4 {
            return Err(name.bad());
        }
        let layout_part = parts.pop().ok_or_else(|| name.bad())?;
        let output: DType = parts.pop().ok_or_else(|| name.bad())?.parse()?;
        let input: DType = parts.pop().ok_or_else(|| name.bad())?.parse()?;
        let op: NormOp = parts.first().ok_or_else(|| name.bad())?.parse()?;
        let mut algo = None;
        let mut residual = false;
        for p in &parts[1..] {
            if *p == "res" && !residual {
                residual = true;
            } else if algo.is_none() && !residual {
                algo = Some(p.parse::<SoftmaxAlgo>()?);
            } else {
                return Err(name.bad());
            }
        }
        let mut chars = layout_part.chars();
        let layout = chars
            .next()
            .and_then(NormLayout::from_letter)
            .ok_or_else(|| name.bad())?;
        let (lanes, packs) = chars
            .as_str()
            .split_once('x')
            .and_then(|(l, p)| Some((l.parse::<u32>().ok()?, p.parse::<u32>().ok()?)))
            .ok_or_else(|| name.bad())?;
        let spec = NormSpec {
            op,
            algo,
            residual,
            input,
            output,
            layout,
            lanes,
            packs,
            general,
            bound,
            prefetch,
            no_l1,
            exact,
            cluster,
            held,
            pairs,
            raw,
            fp8,
        };
        spec.validate()?;
        name.canonical(&spec)?;
        Ok(spec)
    }
}
