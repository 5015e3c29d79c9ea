//! CUDA-graph support (seed 003 step 2): the bookkeeping of the inputs that
//! all-reduces captured into a graph read in place, apart from CUDA so it is
//! tested on the CPU (`tests/all_reduce_graph.rs`).
//!
//! ```
//! use redjit_runtime::all_reduce::graph::GraphBuffers;
//! let mut g = GraphBuffers::new(16);
//! g.begin()?;
//! // Two all-reduces captured; each records every local rank's input address.
//! assert_eq!(g.record(&[0x1000, 0x2000])?, 1);
//! assert_eq!(g.record(&[0x3000, 0x4000])?, 2);
//! let pending = g.finish()?;
//! assert_eq!((pending.first_slot, pending.inputs.len()), (1, 2));
//! # Ok::<(), redjit_runtime::Error>(())
//! ```
//!
//! How it works. The kernels read their input table from device memory (every
//! other argument is by value): each local rank has a table array whose slot 0
//! holds the registered staging buffers (eager calls copy their input there)
//! and whose slots 1.. belong to captured calls. Between
//! `Communicator::begin_capture` and `Communicator::end_capture` a call on a
//! capturing stream does not stage: it takes the next slot, records each local
//! rank's input address, and launches with that slot's address, which the
//! graph bakes in. After capture, `end_capture` has the ranks agree on how many
//! calls they captured (vLLM PR #39791: a rank that captured a different number
//! would pair its slots with the wrong peers' buffers), exchanges the inputs
//! (in one process the addresses themselves; one process per GPU sends each
//! input's IPC handle and offset, and peers open them), and writes the slots.
//! Replays then read every rank's input in place, with the same kernel
//! arguments as at capture.
//!
//! Rules, each a typed error (`Error::Comm`, what = "graph capture"):
//! - a call on a capturing stream outside `begin_capture`/`end_capture` is
//!   refused: its input is not registered and nothing would register it;
//! - a captured input must start on 16 bytes (eager inputs are staged; captured
//!   ones are read in place with 16-byte loads);
//! - the slots are bounded (`CommOptions::graph_slots`); a capture past them is
//!   refused, not wrapped;
//! - ranks that captured different numbers of calls are refused at
//!   `end_capture`, before any slot is written.
//!
//! The inputs must stay allocated (and, in the one-process-per-GPU and
//! multi-GPU placements, be `cuMemAlloc` memory: legacy-IPC capable and covered
//! by peer access) for as long as the graph is replayed; their contents may
//! change between replays. Kernels are compiled on their first eager use:
//! run each configuration once before capturing (module loading inside a
//! capture is not something to rely on).

#![warn(missing_docs)]

use crate::extent::Extent;
use redjit_codegen::spec::all_reduce::PACK_BYTES;

use crate::error::{Error, Result};
use crate::peer::IpcHandle;

fn err(rule: String) -> Error {
    Error::Comm {
        what: "graph capture".into(),
        rule,
    }
}

/// The count a rank sends when it cannot register its inputs.
const POISON: u32 = u32::MAX;

/// Slot 0 of every table: the staging buffers, used by eager calls.
pub const EAGER_SLOT: u32 = 0;

/// The captured inputs of one rank of a communicator.
#[derive(Debug, Clone)]
pub struct GraphBuffers {
    slots: u32,
    registered: u32,
    session: bool,
    pending: Vec<Vec<u64>>,
}

/// What a capture left to register: calls `first_slot..first_slot + inputs.len()`,
/// each with the input address of every local rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The table slot of the first captured call.
    pub first_slot: u32,
    /// Per captured call, the input address of each local rank.
    pub inputs: Vec<Vec<u64>>,
}

impl GraphBuffers {
    /// Room for `slots` captured calls over the communicator's life.
    pub fn new(slots: u32) -> GraphBuffers {
        GraphBuffers {
            slots,
            registered: 0,
            session: false,
            pending: Vec::new(),
        }
    }

    /// Opens a capture session (calls on a capturing stream are recorded).
    pub fn begin(&mut self) -> Result<()> {
        if self.session {
            return Err(err(
                "begin_capture while a capture session is open: end_capture (or cancel_capture) first"
                    .into(),
            ));
        }
        self.session = true;
        Ok(())
    }

    /// Whether a capture session is open.
    pub fn in_session(&self) -> bool {
        self.session
    }

    /// Calls captured and registered so far.
    pub fn registered(&self) -> u32 {
        self.registered
    }

    /// The slots past slot 0 that captures may use in all.
    pub fn capacity(&self) -> u32 {
        self.slots
    }

