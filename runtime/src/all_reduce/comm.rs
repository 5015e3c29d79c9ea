//! The communicator of one process: R ranks driven from this process, either on
//! R GPUs with peer access (proven by `peer::enable_and_prove`), or, for tests on
//! one GPU, all R ranks on the same GPU (R buffer sets, R streams). The kernels
//! and the barrier are the same; only the pointers differ.
//!
//! ```no_run
//! use redjit_runtime::all_reduce::{Call, CommOptions, Communicator, Placement};
//! use redjit_runtime::{AllReduceAlgo, KernelInput, KernelOutput, Op};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let comm = Communicator::new(Placement::SameGpu { ordinal: 0, world: 4 }, CommOptions::default())?;
//! let s = comm.stream();
//! let ins: Vec<_> = (0..4).map(|r| s.clone_htod(&vec![r as f32; 1000])).collect::<Result<_, _>>()?;
//! let mut outs: Vec<_> = (0..4).map(|_| s.alloc_zeros::<f32>(1000)).collect::<Result<_, _>>()?;
//! let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
//! let mut outputs: Vec<&mut dyn KernelOutput> = outs.iter_mut().map(|b| b as &mut dyn KernelOutput).collect();
//! comm.all_reduce(&inputs, &mut outputs, Call::sum(AllReduceAlgo::OneShot))?;
//! comm.synchronize()?; // a barrier timeout surfaces here, and breaks the communicator
//! # Ok(()) }
//! ```
//!
//! Ordering: a call is ordered after earlier work on the communicator's main
//! stream (`stream()`; the first local rank issues there, the other rank
//! streams wait for it) and later work there waits for it. Inputs are copied
//! into each rank's registered staging buffer (any alignment; an input that is
//! the staging buffer itself, [`Communicator::registered`], is not copied);
//! outputs must start on 16 bytes. One call is issued at a time: a second
//! thread issuing meanwhile gets an error (an interleaved issue order across
//! ranks would deadlock the barrier: SGLang issue #31117).
//!
//! The push kernel (`AllReduceAlgo::Push`) reads each rank's input in place
//! (16-byte aligned) and writes it into the peers' push buffers, which live in
//! each rank's scratch after the two-stage slices (two sets of `world` regions
//! of `CommOptions::push_bytes`); it runs on a grid fixed per communicator
//! (`push_blocks`), which its alternation of buffer sets relies on, and takes
//! no input table slot, eager or captured. The LL push kernel
//! (`AllReduceAlgo::PushLl`) does the same on flagged 16-byte lines (8 bytes of
//! data each) into LL buffers after the push buffers (two sets of `world`
//! regions of twice `CommOptions::ll_bytes`), with no barrier.
//!
//! One process per GPU ([`Placement::Process`]): each process creates its
//! rank's buffers, zeroes its signal buffer and synchronises, then exchanges
//! the IPC handles of staging, signal and scratch through
//! [`super::bootstrap::exchange`] and opens the peers' ([`super::ipc`]); the
//! pointer tables then hold those addresses and the kernels and this launch
//! code are unchanged. Each process passes one input and one output (its own).
//!
//! CUDA graphs: between [`Communicator::begin_capture`] and
//! [`Communicator::end_capture`], calls on the capturing main stream read their
//! inputs in place through table slots registered after capture, so replays
//! see the captured kernel arguments with the inputs' current contents (see
//! [`super::graph`]).
//!
//! NCCL: with `CommOptions::nccl` the communicator also joins its ranks in an
//! NCCL communicator ([`super::nccl`]), and [`Communicator::all_reduce_routed`]
//! sends the sizes the table routes to NCCL there ([`super::choice::Route`]).
//! Where peer access is missing or ranks span hosts, [`super::nccl::NcclComm`]
//! is the communicator on its own.
//!
//! Quantized transport: [`Communicator::all_reduce_quantized`] takes f32 and
//! exchanges bf16 rounded stochastically ([`super::quant`]); it runs the
//! kernels only (the NCCL route has no quantized mode).
//!
//! Hierarchical mode ([`Communicator::all_reduce_hierarchical`]; run on one
//! H100 with H = 1, see below: `tests/gpu_all_reduce_hierarchical.rs`):
//! H hosts of R GPUs each, one
//! [`Communicator`] per host and, for each local rank index r, an NCCL
//! communicator of the H ranks that hold index r on their host (one
//! [`NcclComm`] per local rank; `NcclPlacement::Given` with an id per index,
//! handed out like the flat NCCL id). One call is three steps on each rank's
//! stream, in order:
//! 1. the two-stage kernel's reduce-scatter alone (a `stage` of the spec; the
//!    start barrier, then slice r of the node's sum into rank r's scratch,
//!    reduced in rank order, no output written);
//! 2. `ncclAllReduce` in place on slice r of rank r's scratch over the H ranks
//!    of index r (`NcclComm::issue_in_place`; the scratch is the
//!    communicator's own registered buffer);
//! 3. the all-gather alone: a start barrier (every rank's NCCL call precedes
//!    its kernel on its stream, so when all have arrived every slice is final),
//!    then every rank copies all R slices, its own included, from the owners'
//!    scratch into its output. As in the two-stage kernel, no end barrier: a
//!    rank rewrites its scratch only after the next call's start barrier.
//!
//! Messages must be whole 16-byte packs (the flat kernels reduce the tail
//! element by element from the inputs, which the NCCL step does not see); a
//! ragged message is refused with a typed error. Bits: every rank of every host
//! ends with the same value (the node sums are reduced in rank order, NCCL's
//! result is the same on the H ranks of an index), but it differs from the
//! flat all-reduce's rank-order sum over all R x H inputs. What one host can
//! test: H = 1 with R ranks on one GPU and one-rank NCCL communicators, which
//! must equal the two-stage kernel bit for bit (NCCL's one-rank sum is the
//! identity). What it cannot: H >= 2, the cross-host NCCL step and its timing.

#![warn(missing_docs)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use cudarc::driver::sys;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg,
    SyncOnDrop,
};
use redjit_codegen::spec::all_reduce::{ArStage, MAX_BLOCKS, PACK_BYTES, signal};
use redjit_codegen::{AllReduceAlgo, AllReduceSpec, DType, KernelSpec, Op};

pub use super::call::{Call, check_call, check_call_for};
use super::call::{check_output_alignment, comm_err};
use super::choice::{AlgoTable, Choice, Route};
use super::fork::StreamFork;
use super::graph::{GraphBuffers, GraphRecord, PeerMappings};
use super::kernels::{KernelCache, LoadedKernel};
use super::nccl::{NcclComm, NcclLib, NcclPlacement};
use super::protocol::BarrierTimeout;
use super::quant::Quantize;
use crate::elem::{KernelInput, KernelOutput};
use crate::error::{DriverContext, Error, Result};
use crate::peer::{IpcHandle, LegacyAlloc, OpenedIpc};
use crate::reduce_copy::{LaunchOptions, ReduceCopyArgs, Stochastic};
use crate::runtime::Runtime;
use crate::tracking::TrackingPaused;

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
    /// [`super::ipc`]).
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
    /// life (64 bytes of device table per rank each; see [`super::graph`]).
    pub graph_slots: u32,
    /// The algorithm-choice table [`Communicator::choose`] reads (see
    /// [`super::choice`]; `REDJIT_AR_ALGO` in the environment overrides it).
    /// `None`: the rows of the first rank's device tuning table
    /// ([`AlgoTable::for_tuning`]).
    pub algos: Option<AlgoTable>,
    /// Whether to join the ranks in an NCCL communicator too, the table's
    /// fallback (see [`super::nccl`]).
    pub nccl: NcclUse,
    /// cudarc's per-buffer event tracking off on the communicator's contexts
    /// ([`crate::RuntimeOptions::no_event_tracking`]): a tracked input costs
    /// the host an event wait and a record per call, a tracked output two
    /// waits and a record, a visible share of a small message's call. With it
    /// off, order the buffers' other uses with [`Communicator::stream`]
    /// yourself.
    pub no_event_tracking: bool,
    /// Most blocks per rank a launch uses, 1..=[`MAX_BLOCKS`] (the push
    /// kernel's fixed grid too, which is also at most one block per SM the
    /// rank has). `None`: [`DEFAULT_MAX_BLOCKS`]. The choice table narrows it
    /// further for some calls
    /// (`Thresholds::narrow_max`: 4 ranks' two-stage `cp.async` calls to 16 MB).
    pub max_blocks: Option<u32>,
    /// Blocks per rank of the LL push kernel's fixed grid, 1..=[`MAX_BLOCKS`],
    /// also at most one per SM the rank has; a call launches only the blocks
    /// its message fills. Not capped by `max_blocks`: the LL kernel's time is
    /// latency, and from 256 KB more blocks carry each a pack fewer.
    /// `None`: [`MAX_BLOCKS`]. The push kernels' grids must be the same on
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

