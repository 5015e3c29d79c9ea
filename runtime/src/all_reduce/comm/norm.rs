//! The fused all-reduce + residual + RMS norm call (issue 60): what
//! tensor-parallel inference runs after every attention and MLP block, in one
//! kernel per rank (`templates/all_reduce_norm.cu`).

use redjit_codegen::spec::all_reduce::norm::{ArNorm, MAX_PACKS, MAX_THREADS};
use redjit_codegen::spec::norm::Fp8Scale;

use super::*;
use crate::extent::Extent;
use crate::launch_args::CheckedArgs;

/// One fused call's buffers, one entry per local rank in rank order (as
/// [`Communicator::all_reduce`]'s inputs and outputs).
pub struct AddRmsNorm<'c, 'b> {
    /// Each rank's partial rows: rows x `cols`, row-major and contiguous,
    /// f32, bf16 or f16 (the same on every rank). Any alignment when the call
    /// is eager (staged); 16-byte aligned when captured (read in place).
    pub x: &'c [&'b dyn KernelInput],
    /// Each rank's residual (x's type and length, 16-byte aligned): read,
    /// then overwritten with `h = allreduce(x) + residual`, rounded to x's
    /// type. Equal residuals on every rank give equal bits everywhere.
    pub residual: &'c mut [&'b mut dyn KernelOutput],
    /// Each rank's weight: `cols` elements of x's type, 16-byte aligned.
    pub weight: &'c [&'b dyn KernelInput],
    /// Each rank's `y = h * rstd * weight`, `rstd = 1 / sqrt(mean(h^2) +
    /// eps)`: rows x `cols` of x's type, or e4m3 with `scale`; 16-byte
    /// aligned, apart from x and the residual.
    pub out: &'c mut [&'b mut dyn KernelOutput],
    /// FP8 (e4m3) output: how y is scaled (x bf16 or f16).
    pub scale: Option<ArFp8Scales<'c, 'b>>,
    /// Elements of a row: a whole number of 16-byte packs.
    pub cols: usize,
    /// Added to the mean square.
    pub eps: f32,
    /// The kernel's layout (one of [`ArNorm::candidates`] for the rows; its
    /// `fp8` is taken from `scale`; a row in a cluster of blocks is the LL
    /// kernel's only); `None`: [`ArNorm::for_call`]'s for the rows and the
    /// kernel.
    pub layout: Option<ArNorm>,
    /// The transport: [`AllReduceAlgo::PushLl`] (every rank's x read in
    /// place, 16-byte aligned, at most `CommOptions::ll_bytes`, sent as
    /// flagged lines; no barrier), [`AllReduceAlgo::Push`] (x read in place,
    /// 16-byte aligned, at most `CommOptions::push_bytes`, stored into the
    /// peers' buffers with a flag a row; no barrier),
    /// [`AllReduceAlgo::OneShot`] (x staged, or read in place through a
    /// table slot when captured; two barriers) or [`AllReduceAlgo::TwoStage`]
    /// (x read as one-shot's; rank r sums slice r of the rows into its
    /// scratch, then every rank reads each row's sum from its owner; two
    /// barriers). `None`: LL where the choice table picks it for the plain
    /// all-reduce of these bytes, else push up to the table's
    /// `fused_push_max`, where the kernel takes the call (x's alignment and
    /// size, the layout's registers); else two-stage where the table picks
    /// it for the plain all-reduce; else one-shot.
    pub algo: Option<AllReduceAlgo>,
    /// Test hook: this rank's kernel is not launched (the others must time out).
    #[doc(hidden)]
    pub skip_rank: Option<u32>,
}

/// How the fused call's FP8 output is scaled, one buffer per local rank.
pub enum ArFp8Scales<'c, 'b> {
    /// Receives each row's scale, max |y| / 448 but at least 1 / (448 x
    /// 512) (rows f32): the same on every rank.
    PerRow(&'c mut [&'b mut dyn KernelOutput]),
    /// The one scale every row is divided by (1 f32, read on the device).
    Given(&'c [&'b dyn KernelInput]),
}

