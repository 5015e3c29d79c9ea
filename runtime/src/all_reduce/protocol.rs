//! The signal barrier of the all-reduce kernels (`templates/prelude/peer.cuh`),
//! as the host reads it (the error word) and as a model that runs it on the CPU.
//!
//! The protocol, per block b of every rank (thread t < R talks to rank t):
//!
//! ```text
//! barrier(kind):
//!   bar.sync                                   every access before it is done
//!   c    = counter[b] + 1                      (u32, wraps)
//!   slot = c & 1
//!   st.release.sys  peer t's flag[slot][b][rank] = c
//!   spin ld.acquire.sys own flag[slot][b][t] until == c, at most timeout_ns
//!        (%globaltimer); on expiry: error word = (kind, t, b), the block returns
//!   bar.red.and                                every thread learns the outcome
//!   counter[b] = c                             (thread 0)
//! ```
//!
//! Why it is safe (and what the model checks under random interleavings):
//! - a block passes barrier k only after every peer's block b has arrived at k;
//! - data written before barrier k by any rank is what peers read after it (the
//!   model's inputs and scratch slices carry the call number; a stale or early
//!   value is a violation); one-shot calls are start + end barrier, two-stage
//!   calls start + middle (see [`Shape`] for why no end barrier);
//! - a fast rank can be at most one barrier ahead of a slow one, and that next
//!   barrier uses the other slot, so it never overwrites the value a slow rank
//!   still waits for (with one slot the model finds that hang: `slots: 1`);
//! - the flags are compared for equality, so counter wrap-around at 2^32 is
//!   harmless (the model starts counters just below it);
//! - a rank that never arrives makes every waiting block give up within the
//!   bound, record the error and return, instead of hanging;
//! - the push kernel ([`Shape::Push`]) writes its input into a region of each
//!   peer's push buffer, in the set of its block's next barrier count's
//!   parity, and reads its peers' regions after its one barrier: a region
//!   holding another call's number when read is a violation, so a set
//!   overwritten while a peer still reads it is caught (with one set the model
//!   finds it: `push_sets: 1`); [`Shape::PushMixed`] interleaves push calls
//!   with one-shot and two-stage ones, whose barriers move the parity;
//! - the LL push kernel ([`Shape::PushLl`]) has no barrier: it stores its
//!   input with a flag (its block's count c + 1, with bit 0 set) into the set
//!   of that count's parity in each peer's LL buffer, waits in its own buffer
//!   for each peer's flag, reads the data stored with it (one atomic step, as
//!   an 8-byte {data, flag} half lands whole) and then counts the call; a flag
//!   read with another call's data is a violation, and a set overwritten before
//!   the peer read it leaves that peer waiting (caught with `push_sets: 1`);
//!   [`Shape::LlMixed`] interleaves it with the push, one-shot and two-stage
//!   kernels. The LL buffer starts zeroed: flag 0 never matches, even when the
//!   count wraps to 0;
//! - the fused two-stage kernel (all-reduce + residual + norm,
//!   [`Shape::FusedTwoStage`]) picks its scratch set by the rank's fused call
//!   count k (`FUSED_COUNT`, one word a rank, not a block): every block reads
//!   k at its start, the last block of a call to arrive stores it at its end,
//!   and the next fused call starts after that call has ended (stream order,
//!   modelled: a rank's blocks start a fused call only once all of them have
//!   left the call before, and its x is written then). Block b sums, in
//!   phase 1, the rows of its rank's slice that are b mod the grid, into its
//!   rank's scratch, and normalises, after the middle barrier, the rows b mod
//!   the grid of every slice, reading each from its owner's scratch: a block
//!   whose k disagrees with the count of fused calls before it, or a row read
//!   holding another call's sum, is a violation. [`Shape::FusedMixed`]
//!   interleaves it with plain calls and with the fused LL and push kernels'
//!   counting (modelled without their exchange, which only adds order). The
//!   model completes with one scratch set as well (`fused_sets: 1`): the start
//!   barrier with each peer's block b, which that peer reaches only after its
//!   kernel before has ended, already keeps a rank from rewriting rows a peer
//!   still reads; without stream order (`stream_order: false`) a block reads
//!   a stale count, which it catches;
//! - a block with no work in a call sits it out, barriers included, on every
//!   rank alike ([`Grid::Varying`]): the one-shot and two-stage grids follow the
//!   message's size, the push kernel's idle blocks return at once and the LL
//!   kernel's are not launched, so block b's barrier count, and with it the
//!   push set's parity, moves only in the calls block b takes part in (ranks
//!   that disagree on a call's grid, [`Grid::VaryingPerRank`], are caught).
//!
//! The model is sequentially consistent: it checks the protocol's logic, not the
//! memory ordering, which comes from release/acquire at system scope (argued in
//! `peer.cuh`).
//!
//! ```
//! use redjit_runtime::all_reduce::protocol::{run, BarrierKind, BarrierTimeout, ModelConfig, Outcome, Shape};
//!
//! // Four ranks, two blocks each, 50 two-stage calls in a random interleaving.
//! let cfg = ModelConfig::new(4, 2, 50, Shape::TwoStage);
//! assert!(matches!(run(&cfg, 7), Outcome::Completed { .. }));
//!
//! // The error word a kernel writes when rank 3 never arrives, decoded.
//! let t = BarrierTimeout { kind: BarrierKind::Start, peer: 3, block: 1 };
//! assert_eq!(BarrierTimeout::decode(t.encode()), Some(t));
//! assert_eq!(BarrierTimeout::decode(0), None);
//! ```