/// Whether a [`Communicator`] joins its ranks in NCCL as well.
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
    /// through NCCL ([`Communicator::all_reduce_routed`]) and the kernel calls
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

/// Where a launch's kernels find their inputs: slot `n` of the input tables
/// (staged or captured inputs), or each local rank's own input in place (the
/// push kernel).
#[derive(Clone, Copy)]
enum InputsAt<'a> {
    Table(u32),
    InPlace(&'a [u64]),
}

/// A call's inputs, each local rank's address read once (on first use) on
/// the rank's own stream. A tracked slice's address costs the host an event
/// wait and an event record, and a call may want the addresses three times
/// (the route, the push kernel's check, the staging copy or graph slot). The
/// reads' guards live as long as this, so each records its read after the
/// call's work is issued.
struct CallInputs<'a> {
    bufs: &'a [&'a dyn KernelInput],
    ranks: &'a [Rank],
    read: std::cell::OnceCell<(Vec<u64>, Vec<SyncOnDrop<'a>>)>,
}

impl<'a> CallInputs<'a> {
    fn new(bufs: &'a [&'a dyn KernelInput], ranks: &'a [Rank]) -> Self {
        CallInputs {
            bufs,
            ranks,
            read: std::cell::OnceCell::new(),
        }
    }

    /// Each local rank's input address, in rank order.
    fn addresses(&self) -> &[u64] {
        &self
            .read
            .get_or_init(|| {
                self.bufs
                    .iter()
                    .zip(self.ranks)
                    .map(|(i, r)| i.read_address(&r.stream))
                    .unzip()
            })
            .0
    }
}

/// A call's outputs' addresses, read for writing on each rank's stream; the
/// guards record the writes when this is dropped, after the call's work.
struct CallOutputs<'a> {
    addresses: Vec<u64>,
    _written: Vec<SyncOnDrop<'a>>,
}

/// One kernel launch on every local rank, checked: the kernel, the message
/// length, the call and the outputs' addresses.
#[derive(Clone, Copy)]
struct Launch<'a> {
    spec: &'a AllReduceSpec,
    kernel: &'a LoadedKernel,
    n: usize,
    call: Call,
    out_addresses: &'a [u64],
    quant: Option<Quantize>,
}

/// Where a push kernel's buffers are in each rank's scratch.
#[derive(Clone, Copy)]
struct InPlace {
    /// The fixed grid.
    grid: u32,
    offset: u64,
    /// Bytes of one rank's region (the kernel's `window` argument).
    region: u64,
    /// The largest message it takes, and the option that sets it.
    max_bytes: u64,
    option: &'static str,
}

/// The pointer table the kernels take by value (`rj_ar_ptrs`).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct PtrTable([u64; 8]);
// SAFETY: plain old data with the layout of `struct rj_ar_ptrs { rj_u64 p[8]; }`.
unsafe impl DeviceRepr for PtrTable {}

struct Rank {
    /// This rank's number in the world.
    id: u32,
    /// Index into `runtimes`.
    rt: usize,
    stream: Arc<CudaStream>,
    // cuMemAlloc'd (not cudarc's pool): IPC-shareable and peer-accessible.
    staging: LegacyAlloc,
    scratch: LegacyAlloc,
    signal: LegacyAlloc,
    /// The input tables the kernels read (64 bytes each): slot 0 the staging
    /// buffers, slots 1.. the captured calls' inputs (see [`super::graph`]).
    in_tables: LegacyAlloc,
    error: CudaSlice<u32>,
    /// `error`'s device address, read once: the communicator alone orders the
    /// word's uses (a tracked read per launch would cost an event wait and a
    /// record on the host).
    error_ptr: u64,
}

/// A call being issued: the one-at-a-time lock, whether the main stream
/// captures, and the paused event tracking of a capturing call.
struct Issue<'a> {
    _lock: std::sync::MutexGuard<'a, ()>,
    capturing: bool,
    _paused: Option<TrackingPaused>,
}

/// R ranks driven from this process: their registered staging, scratch and
/// signal buffers, one stream per rank, and the all-reduce kernels for each
/// dtype, op and algorithm, compiled on first use.
pub struct Communicator {
    placement: Placement,
    world: u32,
    /// Every rank's staging, signal and scratch address in this process (peers'
    /// through their IPC mappings in [`Placement::Process`]).
    tables: [PtrTable; 3],
    /// The peers' buffers opened through IPC ([`Placement::Process`] only).
    _mappings: Vec<OpenedIpc>,
    runtimes: Vec<Runtime>,
    /// The ranks this process launches (all of them, or its own).
    ranks: Vec<Rank>,
    opts: CommOptions,
    /// The algorithm choice: `opts.algos`, else the device table's.
    algos: AlgoTable,
    broken: Mutex<Option<String>>,
    issuing: Mutex<()>,
    graph: Mutex<GraphBuffers>,
    /// Peers' allocations opened for captured inputs (each opened once).
    graph_mappings: Mutex<PeerMappings<OpenedIpc>>,
    /// The same ranks in NCCL (`CommOptions::nccl`), the table's fallback.
    nccl: Option<NcclComm>,
    /// Peer access between two of the GPUs could not be proven (why): the
    /// kernels cannot run, and every routed call goes through NCCL.
    peer_missing: Option<String>,
    /// Orders the rank streams with the main stream.
    fork: StreamFork,
    /// The kernels launched so far and their resident shares, by spec.
    kernels: KernelCache,
    /// The push kernel's region size (bytes per rank) and where its buffer
    /// starts in each rank's scratch.
    push_window: u64,
    push_offset: u64,
    /// The LL push kernel's largest message (bytes per rank; its regions are
    /// twice this) and where its buffer starts in each rank's scratch.
    ll_max: u64,
    ll_offset: u64,
    /// The push kernels' grids, fixed at set-up (block b always owns the
    /// same packs, which its barrier count's parity relies on).
    push_blocks: u32,
    ll_blocks: u32,
    /// The grid cap ([`CommOptions::max_blocks`]).
    max_blocks: u32,
}

const TABLE_BYTES: u64 = std::mem::size_of::<PtrTable>() as u64;

/// Writes `table` into slot `slot` of `tables` (synchronous).
fn write_table(tables: &LegacyAlloc, slot: u32, table: &[u64; 8]) -> Result<()> {
    let at = tables.ptr() + u64::from(slot) * TABLE_BYTES;
    if (u64::from(slot) + 1) * TABLE_BYTES > tables.bytes() as u64 {
        return Err(comm_err(
            "graph capture",
            format!("table slot {slot} is past the table array"),
        ));
    }
    // SAFETY: `at` .. `at + 64` lies inside the live allocation (checked); the
    // source is a live host array of 64 bytes; the copy is synchronous.
    unsafe { sys::cuMemcpyHtoD_v2(at, table.as_ptr().cast(), TABLE_BYTES as usize) }
        .result()
        .during(|| format!("writing input table slot {slot}"))
}

fn addr<T>(s: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    cudarc::driver::DevicePtr::device_ptr(s, stream).0
}