    /// Records one call made while the stream captures: `inputs` is the input
    /// address of each local rank. Returns the call's table slot.
    pub fn record(&mut self, inputs: &[u64]) -> Result<u32> {
        if let Some((r, a)) = inputs
            .iter()
            .enumerate()
            .find(|(_, a)| !a.is_multiple_of(u64::from(PACK_BYTES)))
        {
            return Err(err(format!(
                "local rank {r}'s input starts at {a:#x}: a captured input is read in place and must start on 16 bytes"
            )));
        }
        if !self.session {
            return Err(err(format!(
                "an all-reduce on a capturing stream reads unregistered inputs ({}): call Communicator::begin_capture before capturing and end_capture after, so they are registered",
                inputs
                    .iter()
                    .map(|a| format!("{a:#x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let used = self.registered as usize + self.pending.len();
        if used >= self.slots as usize {
            return Err(err(format!(
                "{} captured calls would exceed CommOptions::graph_slots = {}",
                used + 1,
                self.slots
            )));
        }
        self.pending.push(inputs.to_vec());
        Ok(1 + used as u32)
    }

    /// Closes the session and hands over what to register; the slots count as
    /// registered once the caller has written them (call [`Self::commit`]).
    pub fn finish(&mut self) -> Result<Pending> {
        if !self.session {
            return Err(err("end_capture without begin_capture".into()));
        }
        self.session = false;
        Ok(Pending {
            first_slot: 1 + self.registered,
            inputs: std::mem::take(&mut self.pending),
        })
    }

    /// Marks `count` slots (from the last [`Self::finish`]) as written.
    pub fn commit(&mut self, count: u32) {
        self.registered += count;
    }

    /// Drops an open session's records (a capture that failed).
    pub fn cancel(&mut self) {
        self.session = false;
        self.pending.clear();
    }
}

/// Checks that every rank captured the same number of calls (`counts[r]`:
/// rank r's); returns it.
pub fn agree(counts: &[u32]) -> Result<u32> {
    let Some(&first) = counts.first() else {
        return Err(err("no ranks to agree".into()));
    };
    if let Some((r, c)) = counts.iter().enumerate().find(|(_, c)| **c != first) {
        return Err(err(format!(
            "rank {r} captured {c} all-reduces, rank 0 {first}: every rank must capture the same calls in the same order (counts {counts:?})"
        )));
    }
    Ok(first)
}

/// One captured input as sent to peers in the one-process-per-GPU placement:
/// the IPC handle of its allocation, its offset in it, and the allocation's
/// address range in the sending process (which tells a re-allocation at freed
/// addresses from a live allocation, see [`PeerMappings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphRecord {
    /// The allocation's IPC handle.
    pub handle: IpcHandle,
    /// Bytes from the allocation's start to the input.
    pub offset: u64,
    /// The allocation's first address in the sending process.
    pub base: u64,
    /// The allocation's size in bytes.
    pub size: u64,
}

impl GraphRecord {
    /// Encoded length: the handle, then offset, base and size (u64 LE each).
    pub const BYTES: usize = 88;

    /// Encodes `records` back to back.
    pub fn encode_all(records: &[GraphRecord]) -> Vec<u8> {
        let mut v = Vec::with_capacity(records.len() * Self::BYTES);
        for r in records {
            v.extend_from_slice(&r.handle.0);
            for x in [r.offset, r.base, r.size] {
                v.extend_from_slice(&x.to_le_bytes());
            }
        }
        v
    }

    /// Decodes rank `from`'s records.
    pub fn decode_all(from: u32, bytes: &[u8]) -> Result<Vec<GraphRecord>> {
        if !bytes.len().is_multiple_of(Self::BYTES) {
            return Err(err(format!(
                "rank {from} sent {} bytes of graph records, a multiple of {} expected",
                bytes.len(),
                Self::BYTES
            )));
        }
        let word = |c: &[u8], k: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&c[64 + 8 * k..72 + 8 * k]);
            u64::from_le_bytes(w)
        };
        Ok(bytes
            .chunks_exact(Self::BYTES)
            .map(|c| {
                let mut h = [0u8; 64];
                h.copy_from_slice(&c[..64]);
                GraphRecord {
                    handle: IpcHandle(h),
                    offset: word(c, 0),
                    base: word(c, 1),
                    size: word(c, 2),
                }
            })
            .collect())
    }

    fn overlaps(&self, other: &GraphRecord) -> bool {
        let extent = |r: &GraphRecord| Extent {
            address: r.base,
            bytes: r.size,
        };
        extent(self).overlaps(&extent(other))
    }
}

/// The peers' allocations a process has opened for captured inputs, each
/// opened once (`M` is the mapping: `OpenedIpc` on a GPU, anything in a CPU
/// test). A peer that frees a captured input and allocates anew may get the
/// same addresses back, under a new handle; the driver then refuses to open
/// the new handle while the old mapping lives (CUDA_ERROR_ALREADY_MAPPED, seen
/// on 2 x H200 when a benchmark allocated each size's inputs afresh). Two live
/// allocations of one process never overlap, so a mapping of the same rank
/// whose range overlaps a new record's is of freed memory: it is closed
/// before the new one opens. (A graph still reading it read freed memory
/// already: captured inputs must outlive their graphs.)
#[derive(Debug)]
pub struct PeerMappings<M> {
    opened: Vec<(u32, GraphRecord, M)>,
}

impl<M> Default for PeerMappings<M> {
    fn default() -> Self {
        PeerMappings { opened: Vec::new() }
    }
}

impl<M> PeerMappings<M> {
    /// The mapping of rank `rank`'s allocation `rec`: the one opened before
    /// under the same handle, else `open(handle)`, after dropping the rank's
    /// mappings that overlap `rec`'s range.
    pub fn get_or_open(
        &mut self,
        rank: u32,
        rec: &GraphRecord,
        open: impl FnOnce(&IpcHandle) -> Result<M>,
    ) -> Result<&M> {
        let same = |(r, o, _): &(u32, GraphRecord, M)| {
            *r == rank && o.handle == rec.handle && o.base == rec.base
        };
        if let Some(i) = self.opened.iter().position(same) {
            return Ok(&self.opened[i].2);
        }
        self.opened
            .retain(|(r, o, _)| !(*r == rank && o.overlaps(rec)));
        let m = open(&rec.handle)?;
        self.opened.push((rank, *rec, m));
        Ok(&self.opened[self.opened.len() - 1].2)
    }

    /// Number of open mappings.
    pub fn len(&self) -> usize {
        self.opened.len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.opened.is_empty()
    }
}

/// The tables to write after a capture: for each captured call, its slot and
/// the input address of every rank in this process. `local` are the ranks
/// this process drives (the order of `pending.inputs[i]`); `peer(rank, i)`
/// gives a peer's input address for call `i` (opened through IPC), asked only
/// for ranks not in `local`.
pub fn tables(
    world: u32,
    local: &[u32],
    pending: &Pending,
    mut peer: impl FnMut(u32, usize) -> Result<u64>,
) -> Result<Vec<(u32, [u64; 8])>> {
    let mut out = Vec::with_capacity(pending.inputs.len());
    for (i, inputs) in pending.inputs.iter().enumerate() {
        if inputs.len() != local.len() {
            return Err(err(format!(
                "captured call {i} recorded {} inputs for {} local ranks",
                inputs.len(),
                local.len()
            )));
        }
        let mut t = [0u64; 8];
        for r in 0..world {
            t[r as usize] = match local.iter().position(|&l| l == r) {
                Some(k) => inputs[k],
                None => peer(r, i)?,
            };
        }
        out.push((pending.first_slot + i as u32, t));
    }
    Ok(out)
}

/// The one-process-per-GPU registration after a capture, apart from CUDA:
/// the ranks first agree on the number of captured calls through `exchange`
/// (every rank gets every count, so a disagreement is an error on every rank,
/// never a hang in the next exchange), then exchange `records` (this rank's
/// input of each captured call) and build the tables, with `open(rank,
/// record)` giving the address of a peer's allocation in this process (the
/// caller opens each allocation once: [`PeerMappings`]). `pending` holds this rank's inputs.
/// A rank whose `records` failed (an input that cannot be IPC-shared) still
/// takes part in the count exchange with a poison count, so its peers fail at
/// once instead of waiting out the rendezvous.
pub fn register_across_processes(
    rank: u32,
    world: u32,
    pending: &Pending,
    records: Result<Vec<GraphRecord>>,
    mut exchange: impl FnMut(&[u8]) -> Result<Vec<Vec<u8>>>,
    mut open: impl FnMut(u32, &GraphRecord) -> Result<u64>,
) -> Result<Vec<(u32, [u64; 8])>> {
    let count = pending.inputs.len() as u32;
    let records = match records {
        Ok(r) if r.len() == pending.inputs.len() => r,
        other => {
            let e = match other {
                Err(e) => e,
                Ok(r) => err(format!("{} records for {count} captured calls", r.len())),
            };
            exchange(&POISON.to_le_bytes())?;
            return Err(e);
        }
    };
    let counts = exchange(&count.to_le_bytes())?
        .iter()
        .enumerate()
        .map(|(r, c)| {
            <[u8; 4]>::try_from(c.as_slice())
                .map(u32::from_le_bytes)
                .map_err(|_| err(format!("rank {r} sent a count of {} bytes", c.len())))
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(r) = counts.iter().position(|&c| c == POISON) {
        return Err(err(format!(
            "rank {r} could not share its captured inputs (its own error says why)"
        )));
    }
    agree(&counts)?;
    let all = exchange(&GraphRecord::encode_all(&records))?
        .iter()
        .enumerate()
        .map(|(r, b)| GraphRecord::decode_all(r as u32, b))
        .collect::<Result<Vec<_>>>()?;
    tables(world, &[rank], pending, |r, i| {
        let rec = all
            .get(r as usize)
            .and_then(|recs| recs.get(i))
            .copied()
            .ok_or_else(|| err(format!("rank {r} sent no record for captured call {i}")))?;
        Ok(open(r, &rec)? + rec.offset)
    })
}
