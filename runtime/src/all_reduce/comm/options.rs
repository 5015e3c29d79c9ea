//! Where a communicator's ranks live and how it is set up.

use std::path::PathBuf;
use std::time::Duration;

use crate::all_reduce::choice::AlgoTable;

/// Where the ranks live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Rank r on GPU `ordinals[r]`, peer access enabled and proven between all.
    Devices {
        /// The GPU of each rank, in rank order.
        ordinals: Vec<usize>,
    },
    /// Test only: `world` ranks on one GPU; grids are sized so every rank's
    /// blocks are resident at once (a spinning block never waits on one that
    /// cannot be scheduled).
    SameGpu {
        /// The one GPU.
        ordinal: usize,
        /// Number of ranks (2..=8).
        world: u32,
    },
    /// One process per rank: this process drives rank `rank` of `world` on GPU
    /// `ordinal`, and meets its peers through the Unix socket `rendezvous` (the
    /// same path in every process) to exchange CUDA IPC handles (see
    /// [`crate::all_reduce::ipc`]).
    Process {
        /// This process's GPU.
        ordinal: usize,
        /// This process's rank.
        rank: u32,
        /// Number of ranks (2..=8), one per process.
        world: u32,
        /// The bootstrap socket's path.
        rendezvous: PathBuf,
        /// How many ranks share this GPU (1 on a real job; the one-GPU test runs
        /// 2): grids are sized so all of them are resident at once.
        gpu_share: u32,
    },
}

/// How a communicator is set up.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CommOptions {
    /// How long a block waits for a peer at a barrier before giving up.
    pub timeout: Duration,
    /// Bytes of each rank's registered staging buffer: the largest message.
    pub max_bytes: usize,
    /// Largest message (bytes per rank) the push kernel takes: each rank's
    /// push buffer holds two sets of `world` regions of this size. `None`:
    /// 32 MiB / world, at most `max_bytes` (a 32 MiB buffer per rank).
    pub push_bytes: Option<usize>,
    /// Largest message (bytes per rank) the LL push kernel takes: each rank's
    /// LL buffer holds two sets of `world` regions of twice this size (a
    /// 16-byte line carries 8 bytes). `None`: 512 KiB, at most `max_bytes`;
    /// rounded up to 512 bytes (the kernel lays out lines in groups of 32).
    pub ll_bytes: Option<usize>,
    /// How long [`Placement::Process`] waits for every peer at the rendezvous.
    pub join_timeout: Duration,
    /// How many all-reduces CUDA graphs may capture over the communicator's
    /// life (64 bytes of device table per rank each; see [`crate::all_reduce::graph`]).
    pub graph_slots: u32,
    /// The algorithm-choice table [`Communicator::choose`](crate::all_reduce::Communicator::choose) reads (see
    /// [`crate::all_reduce::choice`]; `REDJIT_AR_ALGO` in the environment overrides it).
    /// `None`: the rows of the first rank's device tuning table
    /// ([`AlgoTable::for_tuning`]).
    pub algos: Option<AlgoTable>,
    /// Whether to join the ranks in an NCCL communicator too, the table's
    /// fallback (see [`crate::all_reduce::nccl`]).
    pub nccl: NcclUse,
    /// cudarc's per-buffer event tracking off on the communicator's contexts
    /// ([`crate::RuntimeOptions::no_event_tracking`]): a tracked input costs
    /// the host an event wait and a record per call, a tracked output two
    /// waits and a record, a visible share of a small message's call. With it
    /// off, order the buffers' other uses with [`Communicator::stream`](crate::all_reduce::Communicator::stream)
    /// yourself.
    pub no_event_tracking: bool,
    /// Most blocks per rank a launch uses, 1..=[`MAX_BLOCKS`](redjit_codegen::spec::all_reduce::MAX_BLOCKS) (the push
    /// kernel's fixed grid too, which is also at most one block per SM the
    /// rank has). `None`: [`DEFAULT_MAX_BLOCKS`]. The choice table narrows it
    /// further for some calls
    /// (`Thresholds::narrow_max`: 4 ranks' two-stage `cp.async` calls to 16 MB).
    pub max_blocks: Option<u32>,
    /// Blocks per rank of the LL push kernel's fixed grid, 1..=[`MAX_BLOCKS`](redjit_codegen::spec::all_reduce::MAX_BLOCKS),
    /// also at most one per SM the rank has; a call launches only the blocks
    /// its message fills. Not capped by `max_blocks`: the LL kernel's time is
    /// latency, and from 256 KB more blocks carry each a pack fewer. The
    /// fused all-reduce + norm's LL and push kernels launch a block a row, at
    /// most this many.
    /// `None`: [`MAX_BLOCKS`](redjit_codegen::spec::all_reduce::MAX_BLOCKS). The push kernels' grids must be the same on
    /// every rank (block b of each rank owns the same packs): give every
    /// process the same `max_blocks` and `ll_blocks` on GPUs of one SM count
    /// (the IPC join refuses grids that differ).
    pub ll_blocks: Option<u32>,
}

