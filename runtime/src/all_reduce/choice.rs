//! Which kernel an all-reduce runs: one table from world size x message size
//! to one-shot, two-stage, or two-stage with `cp.async` double buffering. This
//! is the only place the choice is made; [`super::Communicator::choose`] reads
//! the communicator's table (`CommOptions::algos`).
//!
//! ```
//! use redjit_runtime::all_reduce::choice::{AlgoTable, Choice};
//! use redjit_runtime::AllReduceAlgo;
//! let t = AlgoTable::placeholder();
//! assert!(!t.measured); // the numbers below are not measured yet
//! assert_eq!(t.choose(8, 64 << 10)?, Choice::ONE_SHOT);
//! assert_eq!(t.choose(8, 64 << 20)?.algo, AllReduceAlgo::TwoStage);
//! // Overriding: any table, or one kernel for every call.
//! let forced = AlgoTable::always(Choice::TWO_STAGE);
//! assert_eq!(forced.choose(2, 16)?, Choice::TWO_STAGE);
//! # Ok::<(), redjit_runtime::Error>(())
//! ```
//!
//! Why these shapes. One-shot reads every peer's whole input (R-1 remote
//! reads of the message per rank) after one barrier; two-stage reads only its
//! 1/R slice from each peer and then gathers, so it moves ~2(R-1)/R of the
//! message but pays a second barrier. Small messages are latency-bound
//! (one-shot wins); large ones bandwidth-bound (two-stage wins, sooner for
//! larger R); `cp.async` keeps the next packs of every peer in flight while
//! the current ones are reduced, which pays off only once each block streams
//! enough data to hide the extra shared-memory round trip.
//!
//! **2 and 4 ranks are measured; 3 and 5 to 8 are not.** The 2-rank row and
//! its NCCL hand-over come from 2 x H200 (NVLink, 2026-11-26, BENCHMARKS.md,
//! s18 and s19): the LL push kernel up to 256 KB, the push kernel up to 8 MB
//! (16 MB for a copied input, which the push kernel reads in place), one-shot
//! above, and NCCL from 128 MB for a copied input. The 4-rank row from 4 x H200 (the same day; s20 for LL): LL push up to 32 KB, push up to 256 KB,
//! two-stage above, with `cp.async` from 4 MB; NCCL from 256 MB (16 MB for a
//! copied input). The other rows are the shape vLLM and
//! SGLang ship for NVLink machines (one-shot up to 512 KB at 3, 256 KB at 5 to
//! 8) and a guessed 8 MB for `cp.async`; the 8-GPU issue measures them
//! (`measured` stays false until every row is).
//!
//! Topology: the table assumes full peer access over NVLink. Ranks on one GPU
//! (the test placement) use it unchanged. Ranks joined only over PCIe, or
//! without peer access, belong to the NCCL backend ([`super::nccl`]) as a
//! communicator of its own.
//!
//! NCCL as the fallback: `nccl_min[w - 2]` is the smallest message (bytes per
//! rank) that world size `w` hands to NCCL instead of a kernel, for sizes
//! where redjit's kernels lose. [`AlgoTable::route`] takes it only when the
//! communicator has NCCL (built with `CommOptions::nccl` and the library
//! found); [`AlgoTable::choose`] never does. The placeholder has no NCCL
//! entries (vLLM hands over to NCCL above 8 MB; the two-GPU issue measures
//! where redjit's own kernels stop winning).
//!
//! ```
//! use redjit_runtime::all_reduce::choice::{AlgoTable, Choice, Route};
//! let mut t = AlgoTable::placeholder();
//! t.nccl_min[8 - 2] = Some(32 << 20);
//! assert_eq!(t.route(8, 64 << 20, true)?, Route::Nccl);
//! assert_eq!(t.route(8, 64 << 20, false)?, Route::Kernel(Choice::CP_ASYNC)); // no NCCL: a kernel
//! assert_eq!(t.route(8, 64 << 10, true)?, Route::Kernel(Choice::ONE_SHOT));
//! # Ok::<(), redjit_runtime::Error>(())
//! ```
//!
//! Override order: `REDJIT_AR_ALGO` (`oneshot`, `twostage`, `cpasync`, `push` or `pushll`) in
//! the environment forces one kernel, and `nccl` routes every size to NCCL
//! where the communicator has it ([`AlgoTable::with_env`]); otherwise
//! `CommOptions::algos`, which defaults to the placeholder.