impl ArFp8Scales<'_, '_> {
    fn kind(&self) -> Fp8Scale {
        match self {
            ArFp8Scales::PerRow(_) => Fp8Scale::PerRow,
            ArFp8Scales::Given(_) => Fp8Scale::Given,
        }
    }
}

impl Communicator {
    /// On every rank r: `residual[r] = allreduce(x) + residual[r]` (in place;
    /// the sum in rank order in f32, rounded to x's type as
    /// [`Communicator::all_reduce`] writes it, then the add rounded as the
    /// norm family's fused residual), and `out[r] = rms_norm(residual[r]) *
    /// weight[r]`, in x's type or e4m3 (see [`AddRmsNorm`]). One kernel a
    /// rank, each block owning whole rows (or, on the LL kernel, each row a
    /// thread-block cluster's: [`ArNorm::for_call`]): the one-shot or
    /// two-stage all-reduce's barriers, the push kernel's row flags, or the
    /// LL kernel's flagged lines ([`AddRmsNorm::algo`]).
    /// Graph-capturable as the all-reduce is. A call of 0 rows does nothing
    /// (after its checks).
    pub fn all_reduce_add_rms_norm(&self, a: AddRmsNorm<'_, '_>) -> Result<()> {
        let issue = self.start_issue()?;
        self.check_peer_access()?;
        let ranks = self.ranks.len();
        let AddRmsNorm {
            x,
            residual,
            weight,
            out,
            mut scale,
            cols,
            eps,
            layout,
            algo,
            skip_rank,
        } = a;
        check_skip_rank(skip_rank, self.world())?;
        let counts = [
            ("weights", weight.len()),
            ("outputs", out.len()),
            (
                "scale buffers",
                match &scale {
                    Some(ArFp8Scales::PerRow(s)) => s.len(),
                    Some(ArFp8Scales::Given(s)) => s.len(),
                    None => ranks,
                },
            ),
        ];
        if let Some((what, n)) = counts.iter().find(|(_, n)| *n != ranks) {
            return Err(comm_err(
                "rank count",
                format!("{n} {what} for {ranks} ranks: one per rank this process drives"),
            ));
        }
        // x and the residual: the all-reduce's input and output rules.
        let ins = CallInputs::new(x, &self.ranks);
        let (res, dtype, n) = self.check_outputs(x, residual, Call::sum(AllReduceAlgo::OneShot))?;
        let fp8 = scale.as_ref().map(|s| s.kind());
        let norm = self.fused_layout(dtype, n, cols, fp8, layout)?;
        // fused_layout refused cols = 0, and took only a row its registers hold.
        let rows = n / cols;
        if u32::try_from(rows).is_err() {
            return Err(comm_err(
                "rows",
                format!("{rows}: the fused kernel takes at most 2^32 - 1 rows"),
            ));
        }
        let x_bytes = n * dtype.info().bytes as usize;
        let algo = match algo {
            Some(a) => a,
            None => {
                // LL where the choice table sends the plain all-reduce of
                // these bytes to its LL kernel and that takes the call (x's
                // alignment and size, the layout's registers); else push up
                // to the table's fused_push_max; else two-stage where the
                // table sends the plain all-reduce to it; else one-shot.
                let aligned = ins
                    .addresses()
                    .iter()
                    .all(|a| a.is_multiple_of(u64::from(PACK_BYTES)));
                let plain = self.algos.choose(self.world(), x_bytes)?.algo;
                // A layout of rows in clusters is the LL kernel's.
                let wants_ll = norm.cluster > 1 || plain == AllReduceAlgo::PushLl;
                if wants_ll
                    && aligned
                    && x_bytes as u64 <= self.ll_max
                    && norm.fits_ll(self.world(), dtype)
                {
                    AllReduceAlgo::PushLl
                } else if self.algos.fused_push(self.world(), x_bytes)
                    && aligned
                    && x_bytes as u64 <= self.push_window
                {
                    AllReduceAlgo::Push
                } else if plain == AllReduceAlgo::TwoStage {
                    AllReduceAlgo::TwoStage
                } else {
                    AllReduceAlgo::OneShot
                }
            }
        };
        // Untold, the LL kernel's rows may each take a cluster of blocks, and
        // the two-stage kernel's threads two packs.
        let norm = match (layout, algo) {
            (None, AllReduceAlgo::PushLl | AllReduceAlgo::TwoStage) => {
                ArNorm::for_call(self.world(), dtype, (rows, cols), fp8, algo).unwrap_or(norm)
            }
            _ => norm,
        };
        let spec = AllReduceSpec {
            norm: Some(norm),
            ..self.spec_of(dtype, Call::sum(algo), None)
        };
        let kernel = self.kernel(&spec)?;
        let out_dtype = if norm.fp8.is_some() {
            DType::E4M3
        } else {
            dtype
        };
        let extent = |address: u64, dtype: DType| Extent {
            address,
            bytes: (n * dtype.info().bytes as usize) as u64,
        };
        let mut guards = Vec::new();
        let mut weights = Vec::with_capacity(ranks);
        let mut outs = Vec::with_capacity(ranks);
        let mut scales = Vec::with_capacity(ranks);
        for (i, rank) in self.ranks.iter().enumerate() {
            let (w, g) = weight[i].read_address(&rank.stream);
            guards.push(g);
            check_buffer(
                i,
                "weight",
                (weight[i].dtype(), weight[i].len()),
                (dtype, cols),
                w,
            )?;
            weights.push(w);
        }
        for (i, (o, rank)) in out.iter_mut().zip(&self.ranks).enumerate() {
            let (dt, len) = (o.dtype(), o.len());
            let (addr, g) = o.write_address(&rank.stream);
            guards.push(g);
            check_buffer(i, "output", (dt, len), (out_dtype, n), addr)?;
            let r = res.addresses[i];
            if n > 0 && extent(addr, out_dtype).overlaps(&extent(r, dtype)) {
                return Err(comm_err(
                    "output",
                    format!(
                        "local rank {i}'s output {addr:#x} overlaps its residual {r:#x}: y and h are both written"
                    ),
                ));
            }
            outs.push(addr);
        }
        match &mut scale {
            Some(ArFp8Scales::PerRow(s)) => {
                for (i, (b, rank)) in s.iter_mut().zip(&self.ranks).enumerate() {
                    let (dt, len) = (b.dtype(), b.len());
                    let (addr, g) = b.write_address(&rank.stream);
                    guards.push(g);
                    check_scale(i, "per-row scale", (dt, len), rows, addr)?;
                    scales.push(addr);
                }
            }
            Some(ArFp8Scales::Given(s)) => {
                for (i, (b, rank)) in s.iter().zip(&self.ranks).enumerate() {
                    let (addr, g) = b.read_address(&rank.stream);
                    guards.push(g);
                    check_scale(i, "given scale", (b.dtype(), b.len()), 1, addr)?;
                    scales.push(addr);
                }
            }
            None => scales.resize(ranks, 0),
        }
        if n == 0 {
            return Ok(());
        }
        // The kernels' buffers: for the in-place kernels two sets of world
        // regions of `window` bytes (the LL kernel's two lines a pack of
        // ll_max bytes; the push kernel's window of x and a flag a row); for
        // two-stage two sets of `window` bytes (a rank's slice of rows); none
        // for one-shot.
        let buffer = match algo {
            AllReduceAlgo::PushLl => Some((self.fused_ll_offset, 2 * self.ll_max)),
            AllReduceAlgo::Push => Some((self.fused_push_offset, self.fused_push_region)),
            AllReduceAlgo::TwoStage => Some((self.fused_slices_offset, self.fused_slices_set)),
            AllReduceAlgo::OneShot => None,
        }
        .map(|(offset, window)| {
            let at = |a: u64| if a == 0 { 0 } else { a + offset };
            (PtrTable(self.tables[2].0.map(at)), window)
        });
        if algo == AllReduceAlgo::TwoStage {
            // A set holds a rank's slice of ceil(rows / world) rows (set up
            // for max_bytes / world and one row of the widest layout).
            let slice = rows.div_ceil(self.world() as usize) * cols * dtype.info().bytes as usize;
            if slice as u64 > self.fused_slices_set {
                return Err(comm_err(
                    "rows",
                    format!(
                        "{rows} rows of {cols}: a rank's slice of {slice} bytes is more than the fused scratch's {} (CommOptions::max_bytes)",
                        self.fused_slices_set
                    ),
                ));
            }
        }
        let in_place = matches!(algo, AllReduceAlgo::PushLl | AllReduceAlgo::Push);
        if issue.capturing || in_place {
            // In place, this rank's (or a peer's) reads of x meet the writes of out.
            for (i, (&xa, &o)) in ins.addresses().iter().zip(&outs).enumerate() {
                if extent(o, out_dtype).overlaps(&extent(xa, dtype)) {
                    return Err(comm_err(
                        "output",
                        format!(
                            "local rank {i}'s output {o:#x} overlaps its input {xa:#x}, which is read in place"
                        ),
                    ));
                }
            }
        }
        let inputs_at = if in_place {
            // Each rank reads its own x in place and sends it (as LL lines,
            // or packs and a flag a row).
            let own = self.push_inputs(algo, &ins, x_bytes)?;
            self.fork.fan_out(self.stream(), self.rank_streams())?;
            InputsAt::InPlace(own)
        } else {
            InputsAt::Table(self.table_slot(&issue, &ins, n, dtype, None)?)
        };
        // A block a row, within what is resident: the one-shot and
        // two-stage kernels' barrier slots and the grid cap, or the in-place
        // kernels' LL grid (their blocks share one call count, so any of them
        // may send any line or row).
        let cap = match in_place {
            true => self.ll_blocks,
            false => self.max_blocks.min(MAX_BLOCKS),
        };
        // Whole clusters (a row's blocks), within the cap and the share.
        let cluster = norm.cluster;
        let clusters = rows.min((cap / cluster) as usize) as u32;
        let blocks = clusters.min(kernel.share / cluster) * cluster;
        if blocks == 0 {
            return Err(comm_err(
                "layout",
                format!(
                    "{}: a row's cluster of {cluster} blocks is more than the {} blocks a rank's launch may have resident (CommOptions::ll_blocks, the GPU's share)",
                    norm.suffix(),
                    cap.min(kernel.share)
                ),
            ));
        }
        let timeout_ns = self.opts.timeout.as_nanos().min(u64::MAX as u128) as u64;
        // rows was checked to fit 32 bits where it was found; cols is at most
        // a layout's threads x packs x a pack's elements (fused_layout).
        let (rows32, cols32) = (rows as u32, cols as u32);
        for (i, (rank, func)) in self.ranks.iter().zip(&kernel.funcs).enumerate() {
            let r = rank.id as usize;
            if skip_rank == Some(r as u32) {
                continue;
            }
            let input = match inputs_at {
                InputsAt::InPlace(own) => own[i],
                InputsAt::Table(slot) => rank.in_tables.ptr() + u64::from(slot) * TABLE_BYTES,
            };
            let rank_u32 = r as u32;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (spec.threads(), 1, 1),
                shared_mem_bytes: 0,
            };
            let mut args = CheckedArgs::new(&rank.stream, func, &spec, &kernel.params);
            args.ptr(&input)
                .ptr(&res.addresses[i])
                .ptr(&weights[i])
                .ptr(&outs[i])
                .ptr(&scales[i])
                .ptr(&rank.error_ptr)
                .u32(&rows32)
                .u32(&cols32)
                .u64(&timeout_ns);
            if let Some((_, window)) = &buffer {
                args.u64(window);
            }
            // The kernel declares its world's entries of each table; the
            // driver copies that many from these 8-entry tables.
            args.f32(&eps).u32(&rank_u32).peer_table(&self.tables[1]);
            if let Some((table, _)) = &buffer {
                args.peer_table(table);
            }
            let mut args = args.ready()?;
            // SAFETY: the kernel was generated from `spec` and takes these
            // parameters in this order (CheckedArgs held them to its list):
            // the input table slot (live, 64 bytes; a captured slot is
            // written at end_capture, before any replay) whose entries hold
            // rows x cols elements (check_call), or for the in-place kernels
            // this rank's x (n elements, 16-byte aligned, at most ll_max or
            // the push window's bytes, whose rows' flags fit after it:
            // push_inputs); this rank's residual (n elements, 16-byte aligned:
            // check_outputs), weight (cols, aligned), output (n of out_dtype,
            // aligned, apart from the residual and a captured input), scale
            // buffer (rows or 1 f32, or unused without FP8) and error word;
            // the scalars; the signal table (and the in-place kernels'
            // buffers, two sets of world regions of `window` bytes each, or
            // the two-stage kernel's two sets of `window` bytes, which hold a
            // rank's slice of rows: checked above), of
            // which the kernel declares the world's entries (the driver
            // copies that many of the 8 pushed). Every
            // rank launches the same grid.
            unsafe { args.launch(cfg) }
                .during(|| format!("rank {r}: launching {}", spec.name()))?;
        }
        self.fork.fan_in(self.stream(), self.rank_streams())?;
        drop(guards);
        Ok(())
    }

    /// The fused kernel's layout for n elements in rows of `cols`: an error
    /// naming the value and the rule where no kernel holds them.
    fn fused_layout(
        &self,
        dtype: DType,
        n: usize,
        cols: usize,
        fp8: Option<Fp8Scale>,
        layout: Option<ArNorm>,
    ) -> Result<ArNorm> {
        let elts = (PACK_BYTES / dtype.info().bytes) as usize;
        if cols == 0 || !n.is_multiple_of(cols) {
            return Err(comm_err(
                "cols",
                format!("{cols}: the {n} elements of x must be whole rows of cols > 0"),
            ));
        }
        if let Some(l) = layout {
            if !l.holds(dtype, cols) {
                return Err(comm_err(
                    "layout",
                    format!(
                        "{}: {} threads x {} packs of {elts} {dtype} elements do not hold rows of {cols}",
                        l.suffix(),
                        l.threads,
                        l.packs
                    ),
                ));
            }
            // The spec's validation (at the kernel's load) checks the rest.
            return Ok(ArNorm { fp8, ..l });
        }
        ArNorm::for_row(self.world(), dtype, cols, fp8).ok_or_else(|| {
            comm_err(
                "cols",
                format!(
                    "{cols} {dtype} elements a row: the fused kernel takes whole 16-byte packs ({elts} elements) and at most {MAX_PACKS} packs of each of {} ranks a thread of {MAX_THREADS} within its registers",
                    self.world()
                ),
            )
        })
    }
}