#![warn(missing_docs)]

use redjit_codegen::spec::all_reduce::{MAX_BLOCKS, MAX_WORLD};

/// Which barrier of a call a block waited at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BarrierKind {
    /// Before reading peers' inputs: every rank's input is written.
    Start,
    /// Two-stage, between reduce-scatter and all-gather: every slice is reduced.
    Middle,
    /// One-shot, after reading: no rank overwrites an input a peer still reads.
    End,
    /// The LL push kernel, polling its own buffer for a peer's flagged lines
    /// (no barrier; the error word names the peer all the same).
    Data,
}

impl BarrierKind {
    /// The code the kernel writes (`kArStart`, `kArMiddle`, `kArEnd`,
    /// `kArData`).
    pub const fn code(self) -> u32 {
        match self {
            BarrierKind::Start => 1,
            BarrierKind::Middle => 2,
            BarrierKind::End => 3,
            BarrierKind::Data => 4,
        }
    }
}

/// A barrier a block gave up on: the kernel's error word, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierTimeout {
    /// The barrier.
    pub kind: BarrierKind,
    /// The rank that did not arrive.
    pub peer: u32,
    /// The block (of the rank whose error word this is) that gave up.
    pub block: u32,
}

impl BarrierTimeout {
    /// The word the kernel stores: bit 31, kind in bits 24..30, peer in 16..23,
    /// block in 0..15.
    pub const fn encode(self) -> u32 {
        0x8000_0000 | (self.kind.code() << 24) | (self.peer << 16) | self.block
    }

    /// `None` for 0 (no error) or a word the kernel never writes.
    pub fn decode(word: u32) -> Option<BarrierTimeout> {
        if word & 0x8000_0000 == 0 {
            return None;
        }
        let kind = match (word >> 24) & 0x7f {
            1 => BarrierKind::Start,
            2 => BarrierKind::Middle,
            3 => BarrierKind::End,
            4 => BarrierKind::Data,
            _ => return None,
        };
        let peer = (word >> 16) & 0xff;
        let block = word & 0xffff;
        (peer < MAX_WORLD && block < MAX_BLOCKS).then_some(BarrierTimeout { kind, peer, block })
    }
}

impl std::fmt::Display for BarrierTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            BarrierKind::Data => write!(
                f,
                "block {} timed out waiting for rank {}'s data (LL push)",
                self.block, self.peer
            ),
            kind => write!(
                f,
                "block {} timed out at the {kind:?} barrier waiting for rank {}",
                self.block, self.peer
            ),
        }
    }
}

/// What a simulated call does between its barriers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// write input; start; read every rank's input; end. The end barrier keeps a
    /// fast rank from writing its next input while a peer still reads this one.
    OneShot,
    /// write input; start; read inputs, write own scratch; middle; read every
    /// scratch. No end barrier: inputs are last read before the middle barrier,
    /// and a rank writes its scratch again only after the next start barrier,
    /// which every peer reaches only when done reading it (the model found a
    /// third barrier redundant: it never changes an outcome).
    TwoStage,
    /// The hierarchical mode on one host's ranks: write input; start; read
    /// inputs, write own scratch (the reduce-scatter kernel ends); write own
    /// scratch again (NCCL across hosts, in place, next on the rank's stream);
    /// the all-gather kernel's start barrier, in the middle barrier's place
    /// (modelled as `Middle`, so leaving it out can be tried alone); read every
    /// scratch.
    Hierarchical,
    /// The push kernel: write own input into every peer's push buffer (set =
    /// parity of the block's next barrier count); start; read every peer's
    /// region of that set in own buffer. No end barrier.
    Push,
    /// Calls in the cycle push, push, two-stage, one-shot: the push kernel's
    /// alternation across the other kernels' barriers.
    PushMixed,
    /// The LL push kernel: write own input and the call's flag into every
    /// peer's LL buffer (set = parity of the block's count + 1); wait for every
    /// peer's flag in own buffer and read the data stored with it; count the
    /// call. No barrier.
    PushLl,
    /// Calls in the cycle LL, LL, push, two-stage, LL, one-shot: the LL kernel's
    /// sets across the other kernels' counts.
    LlMixed,
    /// The fused two-stage kernel: (stream order) k = the rank's fused count +
    /// 1 and x written; start; sum the block's rows of own slice from every
    /// rank's x into own scratch set k mod sets; middle; read each of the
    /// block's rows from its owner's scratch, same set; the last block to
    /// arrive stores k. No end barrier.
    FusedTwoStage,
    /// Calls in the cycle fused two-stage, fused two-stage, two-stage, fused
    /// count (a fused LL or push call: k read and stored, no exchange), fused
    /// two-stage, one-shot: the fused count's parity across the other calls.
    FusedMixed,
    /// A fused LL or push call as the fused count sees it: k read at the
    /// start, stored by the last block to arrive; its exchange left out (it
    /// only adds order).
    FusedCount,
}