#![warn(missing_docs)]

use redjit_codegen::AllReduceAlgo;

use crate::error::{Error, Result};

/// One kernel choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Choice {
    /// One-shot or two-stage.
    pub algo: AllReduceAlgo,
    /// Two-stage with `cp.async` double buffering.
    pub cp_async: bool,
}

impl Choice {
    /// One-shot.
    pub const ONE_SHOT: Choice = Choice {
        algo: AllReduceAlgo::OneShot,
        cp_async: false,
    };
    /// Two-stage.
    pub const TWO_STAGE: Choice = Choice {
        algo: AllReduceAlgo::TwoStage,
        cp_async: false,
    };
    /// Two-stage, `cp.async` double-buffered.
    pub const CP_ASYNC: Choice = Choice {
        algo: AllReduceAlgo::TwoStage,
        cp_async: true,
    };
    /// One-shot by writes into the peers' push buffers (within
    /// `CommOptions::push_bytes`, inputs 16-byte aligned).
    pub const PUSH: Choice = Choice {
        algo: AllReduceAlgo::Push,
        cp_async: false,
    };
    /// The push kernel on flagged lines, no barrier (within
    /// `CommOptions::ll_bytes`, inputs 16-byte aligned).
    pub const PUSH_LL: Choice = Choice {
        algo: AllReduceAlgo::PushLl,
        cp_async: false,
    };
}

/// The thresholds of one world size: bytes per rank up to `ll_max` run the LL
/// push kernel; else up to `push_max`, the push kernel; else up to
/// `one_shot_max`, one-shot; from `cp_async_min` on, two-stage with
/// `cp.async`; the rest, two-stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Largest message (bytes per rank) that runs the LL push kernel (`None`:
    /// never). The communicator runs one-shot instead where it cannot take
    /// the call (a message past `CommOptions::ll_bytes`, a misaligned input).
    pub ll_max: Option<usize>,
    /// Largest message (bytes per rank) that runs the push kernel (`None`:
    /// never). The communicator runs one-shot instead where the push kernel
    /// cannot take the call (a message past its window, a misaligned input).
    pub push_max: Option<usize>,
    /// For a call whose inputs would be copied into the staging buffers
    /// first: the largest message that runs the push kernel, where larger
    /// than `push_max` (`None`: `push_max`). The push kernel reads its input
    /// in place and so saves the copy the others pay.
    pub push_max_copied: Option<usize>,
    /// Largest message (bytes per rank) that runs one-shot (`None`: never).
    pub one_shot_max: Option<usize>,
    /// Smallest message (bytes per rank) that runs two-stage with `cp.async`
    /// (`None`: never).
    pub cp_async_min: Option<usize>,
    /// Largest message (bytes per rank) whose two-stage `cp.async` call runs
    /// on at most [`NARROW_BLOCKS`] blocks a rank (`None`: never; the grid
    /// cap applies as well).
    pub narrow_max: Option<usize>,
}

/// Blocks a rank of a two-stage `cp.async` call up to
/// [`Thresholds::narrow_max`].
pub const NARROW_BLOCKS: u32 = 32;

/// Where [`AlgoTable::route`] sends a call: a redjit kernel, or NCCL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// One of redjit's kernels.
    Kernel(Choice),
    /// The communicator's NCCL backend.
    Nccl,
}