impl CommOptions {
    /// Sets [`CommOptions::timeout`].
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
    /// Sets [`CommOptions::max_bytes`].
    pub fn max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }
    /// Sets [`CommOptions::push_bytes`].
    pub fn push_bytes(mut self, push_bytes: Option<usize>) -> Self {
        self.push_bytes = push_bytes;
        self
    }
    /// Sets [`CommOptions::ll_bytes`].
    pub fn ll_bytes(mut self, ll_bytes: Option<usize>) -> Self {
        self.ll_bytes = ll_bytes;
        self
    }
    /// Sets [`CommOptions::join_timeout`].
    pub fn join_timeout(mut self, join_timeout: Duration) -> Self {
        self.join_timeout = join_timeout;
        self
    }
    /// Sets [`CommOptions::graph_slots`].
    pub fn graph_slots(mut self, graph_slots: u32) -> Self {
        self.graph_slots = graph_slots;
        self
    }
    /// Sets [`CommOptions::algos`].
    pub fn algos(mut self, algos: Option<AlgoTable>) -> Self {
        self.algos = algos;
        self
    }
    /// Sets [`CommOptions::nccl`].
    pub fn nccl(mut self, nccl: NcclUse) -> Self {
        self.nccl = nccl;
        self
    }
    /// Sets [`CommOptions::no_event_tracking`].
    pub fn no_event_tracking(mut self, no_event_tracking: bool) -> Self {
        self.no_event_tracking = no_event_tracking;
        self
    }
    /// Sets [`CommOptions::max_blocks`].
    pub fn max_blocks(mut self, max_blocks: Option<u32>) -> Self {
        self.max_blocks = max_blocks;
        self
    }
    /// Sets [`CommOptions::ll_blocks`].
    pub fn ll_blocks(mut self, ll_blocks: Option<u32>) -> Self {
        self.ll_blocks = ll_blocks;
        self
    }
}

/// The grid cap of [`CommOptions::max_blocks`] when none is given.
pub const DEFAULT_MAX_BLOCKS: u32 = 64;

/// Whether a [`Communicator`](crate::all_reduce::Communicator) joins its ranks in NCCL as well.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NcclUse {
    /// No NCCL (the default: NCCL's set-up costs time and GPU memory).
    #[default]
    Off,
    /// NCCL if the library is found (`REDJIT_NCCL_LIB` or the loader's search
    /// path) and the placement allows it (one rank per GPU); otherwise none,
    /// and every call runs a kernel. Other NCCL failures are errors.
    IfAvailable,
    /// NCCL, or `Communicator::new` fails (library absent, ranks sharing a GPU).
    ///
    /// With `IfAvailable` or `Required`, GPUs whose peer access cannot be
    /// proven are no error when NCCL is there: every routed call then goes
    /// through NCCL ([`Communicator::all_reduce_routed`](crate::all_reduce::Communicator::all_reduce_routed)) and the kernel calls
    /// are errors naming the GPUs and why.
    Required,
}

impl Default for CommOptions {
    fn default() -> Self {
        CommOptions {
            timeout: Duration::from_secs(10),
            max_bytes: 64 << 20,
            push_bytes: None,
            ll_bytes: None,
            join_timeout: Duration::from_secs(60),
            graph_slots: 1024,
            algos: None,
            nccl: NcclUse::Off,
            no_event_tracking: false,
            max_blocks: None,
            ll_blocks: None,
        }
    }
}