impl Shape {
    /// The shape of call `call` (a mixed sequence's member, or `self`).
    fn of_call(self, call: u32) -> Shape {
        match self {
            Shape::PushMixed => {
                [Shape::Push, Shape::Push, Shape::TwoStage, Shape::OneShot][call as usize % 4]
            }
            Shape::LlMixed => [
                Shape::PushLl,
                Shape::PushLl,
                Shape::Push,
                Shape::TwoStage,
                Shape::PushLl,
                Shape::OneShot,
            ][call as usize % 6],
            Shape::FusedMixed => [
                Shape::FusedTwoStage,
                Shape::FusedTwoStage,
                Shape::TwoStage,
                Shape::FusedCount,
                Shape::FusedTwoStage,
                Shape::OneShot,
            ][call as usize % 6],
            s => s,
        }
    }
}

/// One model run.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Ranks (2..=8).
    pub ranks: u32,
    /// Blocks per rank.
    pub blocks: u32,
    /// Calls each rank makes in a row.
    pub calls: u32,
    /// What a call does between its barriers.
    pub shape: Shape,
    /// Every counter (and the flags, consistently) starts here, as after that many
    /// barriers: `u32::MAX - 3` crosses the wrap-around within two calls.
    pub initial_counter: u32,
    /// Spin polls before a waiting thread gives up (the model's `timeout_ns`).
    pub timeout_polls: u64,
    /// A rank whose kernel never runs.
    pub absent: Option<u32>,
    /// Protocol variants the model must catch: 1 slot instead of 2, or one
    /// barrier left out. The real kernels are `slots: 2, omit: None`.
    pub slots: u32,
    /// A barrier left out (a broken variant), or `None`.
    pub omit: Option<BarrierKind>,
    /// Buffer sets of the push kernel: 2 as it runs, 1 a broken variant.
    pub push_sets: u32,
    /// Which blocks take part in each call.
    pub grid: Grid,
    /// Scratch sets of the fused two-stage kernel: 2 as it runs.
    pub fused_sets: u32,
    /// A rank's fused call starts once its call before has ended on every
    /// block, as its stream orders them; false a broken variant (a block
    /// running ahead into the next kernel), which the model must catch.
    pub stream_order: bool,
}

/// Which blocks of a rank take part in a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// Every block in every call.
    Fixed,
    /// Calls of varying sizes: block 0 in every call, block b > 0 in the calls
    /// [`takes_part`] names, the same on every rank (as the message's size is).
    Varying,
    /// As `Varying`, but each rank draws its own grid: a broken variant (ranks
    /// that disagree on a call's grid), which the model must catch.
    VaryingPerRank,
}

/// Whether `rank`'s block `block` takes part in call `call` of `cfg` (see
/// [`Grid`]): block 0 always, the others below a per-call bound drawn from the
/// call's number (and for [`Grid::VaryingPerRank`] the rank's).
pub fn takes_part(cfg: &ModelConfig, rank: u32, call: u32, block: u32) -> bool {
    let salt = match cfg.grid {
        Grid::Fixed => return true,
        Grid::Varying => 0,
        Grid::VaryingPerRank => u64::from(rank) << 32,
    };
    let mut pick = Rng(u64::from(call) ^ salt ^ 0x5EED);
    block == 0 || block < 1 + pick.below(cfg.blocks as usize) as u32
}