/// The algorithm-choice table: thresholds per world size 2..=8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgoTable {
    /// `rows[w - 2]`: the thresholds of world size `w`.
    pub rows: [Thresholds; 7],
    /// `nccl_min[w - 2]`: the smallest message (bytes per rank) that world size
    /// `w` runs on NCCL, where the communicator has it (`None`: never).
    pub nccl_min: [Option<usize>; 7],
    /// `nccl_min_copied[w - 2]`: the same for a call whose inputs the kernels
    /// would first copy into the staging buffers (an eager call on inputs
    /// that are not [`super::Communicator::registered`]): the copy costs a
    /// read and a write of the message, which NCCL, in place, does not pay.
    pub nccl_min_copied: [Option<usize>; 7],
    /// Whether the numbers come from measurements (false for the placeholder).
    pub measured: bool,
    /// Where the numbers come from (a BENCHMARKS.md entry once measured).
    pub source: String,
}

impl Default for AlgoTable {
    fn default() -> Self {
        AlgoTable::placeholder()
    }
}

const KB: usize = 1 << 10;
const MB: usize = 1 << 20;

fn err(rule: String) -> Error {
    Error::Comm {
        what: "algorithm choice".into(),
        rule,
    }
}

impl AlgoTable {
    /// UNMEASURED placeholder thresholds (see the module docs): the two-GPU
    /// issue replaces them with measured ones.
    pub fn placeholder() -> AlgoTable {
        let row = |one_shot_max: usize, cp_async_min: usize| Thresholds {
            ll_max: None,
            push_max: None,
            push_max_copied: None,
            one_shot_max: Some(one_shot_max),
            cp_async_min: (cp_async_min != usize::MAX).then_some(cp_async_min),
            narrow_max: None,
        };
        let mut rows = [
            row(usize::MAX, usize::MAX), // 2 ranks: see below
            row(512 * KB, 8 * MB),       // 3
            row(512 * KB, 8 * MB),       // 4
            row(256 * KB, 8 * MB),       // 5
            row(256 * KB, 8 * MB),       // 6
            row(256 * KB, 8 * MB),       // 7
            row(256 * KB, 8 * MB),       // 8
        ];
        // 2 ranks, measured (2 x H200, NVLink, one process per GPU, bf16;
        // BENCHMARKS.md, 2026-11-26, s18 run2): push up to 8 MB (32.3 us
        // against one-shot's 33.6 at 8 MB registered; 63.5 against 58.8 at
        // 16 MB), and for a copied input up to 16 MB (63.5 against one-shot's
        // 70.1, which copies first; 130.6 against 128.9 at 32 MB); one-shot
        // above; cp.async never (3202.4 us against 3208.7 for two-stage at
        // 1 GB; the cp.async kernel is slower at every size there).
        rows[0].push_max = Some(8 * MB);
        // The LL push kernel up to 256 KB (s19 run7, its own grid of up to
        // 128 blocks: from a graph 4.50-4.69 us against push's 5.05-5.26 at
        // 256 KB, 6.77-6.82 against 5.87-5.91 at 512 KB, 2.67-2.82 against
        // 4.10-4.12 at 8 KB; registered and untracked 5.59-5.74 against
        // 6.28-6.32 at 256 KB).
        rows[0].ll_max = Some(256 * KB);
        rows[0].push_max_copied = Some(16 * MB);
        // 4 ranks, measured (4 x H200, NVLink, one process per GPU, bf16;
        // BENCHMARKS.md, 2026-11-26, s18 run3): push up to 256 KB (8.4 us
        // against two-stage's 10.8; 18.1 against 14.3 at 1 MB; 512 KB not
        // measured), two-stage above, cp.async from 4 MB (29.9 against 31.9
        // at 4 MB, 87.5 against 89.8 at 16 MB), never one-shot; NCCL from
        // 256 MB for inputs read in place (1224.7 against NCCL's 1186.3;
        // 317.5 against 326.1 at 64 MB; 128 MB not measured) and from 16 MB
        // for copied ones (98.2 against 98.2 at 16 MB, 352.6 against 326.1 at
        // 64 MB; 33.1 against 43.0 at 4 MB).
        // The LL push kernel up to 32 KB (s20, its first run on 4 GPUs, one
        // call): from a graph 4.03 us against push's 4.95 at 8 KB, 4.91
        // against 5.14 at 32 KB, 5.73 against 5.47 at 64 KB; registered with
        // tracking off 6.57 against 6.56 at 8 KB, 6.30 against 7.08 at 32 KB,
        // 7.08 against 7.03 at 64 KB; two more rounds on another host agree
        // (graph 3.68-4.62 against 4.72-5.13 to 32 KB, 5.60-5.75 against
        // 5.40-5.52 at 64 KB).
        rows[2] = Thresholds {
            ll_max: Some(32 * KB),
            push_max: Some(256 * KB),
            push_max_copied: None,
            one_shot_max: None,
            cp_async_min: Some(4 * MB),
            // 32 blocks a rank up to 16 MB (s23 run2, four rounds each, us a
            // call against the 64 of the grid cap): registered 28.72-29.19
            // against 29.88-30.37 at 4 MB, 47.71-48.25 against 49.98-50.32 at
            // 8 MB, 86.41-86.93 against 87.36-88.12 at 16 MB; from a graph
            // 26.41-26.95 against 26.26-26.67, 46.02-46.50 against
            // 47.01-47.17, 84.74-85.24 against 85.16-85.42. From 32 MB 64
            // blocks lead (163.38-163.95 against 161.35-161.57 from a graph;
            // 318.69-319.25 against 315.23-315.63 at 64 MB).
            narrow_max: Some(16 * MB),
        };
        let mut nccl_min = [None; 7];
        nccl_min[2] = Some(256 * MB);
        let mut nccl_min_copied = [None; 7];
        // A copied input beats NCCL at 64 MB (243.6 us against 251.2) and
        // loses from 128 MB (473.8 against 470.3, 934.8 against 894.0 at
        // 256 MB); in place it wins at every size to 1 GB.
        nccl_min_copied[0] = Some(128 * MB);
        nccl_min_copied[2] = Some(16 * MB);
        AlgoTable {
            rows,
            nccl_min,
            nccl_min_copied,
            measured: false,
            source: "2 ranks measured on 2 x H200, 4 ranks on 4 x H200 (BENCHMARKS.md, 2026-11-26, s18, s19, s20); 3 and 5-8 ranks an UNMEASURED placeholder: vLLM/SGLang NVLink shape, cp.async guessed".into(),
        }
    }