/// `len` elements of `dtype` at the start of a local rank's registered
/// staging buffer ([`Communicator::registered`]): the buffer the kernels read
/// peers' inputs from. An all-reduce whose input is this view copies nothing
/// (an eager call otherwise copies its input here first); a quantized call
/// rounds its input into it.
#[derive(Debug, Clone, Copy)]
pub struct Registered<'c> {
    address: u64,
    dtype: DType,
    len: usize,
    _comm: std::marker::PhantomData<&'c Communicator>,
}

impl Registered<'_> {
    /// The device address of the first element.
    pub fn address(&self) -> u64 {
        self.address
    }
}

// SAFETY: a registered buffer is the communicator's own allocation of `len`
// elements of `dtype` at `address`, alive while the borrow of the
// communicator is.
unsafe impl KernelInput for Registered<'_> {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push_input<'a>(&'a self, args: &mut LaunchArgs<'a>) {
        args.arg(&self.address);
    }
    fn address(&self, _stream: &CudaStream) -> u64 {
        self.address
    }
}

// SAFETY: as for the input; the `&mut` borrow keeps other users off.
unsafe impl KernelOutput for Registered<'_> {
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push_output<'a>(&'a mut self, args: &mut LaunchArgs<'a>) {
        args.arg(&self.address);
    }
    fn address(&self, _stream: &CudaStream) -> u64 {
        self.address
    }
}

