//! Joining the one-process-per-GPU placement ([`super::Placement::Process`]):
//! each process owns its rank's registered buffers (staging, signal, scratch),
//! zeroes its signal buffer and waits for the zeroes, then sends their CUDA IPC
//! handles to every peer through [`super::bootstrap::exchange`], opens the
//! peers' handles and fills the same pointer tables the one-process placements
//! use, so the kernels and the launch code are unchanged.
//!
//! The steps apart from CUDA live behind [`RankBuffers`], so their order and
//! the agreement checks are tested on the CPU with a fake
//! (`tests/all_reduce_ipc.rs`):
//!
//! ```
//! use redjit_runtime::all_reduce::ipc::{RankBuffers, RankCard, join};
//! use redjit_runtime::peer::IpcHandle;
//!
//! // A stand-in for one rank's device buffers (the real one is the communicator's).
//! struct Fake(u32);
//! impl RankBuffers for Fake {
//!     type Mapping = ();
//!     fn zero_signals(&mut self) -> redjit_runtime::Result<()> { Ok(()) }
//!     fn sizes(&self) -> [u64; 3] { [1 << 20, 1 << 19, 8192] }
//!     fn grids(&self) -> [u32; 2] { [64, 128] }
//!     fn addresses(&self) -> [u64; 3] { [0x1000, 0x2000, 0x3000].map(|a| a + (self.0 as u64) * 0x10_0000) }
//!     fn handles(&mut self) -> redjit_runtime::Result<[IpcHandle; 3]> { Ok([IpcHandle([self.0 as u8; 64]); 3]) }
//!     fn open(&mut self, _peer: &RankCard, h: &IpcHandle) -> redjit_runtime::Result<(u64, ())> {
//!         Ok((0xdead_0000 + h.0[0] as u64, ()))
//!     }
//! }
//! // World of 1 for the example: the exchange just returns this rank's card.
//! let joined = join(&mut Fake(0), 0, 1, 42, |card| Ok(vec![card.to_vec()]))?;
//! assert_eq!(joined.tables[0][0], 0x1000); // rank 0's own staging address
//! # Ok::<(), redjit_runtime::Error>(())
//! ```
//!
//! Ordering (each a failure mode peers shipped and fixed):
//! - the signal buffer is zeroed, and the zeroes are complete on the device,
//!   **before** its handle leaves the process: zeroing after the exchange could
//!   wipe a fast peer's first signal (TVM PR #16797). `join` calls
//!   `zero_signals` first and nothing else touches the signal buffer afterwards
//!   except the kernels; `Communicator::rebuild` zeroes and then meets every
//!   peer at the rendezvous again before any rank may launch.
//! - ranks agree on the world size, on each buffer's size, on the push
//!   kernels' fixed grids (block b of every rank owns the same packs) and on
//!   the card's length before any handle is opened (vLLM PR #39791); the
//!   bootstrap itself refuses payloads of different lengths.
//! - a card from this very process is refused: the driver does not open an IPC
//!   handle in the process that made it (`cuIpcOpenMemHandle` fails with
//!   `CUDA_ERROR_INVALID_CONTEXT`); ranks of one process use the one-process
//!   placements.
//!
//! Two processes on one GPU (the GPU test, `tests/gpu_all_reduce_ipc.rs`): the
//! driver documents legacy IPC between processes of one device as supported
//! (PyTorch shares CUDA tensors between processes that way). If it refuses,
//! `Communicator::new` returns the driver's error from `cuIpcOpenMemHandle`
//! (named in the message) and nothing is launched; the test fails quoting it.
//! Without MPS, kernels of two processes on one GPU are time-sliced, not
//! concurrent: a spinning block is preempted at the end of its slice and the
//! peer's kernel then runs, so each barrier costs up to a time slice but
//! completes (the test keeps its call count small). With MPS the two
//! processes' blocks share the SMs, which is why `gpu_share` sizes the grids so
//! that both ranks' blocks are resident at once.

#![warn(missing_docs)]

use crate::error::{Error, Result};
use crate::peer::IpcHandle;

/// The registered buffers of a rank, in the order of the pointer tables the
/// kernels take (`in`, `sig`, `tmp`).
pub const BUFFERS: [&str; 3] = ["staging", "signal", "scratch"];

const MAGIC: u32 = 0x7264_6a63; // "rdjc"

/// What one rank sends to every peer: who it is, how large its buffers are,
/// and their IPC handles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankCard {
    /// The sender's rank.
    pub rank: u32,
    /// The world size the sender was started with.
    pub world: u32,
    /// The sender's process id (a card from this process cannot be opened).
    pub pid: u32,
    /// Blocks per rank of the push kernels' fixed grids (push, LL push).
    pub grids: [u32; 2],
    /// Bytes of each buffer, in [`BUFFERS`] order.
    pub sizes: [u64; 3],
    /// IPC handles of each buffer, in [`BUFFERS`] order.
    pub handles: [IpcHandle; 3],
}

impl RankCard {
    /// Encoded length: magic, rank, world, pid, 2 grids (u32 LE), 3 sizes
    /// (u64 LE), 3 handles.
    pub const BYTES: usize = 6 * 4 + 3 * 8 + 3 * 64;