    /// A table that picks `choice` for every world and size.
    pub fn always(choice: Choice) -> AlgoTable {
        let t = match choice {
            c if c == Choice::PUSH_LL => Thresholds {
                ll_max: Some(usize::MAX),
                push_max: None,
                push_max_copied: None,
                one_shot_max: Some(usize::MAX),
                cp_async_min: None,
                narrow_max: None,
            },
            c if c == Choice::PUSH => Thresholds {
                ll_max: None,
                push_max: Some(usize::MAX),
                push_max_copied: None,
                one_shot_max: Some(usize::MAX),
                cp_async_min: None,
                narrow_max: None,
            },
            c if c == Choice::ONE_SHOT => Thresholds {
                ll_max: None,
                push_max: None,
                push_max_copied: None,
                one_shot_max: Some(usize::MAX),
                cp_async_min: None,
                narrow_max: None,
            },
            c if c == Choice::CP_ASYNC => Thresholds {
                ll_max: None,
                push_max: None,
                push_max_copied: None,
                one_shot_max: None,
                cp_async_min: Some(0),
                narrow_max: None,
            },
            _ => Thresholds {
                ll_max: None,
                push_max: None,
                push_max_copied: None,
                one_shot_max: None,
                cp_async_min: None,
                narrow_max: None,
            },
        };
        AlgoTable {
            rows: [t; 7],
            nccl_min: [None; 7],
            nccl_min_copied: [None; 7],
            measured: false,
            source: format!("forced: {choice:?}"),
        }
    }

    /// `self`, unless `REDJIT_AR_ALGO` forces one kernel (or `nccl`: NCCL for
    /// every size, the kernels' thresholds kept for a communicator without
    /// it); an unknown value is an error naming the accepted ones.
    pub fn with_env(self) -> Result<AlgoTable> {
        match std::env::var("REDJIT_AR_ALGO") {
            Ok(v) if v.trim().eq_ignore_ascii_case("nccl") => Ok(self.nccl_always()),
            Ok(v) => Ok(AlgoTable::always(parse_forced(&v)?)),
            Err(_) => Ok(self),
        }
    }