impl ModelConfig {
    /// The protocol as the kernels run it.
    pub fn new(ranks: u32, blocks: u32, calls: u32, shape: Shape) -> ModelConfig {
        ModelConfig {
            ranks,
            blocks,
            calls,
            shape,
            initial_counter: 0,
            timeout_polls: 1 << 20,
            absent: None,
            slots: 2,
            omit: None,
            push_sets: 2,
            grid: Grid::Fixed,
            fused_sets: 2,
            stream_order: true,
        }
    }
}

/// How a model run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every block of every rank finished every call.
    Completed {
        /// Scheduler steps taken.
        steps: u64,
    },
    /// Some blocks gave up; `errors` are (rank, timeout) as the error words say.
    /// No block passed a barrier it should not have.
    TimedOut {
        /// Scheduler steps taken.
        steps: u64,
        /// (rank, decoded error word) of every block that gave up.
        errors: Vec<(u32, BarrierTimeout)>,
    },
    /// A safety property failed: the protocol is wrong.
    Violation(String),
}

/// The operations of one call on one block, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// The host's stream writes this call's input before the kernel.
    WriteInput,
    Barrier(BarrierKind),
    /// Read rank q's input (must hold this call's number).
    ReadInput(u32),
    /// Write own scratch slice.
    WriteScratch,
    /// Read rank q's scratch (must hold this call's number).
    ReadScratch(u32),
    /// Write own input into rank q's push buffer (no-op for q = own rank).
    WritePush(u32),
    /// Read rank q's region of own push buffer (must hold this call's number).
    ReadPush(u32),
    /// Write own input and the call's flag into rank q's LL buffer (no-op for
    /// q = own rank).
    WriteLl(u32),
    /// Wait for rank q's flag in own LL buffer, then read the data with it
    /// (must be this call's number).
    ReadLl(u32),
    /// Count the call (counter = c), as thread 0 does after the block's sync.
    CountLl,
    /// A fused call's start: once every block of the rank has left the call
    /// before (stream order), the rank's x is written (as the host's stream
    /// does before the kernel) and the block reads k = the rank's fused
    /// count + 1.
    FusedStart,
    /// Count the block's arrival (after the start barrier, as the kernel does).
    FusedArrive,
    /// Read rank q's x of the block's rows in own slice (must be this call's).
    FusedReadInput(u32),
    /// Write the sums of the block's rows in own slice into own scratch set k.
    FusedWriteScratch,
    /// Read the block's rows of rank q's slice from q's scratch set k (must
    /// hold this call's sums).
    FusedReadScratch(u32),
    /// The last block of the call to arrive stores k (and zeroes the arrivals).
    FusedEnd,
}

fn program(cfg: &ModelConfig, shape: Shape) -> Vec<Op> {
    let barrier = |kind: BarrierKind| (cfg.omit != Some(kind)).then_some(Op::Barrier(kind));
    if shape == Shape::FusedCount {
        return vec![Op::FusedStart, Op::FusedArrive, Op::FusedEnd];
    }
    if shape == Shape::FusedTwoStage {
        let mut ops = vec![Op::FusedStart];
        ops.extend(barrier(BarrierKind::Start));
        ops.push(Op::FusedArrive);
        ops.extend((0..cfg.ranks).map(Op::FusedReadInput));
        ops.push(Op::FusedWriteScratch);
        ops.extend(barrier(BarrierKind::Middle));
        ops.extend((0..cfg.ranks).map(Op::FusedReadScratch));
        ops.push(Op::FusedEnd);
        return ops;
    }
    if shape == Shape::PushLl {
        let mut ops: Vec<Op> = (0..cfg.ranks).map(Op::WriteLl).collect();
        ops.extend((0..cfg.ranks).map(Op::ReadLl));
        ops.push(Op::CountLl);
        return ops;
    }
    if shape == Shape::Push {
        let mut ops: Vec<Op> = (0..cfg.ranks).map(Op::WritePush).collect();
        ops.extend(barrier(BarrierKind::Start));
        ops.extend((0..cfg.ranks).map(Op::ReadPush));
        return ops;
    }
    let mut ops = vec![Op::WriteInput];
    ops.extend(barrier(BarrierKind::Start));
    ops.extend((0..cfg.ranks).map(Op::ReadInput));
    match shape {
        Shape::OneShot => ops.extend(barrier(BarrierKind::End)),
        Shape::TwoStage => {
            ops.push(Op::WriteScratch);
            ops.extend(barrier(BarrierKind::Middle));
            ops.extend((0..cfg.ranks).map(Op::ReadScratch));
        }
        Shape::Hierarchical => {
            ops.push(Op::WriteScratch);
            ops.push(Op::WriteScratch);
            ops.extend(barrier(BarrierKind::Middle));
            ops.extend((0..cfg.ranks).map(Op::ReadScratch));
        }
        Shape::Push
        | Shape::PushMixed
        | Shape::PushLl
        | Shape::LlMixed
        | Shape::FusedTwoStage
        | Shape::FusedMixed
        | Shape::FusedCount => {
            unreachable!("a call has one of the other shapes")
        }
    }
    ops
}

