//! Which kernel an all-reduce runs: one table from world size x message size
//! to the LL push, push, one-shot or two-stage kernel (with or without
//! `cp.async` double buffering), and from which size NCCL takes over. This is
//! the only place the choice is made; [`super::Communicator::choose`] reads the
//! communicator's table (`CommOptions::algos`, by default its device's tuning
//! table's `[[all_reduce]]` rows: [`AlgoTable::for_tuning`]).
//!
//! ```
//! use redjit_runtime::all_reduce::choice::{AlgoTable, Choice};
//! use redjit_runtime::AllReduceAlgo;
//! use redjit_codegen::tuning::Tuning;
//! // The H200 table's rows (2 and 4 ranks measured there), the ladder for the rest.
//! let t = AlgoTable::for_tuning(&Tuning::shipped("h200")?);
//! assert!(!t.measured); // 3 and 5 to 8 ranks are not measured
//! assert_eq!(t.choose(2, 64 << 10)?, Choice::PUSH_LL);
//! assert_eq!(t.choose(8, 64 << 10)?, Choice::ONE_SHOT);
//! assert_eq!(t.choose(8, 64 << 20)?.algo, AllReduceAlgo::TwoStage);
//! // Overriding: any table, or one kernel for every call.
//! let forced = AlgoTable::always(Choice::TWO_STAGE);
//! assert_eq!(forced.choose(2, 16)?, Choice::TWO_STAGE);
//! # Ok::<(), Box<dyn std::error::Error>>(())
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
//! A world without a table row takes the ladder ([`AlgoTable::ladder`],
//! unmeasured): the shape vLLM and SGLang ship for NVLink machines (one-shot
//! up to 512 KB at 3 and 4 ranks, 256 KB at 5 to 8), `cp.async` from a
//! guessed 8 MB, and no NCCL hand-over. `measured` is true only where every
//! world 2..=8 has a row.
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
//! found); [`AlgoTable::choose`] never does.
//!
//! ```
//! use redjit_runtime::all_reduce::choice::{AlgoTable, Choice, Route};
//! let mut t = AlgoTable::ladder();
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
//! `CommOptions::algos`, else the device's tuning table.

#![warn(missing_docs)]

use redjit_codegen::AllReduceAlgo;
use redjit_codegen::tuning::Tuning;

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
    /// Largest message (bytes per rank) of the fused all-reduce + norm that
    /// runs on the push path where it does not run on the LL one (`None`:
    /// never; one-shot then).
    pub fused_push_max: Option<usize>,
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
    /// Whether every world's numbers come from measurements (table rows).
    pub measured: bool,
    /// Where the numbers come from (the tuning table and its rows, once measured).
    pub source: String,
}

impl Default for AlgoTable {
    fn default() -> Self {
        AlgoTable::ladder()
    }
}

fn err(rule: String) -> Error {
    Error::Comm {
        what: "algorithm choice".into(),
        rule,
    }
}

impl AlgoTable {
    /// The unmeasured shape every world takes without a table row (see the
    /// module docs): one-shot up to 512 KB (3 and 4 ranks; 256 KB at 2 and 5
    /// to 8), then two-stage, with `cp.async` from 8 MB; no NCCL hand-over.
    pub fn ladder() -> AlgoTable {
        const KB: usize = 1 << 10;
        const MB: usize = 1 << 20;
        let row = |one_shot_max: usize| Thresholds {
            ll_max: None,
            push_max: None,
            push_max_copied: None,
            one_shot_max: Some(one_shot_max),
            cp_async_min: Some(8 * MB),
            narrow_max: None,
            fused_push_max: None,
        };
        AlgoTable {
            rows: [
                row(256 * KB),
                row(512 * KB),
                row(512 * KB),
                row(256 * KB),
                row(256 * KB),
                row(256 * KB),
                row(256 * KB),
            ],
            nccl_min: [None; 7],
            nccl_min_copied: [None; 7],
            measured: false,
            source: "the unmeasured ladder (the vLLM/SGLang NVLink shape, cp.async guessed)".into(),
        }
    }

    /// The rows `tuning` (a device's table and its bases) has for each world,
    /// the ladder's for the others.
    pub fn for_tuning(tuning: &Tuning) -> AlgoTable {
        let mut t = AlgoTable::ladder();
        let bytes = |v: Option<u64>| v.map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        let mut rows = Vec::new();
        for world in 2..=8u32 {
            let Some(r) = tuning.all_reduce_rule(world) else {
                continue;
            };
            let i = world as usize - 2;
            t.rows[i] = Thresholds {
                ll_max: bytes(r.ll_max),
                push_max: bytes(r.push_max),
                push_max_copied: bytes(r.push_max_copied),
                one_shot_max: bytes(r.one_shot_max),
                cp_async_min: bytes(r.cp_async_min),
                narrow_max: bytes(r.narrow_max),
                fused_push_max: bytes(r.fused_push_max),
            };
            t.nccl_min[i] = bytes(r.nccl_min);
            t.nccl_min_copied[i] = bytes(r.nccl_min_copied);
            rows.push(world.to_string());
        }
        t.measured = rows.len() == t.rows.len();
        t.source = if rows.is_empty() {
            format!(
                "tuning table {}: no all-reduce rows; {}",
                tuning.chain().join(" -> "),
                t.source
            )
        } else {
            format!(
                "tuning table {}: {} rank(s) from its rows, the others {}",
                tuning.chain().join(" -> "),
                rows.join(", "),
                t.source
            )
        };
        t
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
                fused_push_max: None,
            },
            c if c == Choice::PUSH => Thresholds {
                ll_max: None,
                push_max: Some(usize::MAX),
                push_max_copied: None,
                one_shot_max: Some(usize::MAX),
                cp_async_min: None,
                narrow_max: None,
                fused_push_max: Some(usize::MAX),
            },
            c if c == Choice::ONE_SHOT => Thresholds {
                ll_max: None,
                push_max: None,
                push_max_copied: None,
                one_shot_max: Some(usize::MAX),
                cp_async_min: None,
                narrow_max: None,
                fused_push_max: None,
            },
            c if c == Choice::CP_ASYNC => Thresholds {
                ll_max: None,
                push_max: None,
                push_max_copied: None,
                one_shot_max: None,
                cp_async_min: Some(0),
                narrow_max: None,
                fused_push_max: None,
            },
            _ => Thresholds {
                ll_max: None,
                push_max: None,
                push_max_copied: None,
                one_shot_max: None,
                cp_async_min: None,
                narrow_max: None,
                fused_push_max: None,
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
        let t = self.row(world)?;
        (choice == Choice::CP_ASYNC && t.narrow_max.is_some_and(|m| bytes <= m))
            .then_some(NARROW_BLOCKS)
    }

    /// Whether the fused all-reduce + norm of `bytes` bytes per rank runs on
    /// the push path where the LL one does not take it
    /// (`Thresholds::fused_push_max`).
    pub fn fused_push(&self, world: u32, bytes: usize) -> bool {
        self.row(world)
            .is_some_and(|t| t.fused_push_max.is_some_and(|m| bytes <= m))
    }

    /// The thresholds of `world` ranks (`None` outside 2..=8).
    fn row(&self, world: u32) -> Option<&Thresholds> {
        self.rows.get((world as usize).checked_sub(2)?)
    }

    /// [`Self::choose`] for inputs that are `copied` into the staging buffers
    /// first (then `push_max_copied` applies too).
    pub fn choose_for(&self, world: u32, bytes: usize, copied: bool) -> Result<Choice> {
        let Some(t) = self.row(world) else {
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