/// A per-rank buffer of `want` (dtype, at least len elements), 16-byte aligned.
fn check_buffer(
    rank: usize,
    what: &str,
    got: (DType, usize),
    want: (DType, usize),
    address: u64,
) -> Result<()> {
    if got.0 != want.0 || got.1 < want.1 {
        return Err(comm_err(
            what,
            format!(
                "local rank {rank}'s {what} is {} x {}: the call needs {} x {} or more",
                got.0, got.1, want.0, want.1
            ),
        ));
    }
    if want.1 > 0 && !address.is_multiple_of(u64::from(PACK_BYTES)) {
        return Err(comm_err(
            "alignment",
            format!("local rank {rank}'s {what} starts at {address:#x}: it must start on 16 bytes"),
        ));
    }
    Ok(())
}

/// A scale buffer: at least `len` f32 (4-byte aligned, as any f32 buffer).
fn check_scale(
    rank: usize,
    what: &str,
    got: (DType, usize),
    len: usize,
    address: u64,
) -> Result<()> {
    if got.0 != DType::F32 || got.1 < len {
        return Err(comm_err(
            "scale",
            format!(
                "local rank {rank}'s {what} buffer is {} x {}: it takes {len} f32 or more",
                got.0, got.1
            ),
        ));
    }
    if !address.is_multiple_of(4) {
        return Err(comm_err(
            "alignment",
            format!("local rank {rank}'s {what} buffer starts at {address:#x}: f32 on 4 bytes"),
        ));
    }
    Ok(())
}