/// A signalling thread's place in a barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sig {
    /// Not yet signalled its peer.
    Signal,
    /// Spinning, with polls so far.
    Wait(u64),
    Done,
    Gave,
}

/// One block of one rank.
#[derive(Debug, Clone)]
struct Block {
    call: u32,
    pc: usize,
    /// Value of the barrier in progress (`Some` while in one).
    c: Option<u32>,
    threads: Vec<Sig>,
    /// Barriers this block has entered (for the safety check).
    entered: u64,
    finished: bool,
    /// Polls of the LL wait in progress.
    ll_polls: u64,
    /// The fused call count k this block read at its call's start.
    k: u32,
    /// Whether this block was the last of its fused call to arrive.
    last: bool,
}

/// Shared memory of the model: every rank's signal buffer, counters, inputs and
/// scratch, each as the kernels lay them out (flag[slot][block][from]).
struct World {
    flags: Vec<u32>,
    counters: Vec<u32>,
    input: Vec<Option<u32>>,
    scratch: Vec<Option<u32>>,
    /// push[rank][set][from][block]: rank `from`'s region of `rank`'s buffer.
    push: Vec<Option<u32>>,
    /// ll[rank][set][from][block]: (flag, data) of rank `from`'s line in
    /// `rank`'s LL buffer; (0, None) as zeroed.
    ll: Vec<(u32, Option<u32>)>,
    errors: Vec<Option<BarrierTimeout>>,
    /// Each rank's fused call count and arrivals (the signal buffer's
    /// `FUSED_COUNT` and `FUSED_DONE`).
    fused_count: Vec<u32>,
    fused_done: Vec<u32>,
    /// fused_x[rank][row]: the call whose x the rank's row holds.
    fused_x: Vec<Option<u32>>,
    /// fused_scratch[rank][set][row]: the call whose sum of row the rank's
    /// scratch set holds (the rows of its slice).
    fused_scratch: Vec<Option<u32>>,
    cfg: ModelConfig,
}

impl World {
    fn flag(&mut self, rank: u32, slot: u32, block: u32, from: u32) -> &mut u32 {
        let c = &self.cfg;
        let i = (((rank * c.slots + slot) * c.blocks + block) * c.ranks + from) as usize;
        &mut self.flags[i]
    }
    fn cell(&self, rank: u32, block: u32) -> usize {
        (rank * self.cfg.blocks + block) as usize
    }
    fn push_cell(&self, rank: u32, set: u32, from: u32, block: u32) -> usize {
        let c = &self.cfg;
        (((rank * c.push_sets + set) * c.ranks + from) * c.blocks + block) as usize
    }
    fn fused_x_cell(&self, rank: u32, row: u32) -> usize {
        (rank * fused_rows(&self.cfg) + row) as usize
    }
    fn fused_scratch_cell(&self, rank: u32, set: u32, row: u32) -> usize {
        ((rank * self.cfg.fused_sets + set) * fused_rows(&self.cfg) + row) as usize
    }
}

/// Rows of a fused call: more than two a block, not a multiple of the
/// blocks or ranks, so that blocks and slices hold different numbers of rows.
fn fused_rows(cfg: &ModelConfig) -> u32 {
    2 * cfg.blocks + 1
}

/// Blocks of `rank` that take part in `call` (the grid, a prefix of the blocks).
fn grid_of(cfg: &ModelConfig, rank: u32, call: u32) -> u32 {
    (0..cfg.blocks)
        .filter(|&b| takes_part(cfg, rank, call, b))
        .count() as u32
}

/// The rows of owner `q`'s slice that block `block` of a grid of `grid` takes
/// (rows block, block + grid, ...; each slice ceil(rows / ranks) rows).
fn fused_rows_of(cfg: &ModelConfig, q: u32, block: u32, grid: u32) -> impl Iterator<Item = u32> {
    let rows = fused_rows(cfg);
    let part = rows.div_ceil(cfg.ranks);
    let (lo, hi) = ((q * part).min(rows), ((q + 1) * part).min(rows));
    (lo..hi).filter(move |r| r % grid == block)
}

/// Fused calls (two-stage or count) before `call` in `cfg`'s sequence.
fn fused_calls_before(cfg: &ModelConfig, call: u32) -> u32 {
    (0..call)
        .filter(|&c| {
            matches!(
                cfg.shape.of_call(c),
                Shape::FusedTwoStage | Shape::FusedCount
            )
        })
        .count() as u32
}