    /// `self` with every size of every world routed to NCCL where the
    /// communicator has it.
    pub fn nccl_always(mut self) -> AlgoTable {
        self.nccl_min = [Some(0); 7];
        self.nccl_min_copied = [Some(0); 7];
        self.source = format!("{}; NCCL forced", self.source);
        self
    }

    /// Where a call of `bytes` bytes per rank among `world` ranks runs: NCCL
    /// from `nccl_min` on if `nccl` (the communicator has it), else the kernel
    /// [`Self::choose`] picks.
    pub fn route(&self, world: u32, bytes: usize, nccl: bool) -> Result<Route> {
        self.route_for(world, bytes, nccl, false)
    }

    /// [`Self::route`] for a call whose inputs are `copied` into the staging
    /// buffers first (then `nccl_min_copied` applies too).
    pub fn route_for(&self, world: u32, bytes: usize, nccl: bool, copied: bool) -> Result<Route> {
        let choice = self.choose_for(world, bytes, copied)?;
        let w = world as usize - 2;
        let from = match (self.nccl_min[w], self.nccl_min_copied[w]) {
            (a, b) if copied => a.into_iter().chain(b).min(),
            (a, _) => a,
        };
        Ok(if nccl && from.is_some_and(|m| bytes >= m) {
            Route::Nccl
        } else {
            Route::Kernel(choice)
        })
    }

    /// The kernel for `world` ranks and `bytes` bytes per rank, inputs read in
    /// place.
    pub fn choose(&self, world: u32, bytes: usize) -> Result<Choice> {
        self.choose_for(world, bytes, false)
    }

    /// The most blocks a rank a call of `choice` over `bytes` bytes per rank
    /// runs on, where its row narrows the grid (`Thresholds::narrow_max`).
    pub fn narrow(&self, world: u32, bytes: usize, choice: Choice) -> Option<u32> {
        let t = self.rows.get((world as usize).checked_sub(2)?)?;
        (choice == Choice::CP_ASYNC && t.narrow_max.is_some_and(|m| bytes <= m))
            .then_some(NARROW_BLOCKS)
    }

    /// [`Self::choose`] for inputs that are `copied` into the staging buffers
    /// first (then `push_max_copied` applies too).
    pub fn choose_for(&self, world: u32, bytes: usize, copied: bool) -> Result<Choice> {
        let Some(t) = (world as usize)
            .checked_sub(2)
            .and_then(|i| self.rows.get(i))
        else {
            return Err(err(format!("world {world}: the table covers 2..=8 ranks")));
        };
        // Option's order puts None below every Some.
        let push_max = if copied {
            t.push_max.max(t.push_max_copied)
        } else {
            t.push_max
        };
        Ok(if t.ll_max.is_some_and(|m| bytes <= m) {
            Choice::PUSH_LL
        } else if push_max.is_some_and(|m| bytes <= m) {
            Choice::PUSH
        } else if t.one_shot_max.is_some_and(|m| bytes <= m) {
            Choice::ONE_SHOT
        } else if t.cp_async_min.is_some_and(|m| bytes >= m) {
            Choice::CP_ASYNC
        } else {
            Choice::TWO_STAGE
        })
    }
}

/// Reads a forced choice: `oneshot`, `twostage`, `cpasync`, `push` or `pushll`.
pub fn parse_forced(v: &str) -> Result<Choice> {
    match v.trim().to_ascii_lowercase().as_str() {
        "oneshot" => Ok(Choice::ONE_SHOT),
        "twostage" => Ok(Choice::TWO_STAGE),
        "cpasync" => Ok(Choice::CP_ASYNC),
        "push" => Ok(Choice::PUSH),
        "pushll" => Ok(Choice::PUSH_LL),
        other => Err(err(format!(
            "REDJIT_AR_ALGO={other:?}: expected one of: oneshot, twostage, cpasync, push, pushll (or nccl)"
        ))),
    }
}