impl Communicator {
    /// Sets up every rank of `placement`: a runtime per GPU (peer access enabled
    /// and proven for [`Placement::Devices`]), its buffers allocated and zeroed.
    pub fn new(placement: Placement, opts: CommOptions) -> Result<Communicator> {
        // A bad override fails before any GPU work.
        let forced = opts.algos.clone().map(AlgoTable::with_env).transpose()?;
        if forced.is_none() {
            AlgoTable::ladder().with_env()?;
        }
        let (ordinals, world, local): (Vec<usize>, u32, Vec<u32>) = match &placement {
            Placement::Devices { ordinals } => {
                let w = ordinals.len() as u32;
                (ordinals.clone(), w, (0..w).collect())
            }
            Placement::SameGpu { ordinal, world } => {
                (vec![*ordinal], *world, (0..*world).collect())
            }
            Placement::Process {
                ordinal,
                rank,
                world,
                gpu_share,
                ..
            } => {
                if *rank >= *world || *gpu_share == 0 || *gpu_share > *world {
                    return Err(comm_err(
                        "placement",
                        format!(
                            "rank {rank} of world {world} sharing its GPU with {gpu_share}: rank below world, 1 <= gpu_share <= world"
                        ),
                    ));
                }
                (vec![*ordinal], *world, vec![*rank])
            }
        };
        let spec = AllReduceSpec {
            world,
            ..AllReduceSpec::default()
        };
        spec.validate()?;
        let max_blocks = opts.max_blocks.unwrap_or(DEFAULT_MAX_BLOCKS);
        let ll_cap = opts.ll_blocks.unwrap_or(MAX_BLOCKS);
        for (what, blocks) in [("max_blocks", max_blocks), ("ll_blocks", ll_cap)] {
            if !(1..=MAX_BLOCKS).contains(&blocks) {
                return Err(comm_err(
                    what,
                    format!(
                        "{blocks}: a launch uses 1 to {MAX_BLOCKS} blocks per rank (the signal buffer's slots)"
                    ),
                ));
            }
        }
        if opts.max_bytes == 0 || opts.timeout.is_zero() || opts.join_timeout.is_zero() {
            return Err(comm_err(
                "options",
                format!(
                    "max_bytes {}, timeout {:?} and join_timeout {:?} must be positive",
                    opts.max_bytes, opts.timeout, opts.join_timeout
                ),
            ));
        }
        let runtimes = ordinals
            .iter()
            .map(|&ordinal| {
                Runtime::with_options(crate::RuntimeOptions {
                    ordinal,
                    no_event_tracking: opts.no_event_tracking,
                    ..crate::RuntimeOptions::default()
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let algos = match forced {
            Some(t) => t,
            None => AlgoTable::for_tuning(&runtimes[0].tuning().tuning).with_env()?,
        };
        // Without proven peer access the kernels cannot run; with NCCL asked for
        // (and found, below) every call goes through NCCL instead.
        let mut peer_missing: Option<String> = None;
        'pairs: for i in 0..runtimes.len() {
            for j in i + 1..runtimes.len() {
                if let Err(e) =
                    crate::peer::enable_and_prove(runtimes[i].context(), runtimes[j].context())
                {
                    if opts.nccl == NcclUse::Off {
                        return Err(e);
                    }
                    peer_missing = Some(format!("GPUs {} and {}: {e}", ordinals[i], ordinals[j]));
                    break 'pairs;
                }
            }
        }
        let staging_bytes = opts.max_bytes.next_multiple_of(PACK_BYTES as usize);
        // Scratch: the two-stage slices, then the push buffer (its own bytes:
        // a push call may start while a peer still gathers from the slices).
        let push_window = opts
            .push_bytes
            .unwrap_or((32 << 20) / world as usize)
            .min(opts.max_bytes)
            .next_multiple_of(PACK_BYTES as usize);
        let push_offset = ((staging_bytes / world as usize).next_multiple_of(PACK_BYTES as usize)
            + PACK_BYTES as usize)
            .next_multiple_of(256);
        // Whole groups of 32 packs: the LL kernel lays a group's lines out
        // together (ll_line in the template).
        let ll_max = opts
            .ll_bytes
            .unwrap_or(512 << 10)
            .min(opts.max_bytes)
            .next_multiple_of(32 * PACK_BYTES as usize);
        let ll_offset = push_offset + 2 * world as usize * push_window;
        let scratch_bytes = ll_offset + 2 * world as usize * 2 * ll_max;
        let per_gpu = match &placement {
            Placement::Devices { .. } => 1,
            Placement::SameGpu { world, .. } => *world,
            Placement::Process { gpu_share, .. } => *gpu_share,
        };
        // One block per SM is always resident (the kernels' launch bound).
        let sms = runtimes[0].device().sm_count / per_gpu;
        let push_blocks = sms.clamp(1, max_blocks);
        let ll_blocks = sms.clamp(1, ll_cap);
        let mut ranks = Vec::new();
        for &id in &local {
            let r = id as usize;
            let rt = if runtimes.len() == 1 { 0 } else { r };
            let ctx = runtimes[rt].context();
            // The first local rank issues on the main stream itself: one
            // cross-stream hop less each way per call, and none at all with
            // one rank per process.
            let stream = if ranks.is_empty() {
                runtimes[rt].stream().clone()
            } else {
                ctx.new_stream()
                    .during(|| format!("rank {r}: creating its stream"))?
            };
            let alloc = |bytes: usize| LegacyAlloc::zeroed(ctx, bytes);
            let error = stream
                .alloc_zeros::<u32>(1)
                .during(|| format!("rank {r}: error word"))?;
            let rank = Rank {
                id,
                rt,
                error_ptr: addr(&error, &stream),
                error,
                staging: alloc(staging_bytes)?,
                scratch: alloc(scratch_bytes)?,
                // Zeroed (synchronously) before any peer learns its address.
                signal: alloc(signal::BYTES)?,
                in_tables: alloc((1 + opts.graph_slots as usize) * TABLE_BYTES as usize)?,
                stream,
            };
            ranks.push(rank);
        }
        for r in &ranks {
            r.stream
                .synchronize()
                .during(|| "zeroing the signal buffers".into())?;
        }
        let mut tables = [PtrTable::default(); 3];
        let mut mappings = Vec::new();
        if let Placement::Process {
            rank, rendezvous, ..
        } = &placement
        {
            let mut own = CudaRank {
                rank: &mut ranks[0],
                ctx: runtimes[0].context().clone(),
                grids: [push_blocks, ll_blocks],
            };
            let joined = super::ipc::join(&mut own, *rank, world, std::process::id(), |card| {
                super::bootstrap::exchange(rendezvous, *rank, world, card, opts.join_timeout)
            })?;
            for (t, j) in tables.iter_mut().zip(joined.tables) {
                t.0 = j;
            }
            mappings = joined.mappings;
        } else {
            for rank in &ranks {
                let r = rank.id as usize;
                tables[0].0[r] = rank.staging.ptr();
                tables[1].0[r] = rank.signal.ptr();
                tables[2].0[r] = rank.scratch.ptr();
            }
        }
        for rank in &ranks {
            runtimes[rank.rt]
                .context()
                .bind_to_thread()
                .during(|| "binding the context".into())?;
            write_table(&rank.in_tables, super::graph::EAGER_SLOT, &tables[0].0)?;
        }
        let graph_slots = opts.graph_slots;
        let nccl = nccl_for(&placement, &runtimes, opts.nccl, opts.join_timeout)?;
        if let (Some(why), None) = (&peer_missing, &nccl) {
            return Err(comm_err(
                "peer access",
                format!("{why}; the kernels need peer access and NCCL is not available either"),
            ));
        }
        let fork = StreamFork::new(runtimes[0].stream(), ranks.iter().map(|r| &r.stream))?;
        Ok(Communicator {
            fork,
            kernels: KernelCache::default(),
            placement,
            world,
            tables,
            _mappings: mappings,
            runtimes,
            ranks,
            opts,
            algos,
            broken: Mutex::new(None),
            issuing: Mutex::new(()),
            graph: Mutex::new(GraphBuffers::new(graph_slots)),
            graph_mappings: Mutex::new(PeerMappings::default()),
            nccl,
            peer_missing,
            push_window: push_window as u64,
            push_offset: push_offset as u64,
            ll_max: ll_max as u64,
            ll_offset: ll_offset as u64,
            push_blocks,
            ll_blocks,
            max_blocks,
        })
    }

    /// The NCCL communicator over the same ranks, if it was built
    /// (`CommOptions::nccl`).
    pub fn nccl(&self) -> Option<&NcclComm> {
        self.nccl.as_ref()
    }

    /// The algorithm-choice table this communicator's calls take
    /// (`CommOptions::algos`, else its device's tuning table's rows).
    pub fn algos(&self) -> &AlgoTable {
        &self.algos
    }

    /// Where a call of `bytes` bytes per rank runs: the table's kernel, or NCCL
    /// where the table says so and this communicator has it (for inputs read
    /// in place: registered, or a captured call's; a routed call on other
    /// inputs also takes the table's hand-over for copied inputs).
    pub fn route(&self, bytes: usize) -> Result<Route> {
        if self.peer_missing.is_some() {
            return Ok(Route::Nccl);
        }
        self.algos.route(self.world, bytes, self.nccl.is_some())
    }

    /// Whether the main stream is capturing a graph.
    fn stream_capturing(&self) -> Result<bool> {
        Ok(self
            .stream()
            .capture_status()
            .during(|| "querying the main stream's capture status".into())?
            == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE)
    }

    /// Whether every input is its rank's registered staging buffer (an eager
    /// call then copies nothing).
    fn inputs_registered(&self, inputs: &CallInputs<'_>) -> bool {
        inputs
            .addresses()
            .iter()
            .zip(&self.ranks)
            .all(|(&a, r)| a == self.tables[0].0[r.id as usize])
    }

    /// `outputs[r] = op(inputs[0], ..., inputs[R-1])` on every rank r, run where
    /// [`Self::route`] says: a kernel through [`Self::all_reduce`], or NCCL on
    /// the same streams (ordered with [`Self::stream`] alike). `scalar` as in
    /// [`Call`].
    pub fn all_reduce_routed(
        &self,
        inputs: &[&dyn KernelInput],
        outputs: &mut [&mut dyn KernelOutput],
        op: Op,
        scalar: Option<f32>,
    ) -> Result<()> {
        let bytes = inputs
            .first()
            .map_or(0, |i| i.len() * i.dtype().info().bytes as usize);
        let call = |c: super::choice::Choice| Call {
            cp_async: c.cp_async,
            op,
            scalar,
            ..Call::sum(c.algo)
        };
        // NCCL captures into the graph itself; the issue guard still pauses the
        // event tracking a captured address read would trip.
        let issue = self.start_issue()?;
        let ins = CallInputs::new(inputs, &self.ranks);
        let route = if self.peer_missing.is_some() {
            Route::Nccl
        } else {
            let copied = !issue.capturing && !self.inputs_registered(&ins);
            self.algos
                .route_for(self.world, bytes, self.nccl.is_some(), copied)?
        };
        let nccl = self.nccl.as_ref();
        let (Route::Nccl, Some(nccl)) = (route, nccl) else {
            let mut c = match route {
                Route::Kernel(c) => c,
                Route::Nccl => self.algos.choose(self.world, bytes)?,
            };
            if self.in_place(c.algo).is_some() && self.push_inputs(c.algo, &ins, bytes).is_err() {
                c = super::choice::Choice::ONE_SHOT;
            }
            return self.issue_call(&issue, &ins, outputs, call(c), None);
        };
        nccl.issue(
            self.stream(),
            inputs,
            outputs,
            call(super::choice::Choice::ONE_SHOT),
        )
    }

    /// What every call does before it touches a buffer: refuses on a broken
    /// communicator or while another call issues, asks whether the main stream
    /// captures (before any address is read: inside a capture, reading a
    /// tracked slice's address waits on an uncaptured event) and pauses
    /// cudarc's event tracking for a capturing call. Held until the call ends.
    fn start_issue(&self) -> Result<Issue<'_>> {
        if let Some(reason) = self.broken() {
            return Err(Error::Broken { reason });
        }
        let Ok(lock) = self.issuing.try_lock() else {
            return Err(comm_err(
                "concurrent call",
                "another all-reduce is being issued on this communicator; one at a time".into(),
            ));
        };
        let capturing = self.stream_capturing()?;
        Ok(Issue {
            _lock: lock,
            capturing,
            _paused: capturing.then(|| TrackingPaused::new(&self.runtimes)),
        })
    }

    /// Number of ranks.
    pub fn world(&self) -> u32 {
        self.world
    }

    /// The ranks this process launches, in order (every rank, or its own in
    /// [`Placement::Process`]): `all_reduce` takes one input and one output
    /// for each.
    pub fn local_ranks(&self) -> Vec<u32> {
        self.ranks.iter().map(|r| r.id).collect()
    }

    /// The registered staging buffer of the `local`-th local rank as `len`
    /// elements of `dtype`: write a rank's input there (on [`Self::stream`],
    /// or ordered after it) and pass the view as that rank's input, and the
    /// call copies nothing. The next call's write must come after this call
    /// on the main stream, as every call's work is ordered there.
    pub fn registered(&self, local: usize, dtype: DType, len: usize) -> Result<Registered<'_>> {
        let Some(rank) = self.ranks.get(local) else {
            return Err(comm_err(
                "local rank",
                format!("{local}: this process drives {} rank(s)", self.ranks.len()),
            ));
        };
        let bytes = len.saturating_mul(dtype.info().bytes as usize);
        if bytes > self.opts.max_bytes {
            return Err(comm_err(
                "registered buffer",
                format!(
                    "{len} elements of {dtype} ({bytes} bytes): at most max_bytes ({})",
                    self.opts.max_bytes
                ),
            ));
        }
        Ok(Registered {
            address: self.tables[0].0[rank.id as usize],
            dtype,
            len,
            _comm: std::marker::PhantomData,
        })
    }

    /// Where the ranks live.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The main stream (rank 0's device): calls are ordered with its work.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.runtimes[0].stream()
    }

    /// The runtime of the device of this process's `rank`-th local rank.
    pub fn runtime(&self, rank: usize) -> &Runtime {
        &self.runtimes[self.ranks[rank.min(self.ranks.len() - 1)].rt]
    }