/// A deterministic generator (SplitMix64) for the scheduler.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// Runs the protocol for `cfg` under the interleaving `seed` picks: at each step
/// one runnable actor (a block between barriers, or one signalling thread in a
/// barrier) does one atomic step.
pub fn run(cfg: &ModelConfig, seed: u64) -> Outcome {
    assert!((1..=2).contains(&cfg.slots) && (1..=2).contains(&cfg.push_sets));
    assert!((1..=2).contains(&cfg.fused_sets));
    assert!(cfg.ranks >= 1 && cfg.blocks >= 1);
    // One program per shape a call can have, picked by the call's number.
    let shapes = [
        Shape::OneShot,
        Shape::TwoStage,
        Shape::Hierarchical,
        Shape::Push,
        Shape::PushLl,
        Shape::FusedTwoStage,
        Shape::FusedCount,
    ];
    let programs: Vec<Vec<Op>> = shapes.iter().map(|&s| program(cfg, s)).collect();
    let ops_of = |call: u32| {
        let shape = cfg.shape.of_call(call);
        &programs[shapes.iter().position(|&s| s == shape).unwrap_or(0)]
    };
    let n_cells = (cfg.ranks * cfg.blocks) as usize;
    let k = cfg.initial_counter;
    let mut world = World {
        flags: vec![0; (cfg.ranks * cfg.slots * cfg.blocks * cfg.ranks) as usize],
        counters: vec![k; n_cells],
        input: vec![None; n_cells],
        scratch: vec![None; n_cells],
        push: vec![None; (cfg.ranks * cfg.push_sets * cfg.ranks * cfg.blocks) as usize],
        ll: vec![(0, None); (cfg.ranks * cfg.push_sets * cfg.ranks * cfg.blocks) as usize],
        errors: vec![None; cfg.ranks as usize],
        fused_count: vec![0; cfg.ranks as usize],
        fused_done: vec![0; cfg.ranks as usize],
        fused_x: vec![None; (cfg.ranks * fused_rows(cfg)) as usize],
        fused_scratch: vec![None; (cfg.ranks * cfg.fused_sets * fused_rows(cfg)) as usize],
        cfg: cfg.clone(),
    };
    // The state after k barriers: the last value k in slot k's, k - 1 in the other
    // (for k = 0, the zeroed buffer the communicator starts from).
    for r in (0..cfg.ranks).filter(|_| k != 0) {
        for b in 0..cfg.blocks {
            for from in 0..cfg.ranks {
                *world.flag(r, k % cfg.slots, b, from) = k;
                if cfg.slots == 2 {
                    *world.flag(r, (k.wrapping_sub(1)) % 2, b, from) = k.wrapping_sub(1);
                }
            }
        }
    }
    let mut blocks: Vec<Block> = (0..n_cells)
        .map(|_| Block {
            call: 0,
            pc: 0,
            c: None,
            threads: vec![Sig::Done; cfg.ranks as usize],
            entered: 0,
            finished: cfg.calls == 0,
            ll_polls: 0,
            k: 0,
            last: false,
        })
        .collect();
    let mut rng = Rng(seed);
    let mut steps = 0u64;
    let present = |r: u32| cfg.absent != Some(r);
    loop {
        // Runnable actors: (cell, None) for a block step, (cell, Some(t)) for a thread.
        let mut actors: Vec<(usize, Option<usize>)> = Vec::new();
        for (cell, blk) in blocks.iter().enumerate() {
            let rank = cell as u32 / cfg.blocks;
            if blk.finished || !present(rank) {
                continue;
            }
            // A fused call starts once every block of the rank has left the
            // call before (the stream's order of kernels).
            let at_start = blk.c.is_none()
                && ops_of(blk.call)[blk.pc] == Op::FusedStart
                && takes_part(cfg, rank, blk.call, cell as u32 % cfg.blocks);
            if at_start
                && cfg.stream_order
                && !(0..cfg.blocks).all(|b| {
                    let o = &blocks[world.cell(rank, b)];
                    o.finished || o.call >= blk.call
                })
            {
                continue;
            }
            match blk.c {
                None => actors.push((cell, None)),
                Some(_) => {
                    let all_done = blk
                        .threads
                        .iter()
                        .all(|s| matches!(s, Sig::Done | Sig::Gave));
                    if all_done {
                        actors.push((cell, None));
                    } else {
                        for (t, s) in blk.threads.iter().enumerate() {
                            if matches!(s, Sig::Signal | Sig::Wait(_)) {
                                actors.push((cell, Some(t)));
                            }
                        }
                    }
                }
            }
        }
        if actors.is_empty() {
            break;
        }
        steps += 1;
        let (cell, thread) = actors[rng.below(actors.len())];
        let rank = cell as u32 / cfg.blocks;
        let block = cell as u32 % cfg.blocks;
        let blk = &mut blocks[cell];
        let call_tag = blk.call;
        let ops = ops_of(call_tag);
        match (thread, blk.c) {
            // A signalling thread's step.
            (Some(t), Some(c)) => {
                let slot = c % cfg.slots;
                match blk.threads[t] {
                    Sig::Signal => {
                        *world.flag(t as u32, slot, block, rank) = c;
                        blk.threads[t] = Sig::Wait(0);
                    }
                    Sig::Wait(polls) => {
                        if *world.flag(rank, slot, block, t as u32) == c {
                            blk.threads[t] = Sig::Done;
                        } else if polls + 1 > cfg.timeout_polls {
                            let kind = match ops[blk.pc] {
                                Op::Barrier(kind) => kind,
                                _ => unreachable!("threads run only inside a barrier"),
                            };
                            world.errors[rank as usize] = Some(BarrierTimeout {
                                kind,
                                peer: t as u32,
                                block,
                            });
                            blk.threads[t] = Sig::Gave;
                        } else {
                            blk.threads[t] = Sig::Wait(polls + 1);
                        }
                    }
                    Sig::Done | Sig::Gave => unreachable!("not runnable"),
                }
            }
            // The block leaves a barrier (all its threads are done).
            (None, Some(c)) => {
                if blk.threads.contains(&Sig::Gave) {
                    blk.finished = true;
                    continue;
                }
                // Safety: block b of every rank has entered this barrier.
                let entered = blk.entered;
                for p in 0..cfg.ranks {
                    let other = &blocks[world.cell(p, block)];
                    if other.entered < entered {
                        return Outcome::Violation(format!(
                            "rank {rank} block {block} passed barrier {entered} (counter {c}) while rank {p} had entered only {}",
                            other.entered
                        ));
                    }
                }
                let blk = &mut blocks[cell];
                world.counters[cell] = c;
                blk.c = None;
                advance(blk, ops.len(), cfg.calls);
            }
            // A block with no work in this call skips it whole (one step).
            (None, None) if blk.pc == 0 && !takes_part(cfg, rank, call_tag, block) => {
                blk.call += 1;
                blk.finished = blk.call == cfg.calls;
            }
            // A block step between barriers.
            (None, None) => match ops[blk.pc] {
                Op::WriteInput => {
                    let i = world.cell(rank, block);
                    world.input[i] = Some(call_tag);
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::Barrier(_) => {
                    let c = world.counters[cell].wrapping_add(1);
                    blk.c = Some(c);
                    blk.entered += 1;
                    blk.threads.fill(Sig::Signal);
                }
                Op::ReadInput(q) => {
                    let got = world.input[world.cell(q, block)];
                    if got != Some(call_tag) {
                        return Outcome::Violation(format!(
                            "rank {rank} block {block} call {call_tag} read rank {q}'s input of call {got:?}"
                        ));
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::WriteScratch => {
                    let i = world.cell(rank, block);
                    world.scratch[i] = Some(call_tag);
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::ReadScratch(q) => {
                    let got = world.scratch[world.cell(q, block)];
                    if got != Some(call_tag) {
                        return Outcome::Violation(format!(
                            "rank {rank} block {block} call {call_tag} read rank {q}'s scratch of call {got:?}"
                        ));
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::WritePush(q) => {
                    if q != rank {
                        // The kernel's set: the parity of the barrier count it
                        // is about to reach.
                        let set = world.counters[cell].wrapping_add(1) % cfg.push_sets;
                        let i = world.push_cell(q, set, rank, block);
                        world.push[i] = Some(call_tag);
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::WriteLl(q) => {
                    if q != rank {
                        let c = world.counters[cell].wrapping_add(1);
                        let i = world.push_cell(q, c % cfg.push_sets, rank, block);
                        world.ll[i] = (c | 1, Some(call_tag));
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::ReadLl(q) => {
                    if q == rank {
                        advance(blk, ops.len(), cfg.calls);
                        continue;
                    }
                    let c = world.counters[cell].wrapping_add(1);
                    let set = c % cfg.push_sets;
                    let (flag, got) = world.ll[world.push_cell(rank, set, q, block)];
                    if flag == c | 1 {
                        if got != Some(call_tag) {
                            return Outcome::Violation(format!(
                                "rank {rank} block {block} call {call_tag} read rank {q}'s LL line (set {set}, flag {flag}) holding call {got:?}"
                            ));
                        }
                        blk.ll_polls = 0;
                        advance(blk, ops.len(), cfg.calls);
                    } else if blk.ll_polls + 1 > cfg.timeout_polls {
                        world.errors[rank as usize] = Some(BarrierTimeout {
                            kind: BarrierKind::Data,
                            peer: q,
                            block,
                        });
                        blk.finished = true;
                    } else {
                        blk.ll_polls += 1;
                    }
                }
                Op::CountLl => {
                    world.counters[cell] = world.counters[cell].wrapping_add(1);
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::FusedStart => {
                    // The host's write of x before the kernel, by each block
                    // alike: a rewrite holds the same call, and under stream
                    // order no block of the rank's next call has started.
                    let r = rank as usize;
                    for row in 0..fused_rows(cfg) {
                        let i = world.fused_x_cell(rank, row);
                        world.fused_x[i] = Some(call_tag);
                    }
                    blk.k = world.fused_count[r].wrapping_add(1);
                    blk.last = false;
                    let want = fused_calls_before(cfg, call_tag) + 1;
                    if blk.k != want {
                        return Outcome::Violation(format!(
                            "rank {rank} block {block} call {call_tag} read fused count k = {}, the {want}th fused call",
                            blk.k
                        ));
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::FusedArrive => {
                    let r = rank as usize;
                    blk.last = world.fused_done[r] + 1 == grid_of(cfg, rank, call_tag);
                    world.fused_done[r] += 1;
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::FusedReadInput(q) => {
                    let grid = grid_of(cfg, rank, call_tag);
                    for row in fused_rows_of(cfg, rank, block, grid) {
                        let got = world.fused_x[world.fused_x_cell(q, row)];
                        if got != Some(call_tag) {
                            return Outcome::Violation(format!(
                                "rank {rank} block {block} call {call_tag} summed rank {q}'s row {row} of call {got:?}"
                            ));
                        }
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::FusedWriteScratch => {
                    let grid = grid_of(cfg, rank, call_tag);
                    let set = blk.k % cfg.fused_sets;
                    for row in fused_rows_of(cfg, rank, block, grid) {
                        let i = world.fused_scratch_cell(rank, set, row);
                        world.fused_scratch[i] = Some(call_tag);
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::FusedReadScratch(q) => {
                    let grid = grid_of(cfg, rank, call_tag);
                    let set = blk.k % cfg.fused_sets;
                    for row in fused_rows_of(cfg, q, block, grid) {
                        let got = world.fused_scratch[world.fused_scratch_cell(q, set, row)];
                        if got != Some(call_tag) {
                            return Outcome::Violation(format!(
                                "rank {rank} block {block} call {call_tag} read row {row}'s sum from rank {q}'s scratch (set {set}) holding call {got:?}"
                            ));
                        }
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::FusedEnd => {
                    if blk.last {
                        let r = rank as usize;
                        world.fused_done[r] = 0;
                        world.fused_count[r] = blk.k;
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
                Op::ReadPush(q) => {
                    if q != rank {
                        let set = world.counters[cell] % cfg.push_sets;
                        let got = world.push[world.push_cell(rank, set, q, block)];
                        if got != Some(call_tag) {
                            return Outcome::Violation(format!(
                                "rank {rank} block {block} call {call_tag} read rank {q}'s push region (set {set}) of call {got:?}"
                            ));
                        }
                    }
                    advance(blk, ops.len(), cfg.calls);
                }
            },
            (Some(_), None) => unreachable!("threads run only inside a barrier"),
        }
    }
    let errors: Vec<(u32, BarrierTimeout)> = world
        .errors
        .iter()
        .enumerate()
        .filter_map(|(r, e)| e.map(|e| (r as u32, e)))
        .collect();
    let all_done = blocks
        .iter()
        .enumerate()
        .all(|(cell, b)| b.finished && (b.call == cfg.calls || !present(cell as u32 / cfg.blocks)));
    if errors.is_empty() && all_done {
        Outcome::Completed { steps }
    } else if errors.is_empty() {
        Outcome::Violation("blocks stopped without finishing and without an error".into())
    } else {
        Outcome::TimedOut { steps, errors }
    }
}

fn advance(blk: &mut Block, len: usize, calls: u32) {
    blk.pc += 1;
    if blk.pc == len {
        blk.pc = 0;
        blk.call += 1;
        if blk.call == calls {
            blk.finished = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_words_round_trip() {
        for kind in [
            BarrierKind::Start,
            BarrierKind::Middle,
            BarrierKind::End,
            BarrierKind::Data,
        ] {
            let t = BarrierTimeout {
                kind,
                peer: 7,
                block: 63,
            };
            assert_eq!(BarrierTimeout::decode(t.encode()), Some(t));
        }
        assert_eq!(BarrierTimeout::decode(0), None);
        assert_eq!(BarrierTimeout::decode(0x8000_0000), None);
    }
}