    /// The card's bytes, as sent through the bootstrap.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::BYTES);
        for w in [
            MAGIC,
            self.rank,
            self.world,
            self.pid,
            self.grids[0],
            self.grids[1],
        ] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        for s in self.sizes {
            v.extend_from_slice(&s.to_le_bytes());
        }
        for h in &self.handles {
            v.extend_from_slice(&h.0);
        }
        v
    }

    /// Reads a card received from rank `from`.
    pub fn decode(from: u32, bytes: &[u8]) -> Result<RankCard> {
        if bytes.len() != Self::BYTES {
            return Err(err(format!(
                "rank {from}'s card has {} bytes, a card has {}",
                bytes.len(),
                Self::BYTES
            )));
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
        if u32_at(0) != MAGIC {
            return Err(err(format!(
                "rank {from}'s card starts with {:#x}, not a redjit rank card",
                u32_at(0)
            )));
        }
        let handle = |k: usize| {
            let mut h = [0u8; 64];
            h.copy_from_slice(&bytes[48 + 64 * k..48 + 64 * (k + 1)]);
            IpcHandle(h)
        };
        Ok(RankCard {
            rank: u32_at(4),
            world: u32_at(8),
            pid: u32_at(12),
            grids: [u32_at(16), u32_at(20)],
            sizes: [u64_at(24), u64_at(32), u64_at(40)],
            handles: [handle(0), handle(1), handle(2)],
        })
    }
}

fn err(rule: String) -> Error {
    Error::Comm {
        what: "IPC join".into(),
        rule,
    }
}

/// One rank's registered buffers as the join sees them: the CUDA-free steps a
/// fake can stand in for on the CPU.
pub trait RankBuffers {
    /// What keeps a peer's opened buffer mapped (closed on drop).
    type Mapping;
    /// Zeroes this rank's signal buffer and error word and waits until the
    /// zeroes are in device memory.
    fn zero_signals(&mut self) -> Result<()>;
    /// Bytes of each buffer, in [`BUFFERS`] order.
    fn sizes(&self) -> [u64; 3];
    /// Blocks per rank of the push kernels' fixed grids (push, LL push).
    fn grids(&self) -> [u32; 2];
    /// This process's addresses of its own buffers, in [`BUFFERS`] order.
    fn addresses(&self) -> [u64; 3];
    /// IPC handles of the buffers, in [`BUFFERS`] order.
    fn handles(&mut self) -> Result<[IpcHandle; 3]>;
    /// Maps one of `peer`'s buffers into this process; returns its address here.
    fn open(&mut self, peer: &RankCard, handle: &IpcHandle) -> Result<(u64, Self::Mapping)>;
}

/// A joined rank: the pointer tables (`[buffer][rank]`, [`BUFFERS`] order, slots
/// past the world zero) and the mappings that keep the peers' buffers open.
#[derive(Debug)]
pub struct Joined<M> {
    /// Address of each rank's buffer in this process.
    pub tables: [[u64; 8]; 3],
    /// The opened peer buffers (dropping them unmaps them).
    pub mappings: Vec<M>,
}

/// Joins rank `rank` of `world`: zeroes the signals, takes the handles, sends
/// this rank's card through `exchange` (which returns every rank's card in
/// rank order: [`super::bootstrap::exchange`] in a real job), checks that every
/// card agrees, and opens the peers' buffers. `pid` is this process's id.
pub fn join<B: RankBuffers>(
    buffers: &mut B,
    rank: u32,
    world: u32,
    pid: u32,
    exchange: impl FnOnce(&[u8]) -> Result<Vec<Vec<u8>>>,
) -> Result<Joined<B::Mapping>> {
    if rank >= world || world as usize > 8 {
        return Err(err(format!(
            "rank {rank} of world {world}: rank below world, world at most 8"
        )));
    }
    // Zeroed and complete before any peer can learn the addresses (TVM PR #16797).
    buffers.zero_signals()?;
    let mine = RankCard {
        rank,
        world,
        pid,
        grids: buffers.grids(),
        sizes: buffers.sizes(),
        handles: buffers.handles()?,
    };
    let cards = exchange(&mine.encode())?;
    if cards.len() != world as usize {
        return Err(err(format!(
            "the exchange returned {} cards for {world} ranks",
            cards.len()
        )));
    }
    let cards = cards
        .iter()
        .enumerate()
        .map(|(r, c)| RankCard::decode(r as u32, c))
        .collect::<Result<Vec<_>>>()?;
    // Every card agrees before any handle is opened.
    for (r, c) in cards.iter().enumerate() {
        if c.rank != r as u32 {
            return Err(err(format!(
                "slot {r} holds the card of rank {}: cards come in rank order",
                c.rank
            )));
        }
        if c.world != world {
            return Err(err(format!(
                "rank {r} says the world has {} ranks, rank {rank} says {world}",
                c.world
            )));
        }
        for (k, name) in BUFFERS.iter().enumerate() {
            if c.sizes[k] != mine.sizes[k] {
                return Err(err(format!(
                    "rank {r}'s {name} buffer has {} bytes, rank {rank}'s {}: every rank uses the same CommOptions::max_bytes",
                    c.sizes[k], mine.sizes[k]
                )));
            }
        }
        if c.grids != mine.grids {
            return Err(err(format!(
                "rank {r} launches the push and LL kernels on {} and {} blocks, rank {rank} on {} and {}: every process takes the same CommOptions::max_blocks and ll_blocks, on GPUs of one SM count",
                c.grids[0], c.grids[1], mine.grids[0], mine.grids[1]
            )));
        }
        if r as u32 != rank && c.pid == pid {
            return Err(err(format!(
                "ranks {rank} and {r} are both in process {pid}: the driver does not open IPC handles in the process that made them; drive them from one communicator (Placement::Devices or SameGpu)"
            )));
        }
    }
    let own = buffers.addresses();
    let mut tables = [[0u64; 8]; 3];
    let mut mappings = Vec::new();
    for (r, c) in cards.iter().enumerate() {
        for k in 0..BUFFERS.len() {
            tables[k][r] = if r as u32 == rank {
                own[k]
            } else {
                let (a, m) = buffers.open(c, &c.handles[k])?;
                mappings.push(m);
                a
            };
        }
    }
    Ok(Joined { tables, mappings })
}