    /// Why the communicator is broken, if it is.
    pub fn broken(&self) -> Option<String> {
        self.broken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `spec`'s kernel on every local rank: validated, compiled and loaded on
    /// first use (the only place an all-reduce spec is checked: a call's
    /// kernel is found before it touches a buffer, so an invalid spec never
    /// reaches the GPU), with the blocks one rank may keep resident.
    fn kernel(&self, spec: &AllReduceSpec) -> Result<Arc<LoadedKernel>> {
        self.kernels.get_or_load(spec, || {
            spec.validate()?;
            let funcs = self
                .ranks
                .iter()
                .map(|r| self.runtimes[r.rt].function(spec))
                .collect::<Result<Vec<_>>>()?;
            // The push kernels' grids were fixed at set-up: no occupancy query.
            let share = match self.in_place(spec.algo) {
                Some(at) => at.grid,
                None => self.resident_share(spec, &funcs[0], &self.runtimes[self.ranks[0].rt])?,
            };
            Ok(LoadedKernel { funcs, share })
        })
    }

    /// Blocks of `spec`'s kernel one rank may have resident at once: all
    /// the GPU holds, or on a shared GPU its share.
    fn resident_share(
        &self,
        spec: &AllReduceSpec,
        func: &CudaFunction,
        rt: &Runtime,
    ) -> Result<u32> {
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(spec.threads(), 0, None)
            .during(|| format!("occupancy of {}", spec.name()))?;
        let resident = per_sm * rt.device().sm_count;
        let share = match self.placement {
            Placement::SameGpu { .. } => resident / self.world(),
            Placement::Process { gpu_share, .. } => resident / gpu_share,
            Placement::Devices { .. } => resident,
        };
        if share == 0 {
            return Err(comm_err(
                "placement",
                format!(
                    "{} ranks of {} cannot all be resident on this GPU",
                    self.world(),
                    spec.name()
                ),
            ));
        }
        Ok(share)
    }

    /// Blocks per rank for a launch of `spec` over `n` elements: the push
    /// kernel's fixed grid; of the LL kernel's fixed grid the blocks that hold
    /// a pack (the same packs go to the same blocks as in the whole grid, and
    /// a block not launched keeps its count, as one that sits the call out);
    /// for the others enough for the work, at most the grid cap (and the
    /// choice table's narrower one, `Thresholds::narrow_max`, for a whole
    /// all-reduce), and on one GPU at most what keeps every rank's blocks
    /// resident together (`share`).
    fn blocks(&self, spec: &AllReduceSpec, share: u32, n: usize) -> u32 {
        let packs = n.div_ceil(spec.pack_elts() as usize);
        if let Some(at) = self.in_place(spec.algo) {
            return match spec.algo {
                AllReduceAlgo::PushLl => {
                    (packs.div_ceil(spec.threads() as usize).max(1) as u32).min(at.grid)
                }
                _ => at.grid,
            };
        }
        let work = match spec.algo {
            AllReduceAlgo::OneShot | AllReduceAlgo::Push | AllReduceAlgo::PushLl => packs,
            AllReduceAlgo::TwoStage => packs.div_ceil(self.world() as usize),
        };
        let wanted = work.div_ceil(spec.threads() as usize).max(1) as u32;
        let mut cap = self.max_blocks;
        if spec.stage == ArStage::Whole {
            let bytes = n.saturating_mul(spec.dtype.info().bytes as usize);
            let choice = Choice {
                algo: spec.algo,
                cp_async: spec.cp_async,
            };
            if let Some(narrow) = self.algos.narrow(self.world, bytes, choice) {
                cap = cap.min(narrow);
            }
        }
        wanted.min(share).min(cap)
    }

    /// `outputs[r] = op(inputs[0], ..., inputs[R-1])` on every rank r.
    pub fn all_reduce(
        &self,
        inputs: &[&dyn KernelInput],
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
    ) -> Result<()> {
        let issue = self.start_issue()?;
        let ins = CallInputs::new(inputs, &self.ranks);
        self.issue_call(&issue, &ins, outputs, call, None)
    }

    /// The quantized all-reduce ([`super::quant`]): f32 `inputs` and
    /// `outputs`, each rank's input rounded stochastically to `q.transport`
    /// (bf16) into its staging buffer by a reduce_copy kernel, reduced in f32
    /// in rank order (every rank gets the same bits); the two-stage kernel
    /// rounds its reduce-scatter partials stochastically too. `call.op` is sum,
    /// avg or premulsum (others: a spec error naming the rule); the result is
    /// [`crate::reference::all_reduce_quantized`] bit for bit.
    pub fn all_reduce_quantized(
        &self,
        inputs: &[&dyn KernelInput],
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
        q: Quantize,
    ) -> Result<()> {
        let issue = self.start_issue()?;
        let ins = CallInputs::new(inputs, &self.ranks);
        self.issue_call(&issue, &ins, outputs, call, Some(q))
    }

    /// The hierarchical all-reduce (see the module docs): this host's ranks
    /// reduce-scatter through peer memory (the two-stage kernel's first stage,
    /// `call.cp_async` as asked), local rank i all-reduces its slice across hosts
    /// in place with `inter[i]` (an NCCL communicator of the ranks of index i on
    /// every host, driving that one rank here), and the ranks all-gather. sum,
    /// premulsum and avg go across hosts as sums (the node step applies the
    /// factor, or divides by `call.scalar`: pass the count of every rank of
    /// every host for avg); max, min and prod as themselves. `call.algo` must
    /// be two-stage, the message whole 16-byte packs, the call eager (not
    /// captured).
    pub fn all_reduce_hierarchical(
        &self,
        inputs: &[&dyn KernelInput],
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
        inter: &[&NcclComm],
    ) -> Result<()> {
        if let Some(why) = &self.peer_missing {
            return Err(comm_err(
                "peer access",
                format!("{why}: the hierarchical mode's node steps need peer access"),
            ));
        }
        let issue = self.start_issue()?;
        if issue.capturing {
            return Err(comm_err(
                "graph capture",
                "the hierarchical mode is not graph-capturable yet: issue it eagerly".into(),
            ));
        }
        if call.algo != AllReduceAlgo::TwoStage {
            return Err(comm_err(
                "algorithm",
                format!(
                    "the hierarchical mode runs the {} kernel's stages; the call asks for {}",
                    AllReduceAlgo::TwoStage,
                    call.algo
                ),
            ));
        }
        if inter.len() != self.ranks.len() {
            return Err(comm_err(
                "inter-host communicators",
                format!(
                    "{} given for {} local rank(s): one NCCL communicator per local rank",
                    inter.len(),
                    self.ranks.len()
                ),
            ));
        }
        let main = self.stream();
        let (outs, dtype, n) = self.check_outputs(inputs, outputs, call)?;
        if n == 0 {
            return Ok(());
        }
        let rs = AllReduceSpec {
            stage: ArStage::ReduceScatter,
            ..self.spec_of(dtype, call, None)
        };
        let rs_kernel = self.kernel(&rs)?;
        let pack = rs.pack_elts() as usize;
        if !n.is_multiple_of(pack) {
            return Err(comm_err(
                "message",
                format!(
                    "{n} elements of {dtype}: the hierarchical mode takes whole 16-byte packs ({pack} elements)"
                ),
            ));
        }
        let ag = AllReduceSpec {
            cp_async: false,
            stage: ArStage::AllGather,
            ..rs.clone()
        };
        let ag_kernel = self.kernel(&ag)?;
        let across = match call.op {
            Op::Max | Op::Min | Op::Prod => call.op,
            _ => Op::Sum,
        };
        let stage = |spec, kernel| Launch {
            spec,
            kernel,
            n,
            call,
            out_addresses: &outs.addresses,
            quant: None,
        };
        let ins = CallInputs::new(inputs, &self.ranks);
        self.stage_inputs(main, &ins, n, dtype, false, None)?;
        self.launch_ranks(
            &stage(&rs, &rs_kernel),
            InputsAt::Table(super::graph::EAGER_SLOT),
        )?;
        // Slice r of rank r's scratch: packs [r * part, ...) of the message,
        // stored from the scratch's start (as the kernels place it).
        let packs = n / pack;
        let part = packs.div_ceil(self.world() as usize);
        for (rank, comm) in self.ranks.iter().zip(inter) {
            let r = rank.id as usize;
            let len = packs.saturating_sub(r * part).min(part);
            let op = super::nccl::nccl_op(across, None, comm.world())?;
            comm.issue_in_place(&rank.stream, self.tables[2].0[r], len * pack, dtype, op)?;
        }
        self.launch_ranks(
            &stage(&ag, &ag_kernel),
            InputsAt::Table(super::graph::EAGER_SLOT),
        )
    }

    fn issue_call(
        &self,
        issue: &Issue<'_>,
        inputs: &CallInputs<'_>,
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
        quant: Option<Quantize>,
    ) -> Result<()> {
        if let Some(why) = &self.peer_missing {
            return Err(comm_err(
                "peer access",
                format!(
                    "{why}: the kernels need peer access; this communicator runs its calls through NCCL (all_reduce_routed)"
                ),
            ));
        }
        let capturing = issue.capturing;
        let main = self.stream();
        let (outs, dtype, n) = self.check_outputs(inputs.bufs, outputs, call)?;
        if n == 0 {
            return Ok(());
        }
        let spec = self.spec_of(dtype, call, quant.map(|q| q.transport));
        let kernel = self.kernel(&spec)?;
        if let Some(q) = quant.filter(|q| !q.fits(self.world(), n)) {
            return Err(comm_err(
                "quantize base",
                format!(
                    "base {} + {} positions (R + 1 times n rounded up to 4) must fit in 64 bits",
                    q.base,
                    Quantize::span(self.world(), n)
                ),
            ));
        }
        let launch = Launch {
            spec: &spec,
            kernel: &kernel,
            n,
            call,
            out_addresses: &outs.addresses,
            quant,
        };
        if self.in_place(call.algo).is_some() {
            // Read in place, eager or captured: nothing staged, no table slot.
            let push_in = self.push_inputs(call.algo, inputs, n * dtype.info().bytes as usize)?;
            self.fork.fan_out(main, self.rank_streams())?;
            return self.launch_ranks(&launch, InputsAt::InPlace(push_in));
        }
        // Captured calls read their inputs in place through a table slot filled
        // at end_capture; eager calls stage them and use slot 0.
        // A quantized call always stages (quantizing is the staging).
        let slot = if capturing && quant.is_none() {
            self.graph
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(inputs.addresses())?
        } else {
            super::graph::EAGER_SLOT
        };
        self.stage_inputs(main, inputs, n, dtype, capturing, quant)?;
        self.launch_ranks(&launch, InputsAt::Table(slot))
    }

    /// Where a kernel that reads its inputs in place (the push kernels) finds
    /// its buffers; `None` for the others.
    fn in_place(&self, algo: AllReduceAlgo) -> Option<InPlace> {
        match algo {
            AllReduceAlgo::Push => Some(InPlace {
                grid: self.push_blocks,
                offset: self.push_offset,
                region: self.push_window,
                max_bytes: self.push_window,
                option: "push_bytes",
            }),
            AllReduceAlgo::PushLl => Some(InPlace {
                grid: self.ll_blocks,
                offset: self.ll_offset,
                region: 2 * self.ll_max,
                max_bytes: self.ll_max,
                option: "ll_bytes",
            }),
            AllReduceAlgo::OneShot | AllReduceAlgo::TwoStage => None,
        }
    }

    /// A push kernel's inputs, read in place: each 16-byte aligned and the
    /// message within its window. The automatic choice falls back to one-shot
    /// where this refuses.
    fn push_inputs<'i>(
        &self,
        algo: AllReduceAlgo,
        inputs: &'i CallInputs<'_>,
        bytes: usize,
    ) -> Result<&'i [u64]> {
        let Some(at) = self.in_place(algo) else {
            return Err(comm_err(
                "algorithm",
                format!(
                    "the {algo} kernel reads its inputs from the staging buffers, not in place"
                ),
            ));
        };
        if bytes as u64 > at.max_bytes {
            return Err(comm_err(
                "push window",
                format!(
                    "{bytes} bytes per rank: the {algo} kernel takes at most {} (CommOptions::{})",
                    at.max_bytes, at.option
                ),
            ));
        }
        let addresses = inputs.addresses();
        if let Some((i, a)) = addresses
            .iter()
            .enumerate()
            .find(|(_, a)| !a.is_multiple_of(u64::from(PACK_BYTES)))
        {
            return Err(comm_err(
                "alignment",
                format!(
                    "local rank {i}'s input starts at {a:#x}: the {algo} kernel reads inputs in place, 16-byte aligned"
                ),
            ));
        }
        Ok(addresses)
    }

    /// The call checked as every kernel call is ([`check_call_for`]: its
    /// dtype and length), then the outputs' addresses, read for writing (see
    /// [`CallOutputs`]). A buffer's address is read on its own rank's stream:
    /// cudarc orders a tracked buffer through events of the buffer's context,
    /// which a stream of another GPU cannot record (CUDA_ERROR_INVALID_CONTEXT
    /// on the next call, one GPU per rank).
    fn check_outputs<'o>(
        &'o self,
        inputs: &[&dyn KernelInput],
        outputs: &'o mut [&mut dyn KernelOutput],
        call: Call,
    ) -> Result<(CallOutputs<'o>, DType, usize)> {
        // The alignment needs the addresses, which wait until the rest passed.
        let (dtype, n) = check_call_for(
            self.ranks.len() as u32,
            self.world(),
            self.opts.max_bytes,
            inputs,
            outputs,
            &[],
            call,
        )?;
        let (addresses, written): (Vec<u64>, Vec<SyncOnDrop<'o>>) = outputs
            .iter_mut()
            .zip(&self.ranks)
            .map(|(o, r)| o.write_address(&r.stream))
            .unzip();
        check_output_alignment(&addresses, n)?;
        let bytes = (n * dtype.info().bytes as usize) as u64;
        for ((rank, &out), i) in self.ranks.iter().zip(&addresses).zip(0..) {
            let staging = rank.staging.ptr();
            if n > 0 && out < staging + rank.staging.bytes() as u64 && staging < out + bytes {
                return Err(comm_err(
                    "output",
                    format!(
                        "local rank {i}'s output {out:#x} (+{bytes} bytes) overlaps its registered staging buffer {staging:#x}, which peers read during the call"
                    ),
                ));
            }
        }
        let outputs = CallOutputs {
            addresses,
            _written: written,
        };
        Ok((outputs, dtype, n))
    }

    /// The whole all-reduce kernel of `call` over this communicator's ranks.
    fn spec_of(&self, dtype: DType, call: Call, transport: Option<DType>) -> AllReduceSpec {
        AllReduceSpec {
            world: self.world(),
            dtype,
            op: call.op,
            algo: call.algo,
            cp_async: call.cp_async,
            transport,
            stage: ArStage::Whole,
        }
    }

    /// Each rank's input into its registered staging buffer (quantized by a
    /// reduce_copy kernel for a quantized call; left in place for a captured
    /// call, which reads it through a table slot), after the main stream's work.
    fn stage_inputs(
        &self,
        main: &Arc<CudaStream>,
        inputs: &CallInputs<'_>,
        n: usize,
        dtype: DType,
        capturing: bool,
        quant: Option<Quantize>,
    ) -> Result<()> {
        let bytes = n * dtype.info().bytes as usize;
        let tables = self.tables;
        self.fork.fan_out(main, self.rank_streams())?;
        for (i, rank) in self.ranks.iter().enumerate() {
            let r = rank.id as usize;
            if let Some(q) = quant {
                let kernel = self.runtimes[rank.rt].reduce_copy(&q.reduce_copy_spec())?;
                let mut staging = Registered {
                    address: tables[0].0[r],
                    dtype: q.transport,
                    len: n,
                    _comm: std::marker::PhantomData,
                };
                let args = ReduceCopyArgs {
                    scalar: None,
                    stochastic: Some(Stochastic {
                        seed: q.seed,
                        base: q.input_base(rank.id, n),
                    }),
                };
                kernel.launch_with(
                    &rank.stream,
                    &[inputs.bufs[i]],
                    &mut [&mut staging],
                    args,
                    LaunchOptions::default(),
                )?;
                continue;
            }
            if capturing {
                continue;
            }
            let src = inputs.addresses()[i];
            if src != tables[0].0[r] {
                // The raw copy runs in the thread's current context, which the
                // address reads above may have left on another rank's GPU.
                self.runtimes[rank.rt]
                    .context()
                    .bind_to_thread()
                    .during(|| format!("rank {r}: binding its context"))?;
                // SAFETY: `src` holds `bytes` bytes (checked: n elements of dtype);
                // the staging buffer holds max_bytes >= bytes; both are device
                // memory of contexts with peer access (or the same context).
                unsafe {
                    sys::cuMemcpyDtoDAsync_v2(tables[0].0[r], src, bytes, rank.stream.cu_stream())
                }
                .result()
                .during(|| format!("rank {r}: staging its input"))?;
            }
        }
        Ok(())
    }

    /// Launches the kernel of `launch` on every local rank's stream (the same
    /// grid on each), reading its inputs where `inputs` says, then orders the
    /// main stream after them.
    fn launch_ranks(&self, launch: &Launch<'_>, inputs: InputsAt<'_>) -> Result<()> {
        let Launch {
            spec,
            kernel,
            n,
            call,
            out_addresses,
            quant,
        } = *launch;
        let push_in = match inputs {
            InputsAt::InPlace(a) => Some(a),
            InputsAt::Table(_) => None,
        };
        let main = self.stream();
        let tables = self.tables;
        let timeout_ns = self.opts.timeout.as_nanos().min(u64::MAX as u128) as u64;
        let op_arg = call.scalar.unwrap_or(0.0);
        let (seed, partial_base) =
            quant.map_or((0, 0), |q| (q.seed, q.partial_base(self.world(), n)));
        // One grid for every rank.
        let blocks = self.blocks(spec, kernel.share, n);
        // A push kernel takes its own input and its buffers where the others
        // take the input table and the scratch buffers.
        let at = self.in_place(spec.algo).filter(|_| push_in.is_some());
        let third = match at {
            Some(at) => PtrTable(tables[2].0.map(|a| if a == 0 { 0 } else { a + at.offset })),
            None => tables[2],
        };
        for ((i, rank), func) in self.ranks.iter().enumerate().zip(&kernel.funcs) {
            let r = rank.id as usize;
            if call.skip_rank == Some(r as u32) {
                continue;
            }
            let out = out_addresses[i];
            let err = rank.error_ptr;
            let in_table = match inputs {
                InputsAt::InPlace(a) => a[i],
                InputsAt::Table(slot) => rank.in_tables.ptr() + u64::from(slot) * TABLE_BYTES,
            };
            let rank_u32 = r as u32;
            let n64 = n as u64;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (spec.threads(), 1, 1),
                shared_mem_bytes: 0,
            };
            let mut args = rank.stream.launch_builder(func);
            args.arg(&in_table)
                .arg(&tables[1])
                .arg(&third)
                .arg(&out)
                .arg(&rank_u32)
                .arg(&n64)
                .arg(&op_arg)
                .arg(&timeout_ns)
                .arg(&err);
            if quant.is_some() {
                args.arg(&seed).arg(&partial_base);
            }
            if let Some(at) = &at {
                args.arg(&at.region);
            }
            // SAFETY: the kernel was generated from `spec` and takes, in this
            // order: the input table's device address (a live slot of 64
            // bytes; a captured call's slot is written at end_capture, before
            // any replay), or for a push kernel this rank's 16-byte aligned
            // input of n elements (checked by push_inputs); two rj_ar_ptrs by
            // value; the output pointer, rank (u32), n (u64), the op's scalar
            // (f32), the timeout (u64) and the error word's pointer; then for
            // a quantized spec the seed and the partials' first Philox
            // position (u64 each), for a push kernel its region's bytes (u64),
            // two sets of world regions of which every entry of its table
            // holds (scratch_bytes; an LL region holds two lines, 32 bytes,
            // per 16 bytes of a message within ll_max). Every table entry is a live buffer of this
            // communicator sized for n elements (check_call), or a captured
            // input of n elements that the caller keeps alive while the graph
            // replays; the output holds n elements and is 16-byte aligned;
            // the grid is the same on every rank.
            unsafe { args.launch(cfg) }
                .during(|| format!("rank {r}: launching {}", spec.name()))?;
        }
        self.fork.fan_in(main, self.rank_streams())
    }

    /// Each local rank's number and stream, in `ranks` order.
    fn rank_streams(&self) -> impl Iterator<Item = (u32, &Arc<CudaStream>)> {
        self.ranks.iter().map(|r| (r.id, &r.stream))
    }

    /// Blocks per rank a call of `n` elements of `dtype` launches (the push
    /// kernel's fixed grid, of which the blocks past the message sit the call
    /// out; the others' grid for the work, the resident share and the grid
    /// cap). Loads the call's kernel, as the call would.
    pub fn grid(&self, dtype: DType, call: Call, n: usize) -> Result<u32> {
        let spec = self.spec_of(dtype, call, None);
        let kernel = self.kernel(&spec)?;
        Ok(self.blocks(&spec, kernel.share, n))
    }

    /// The call the algorithm-choice table picks for `bytes` bytes per rank (a
    /// sum; set `op` and `scalar` for another op).
    pub fn choose(&self, bytes: usize) -> Result<Call> {
        let mut c = self.algos.choose(self.world, bytes)?;
        if self
            .in_place(c.algo)
            .is_some_and(|at| bytes as u64 > at.max_bytes)
        {
            c = super::choice::Choice::ONE_SHOT;
        }
        Ok(Call {
            cp_async: c.cp_async,
            ..Call::sum(c.algo)
        })
    }

    /// Opens a capture session: until [`Self::end_capture`], calls issued while
    /// the main stream captures read their inputs in place (16-byte aligned,
    /// kept alive by the caller while the graph is replayed) through table
    /// slots registered at `end_capture` (see [`super::graph`]). Without a
    /// session, a call on a capturing stream is an error.
    pub fn begin_capture(&self) -> Result<()> {
        self.graph.lock().unwrap_or_else(|p| p.into_inner()).begin()
    }

    /// Drops an open session's records (after a capture that failed).
    pub fn cancel_capture(&self) {
        self.graph
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cancel();
    }

    /// Registers what the session captured, after the stream's capture ended
    /// and before the graph is replayed: the ranks agree on the number of
    /// captured calls, exchange their inputs' addresses (IPC handles and
    /// offsets in [`Placement::Process`], where every process must call this)
    /// and write the table slots the graph's kernels read. Returns the number
    /// of calls registered.
    pub fn end_capture(&self) -> Result<u32> {
        let status = self
            .stream()
            .capture_status()
            .during(|| "querying the main stream's capture status".into())?;
        if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(comm_err(
                "graph capture",
                format!(
                    "end_capture while the main stream is still capturing ({status:?}): end the stream's capture first, then register"
                ),
            ));
        }
        let pending = self
            .graph
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finish()?;
        let count = pending.inputs.len() as u32;
        let local = self.local_ranks();
        let written = match &self.placement {
            Placement::Process {
                rank, rendezvous, ..
            } => {
                let exchange = |payload: &[u8]| {
                    super::bootstrap::exchange(
                        rendezvous,
                        *rank,
                        self.world,
                        payload,
                        self.opts.join_timeout,
                    )
                };
                let ctx = self.runtimes[0].context();
                ctx.bind_to_thread()
                    .during(|| "binding the context".into())?;
                let records = pending
                    .inputs
                    .iter()
                    .map(|ins| {
                        let a = ins[0];
                        let (mut base, mut size) = (0, 0);
                        // SAFETY: out-pointers to live locals; `a` is a device
                        // address the caller passed as an input.
                        unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, a) }
                            .result()
                            .during(|| format!("the allocation of captured input {a:#x}"))?;
                        Ok(GraphRecord {
                            handle: crate::peer::get_mem_handle(base)?,
                            offset: a - base,
                            base,
                            size: size as u64,
                        })
                    })
                    .collect::<Result<Vec<_>>>();
                let mut opened = self
                    .graph_mappings
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                super::graph::register_across_processes(
                    *rank,
                    self.world,
                    &pending,
                    records,
                    exchange,
                    |r, rec| {
                        Ok(opened
                            .get_or_open(r, rec, |h| OpenedIpc::open(ctx, h))?
                            .ptr())
                    },
                )?
            }
            placement => {
                if let Placement::Devices { .. } = placement {
                    // Peer access covers cuMemAlloc memory only.
                    for ins in &pending.inputs {
                        for (k, &a) in ins.iter().enumerate() {
                            self.runtimes[self.ranks[k].rt]
                                .context()
                                .bind_to_thread()
                                .during(|| "binding the context".into())?;
                            if !crate::peer::is_legacy_ipc_capable(a)? {
                                return Err(comm_err(
                                    "graph capture",
                                    format!(
                                        "rank {k}'s captured input {a:#x} is pool or virtual-memory memory, which peer access does not cover: allocate captured inputs with cuMemAlloc (peer::LegacyAlloc)"
                                    ),
                                ));
                            }
                        }
                    }
                }
                super::graph::tables(self.world, &local, &pending, |r, i| {
                    Err(comm_err(
                        "graph capture",
                        format!("rank {r} of call {i} is not driven by this process"),
                    ))
                })?
            }
        };
        for rank in &self.ranks {
            self.runtimes[rank.rt]
                .context()
                .bind_to_thread()
                .during(|| "binding the context".into())?;
            for (slot, t) in &written {
                write_table(&rank.in_tables, *slot, t)?;
            }
        }
        self.graph
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .commit(count);
        Ok(count)
    }

    /// Waits for every rank and reads the error words: a barrier that timed out
    /// breaks the communicator (this and every later call is an `Err` until
    /// `rebuild`).
    pub fn synchronize(&self) -> Result<()> {
        let mut reasons = Vec::new();
        for rank in &self.ranks {
            let r = rank.id;
            rank.stream
                .synchronize()
                .during(|| format!("rank {r}: synchronising"))?;
            let word = rank
                .stream
                .clone_dtoh(&rank.error)
                .during(|| format!("rank {r}: error word"))?[0];
            if word != 0 {
                reasons.push(match BarrierTimeout::decode(word) {
                    Some(t) => format!("rank {r}: {t} ({:?})", self.opts.timeout),
                    None => format!("rank {r}: error word {word:#x}"),
                });
            }
        }
        self.stream()
            .synchronize()
            .during(|| "synchronising the main stream".into())?;
        if !reasons.is_empty() {
            let reason = reasons.join("; ");
            *self.broken.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.clone());
            return Err(Error::Broken { reason });
        }
        if let Some(reason) = self.broken() {
            return Err(Error::Broken { reason });
        }
        Ok(())
    }

    /// Waits for every rank, zeroes signals, counters and error words, and clears
    /// the broken state. In [`Placement::Process`] every process must call it:
    /// after zeroing, the ranks meet at the rendezvous again, so no peer launches
    /// (and signals) before every rank's zeroes are complete (TVM PR #16797).
    pub fn rebuild(&mut self) -> Result<()> {
        for rank in self.ranks.iter_mut() {
            let r = rank.id;
            rank.stream
                .synchronize()
                .during(|| format!("rank {r}: synchronising"))?;
            rank.signal.zero_async(&rank.stream)?;
            rank.stream
                .memset_zeros(&mut rank.error)
                .during(|| format!("rank {r}: zeroing"))?;
            rank.stream
                .synchronize()
                .during(|| format!("rank {r}: synchronising"))?;
        }
        if let Placement::Process {
            rank, rendezvous, ..
        } = &self.placement
        {
            super::bootstrap::exchange(
                rendezvous,
                *rank,
                self.world,
                b"rebuilt",
                self.opts.join_timeout,
            )?;
        }
        *self.broken.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}

/// This process's rank as [`super::ipc::join`] sees it.
struct CudaRank<'a> {
    rank: &'a mut Rank,
    ctx: Arc<cudarc::driver::CudaContext>,
    /// The push kernels' grids (push, LL push).
    grids: [u32; 2],
}

impl super::ipc::RankBuffers for CudaRank<'_> {
    type Mapping = OpenedIpc;

    fn zero_signals(&mut self) -> Result<()> {
        let rank = &mut *self.rank;
        let r = rank.id;
        rank.signal.zero_async(&rank.stream)?;
        rank.stream
            .memset_zeros(&mut rank.error)
            .during(|| format!("rank {r}: zeroing its error word"))?;
        rank.stream
            .synchronize()
            .during(|| format!("rank {r}: waiting for the zeroes"))
    }

    fn sizes(&self) -> [u64; 3] {
        let r = &self.rank;
        [r.staging.bytes(), r.signal.bytes(), r.scratch.bytes()].map(|b| b as u64)
    }

    fn grids(&self) -> [u32; 2] {
        self.grids
    }

    fn addresses(&self) -> [u64; 3] {
        let r = &self.rank;
        [r.staging.ptr(), r.signal.ptr(), r.scratch.ptr()]
    }

    fn handles(&mut self) -> Result<[IpcHandle; 3]> {
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context to take IPC handles".into())?;
        let [a, b, c] = self.addresses();
        Ok([
            crate::peer::get_mem_handle(a)?,
            crate::peer::get_mem_handle(b)?,
            crate::peer::get_mem_handle(c)?,
        ])
    }

    fn open(
        &mut self,
        peer: &super::ipc::RankCard,
        handle: &IpcHandle,
    ) -> Result<(u64, OpenedIpc)> {
        let m = OpenedIpc::open(&self.ctx, handle).map_err(|e| {
            comm_err(
                "IPC join",
                format!(
                    "rank {}: opening a buffer of rank {} (process {}) failed: {e}",
                    self.rank.id, peer.rank, peer.pid
                ),
            )
        })?;
        Ok((m.ptr(), m))
    }
}

/// The NCCL communicator `use_` asks for over `placement`'s ranks, on the
/// communicator's contexts and main stream.
fn nccl_for(
    placement: &Placement,
    runtimes: &[Runtime],
    use_: NcclUse,
    join_timeout: Duration,
) -> Result<Option<NcclComm>> {
    if use_ == NcclUse::Off {
        return Ok(None);
    }
    let lib = match (NcclLib::get(), use_) {
        (Ok(lib), _) => lib,
        (Err(Error::NcclUnavailable { .. }), NcclUse::IfAvailable) => return Ok(None),
        (Err(e), _) => return Err(e),
    };
    let nccl_placement = match placement {
        Placement::Devices { ordinals } => NcclPlacement::Devices {
            ordinals: ordinals.clone(),
        },
        Placement::Process {
            ordinal,
            rank,
            world,
            rendezvous,
            gpu_share: 1,
        } => NcclPlacement::Process {
            ordinal: *ordinal,
            rank: *rank,
            world: *world,
            rendezvous: rendezvous.clone(),
            join_timeout,
        },
        _ if use_ == NcclUse::IfAvailable => return Ok(None),
        other => {
            return Err(comm_err(
                "NCCL",
                format!(
                    "{other:?}: NCCL allows one rank per GPU in a communicator, and these ranks share one"
                ),
            ));
        }
    };
    let ctxs = runtimes.iter().map(|rt| rt.context().clone()).collect();
    NcclComm::with_contexts(lib, nccl_placement, ctxs, runtimes[0].stream().clone()).map(Some)
}
