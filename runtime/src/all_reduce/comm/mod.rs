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
//! The fused all-reduce + residual + RMS norm
//! ([`Communicator::all_reduce_add_rms_norm`], `comm/norm.rs`) runs the
//! one-shot kernel's barriers and input table; the two-stage kernel's, its
//! slices of rows in two sets of scratch of its own after the fused push
//! buffer (by a per-rank fused call count); or an LL kernel of its own:
//! lines into a fused LL buffer after the LL kernel's (as large), flagged with
//! a per-rank call count kept in the signal buffer's spare words (its
//! row-to-block mapping changes with the row length, so it cannot share the
//! LL kernel's per-block counts).
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

use std::sync::{Arc, Mutex};
use std::time::Duration;

use cudarc::driver::sys;
use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg,
    SyncOnDrop,
};
use redjit_codegen::spec::all_reduce::norm::MAX_ROW_BYTES;
use redjit_codegen::spec::all_reduce::{ArStage, MAX_BLOCKS, PACK_BYTES, signal};
use redjit_codegen::{AllReduceAlgo, AllReduceSpec, DType, KernelSpec, Op};

pub use super::call::{Call, check_call, check_call_for};
use super::call::{check_output_alignment, check_skip_rank, comm_err};
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

mod capture;
mod hierarchical;
mod launch;
mod norm;
mod options;
mod setup;

pub use norm::{AddRmsNorm, ArFp8Scales};
pub use options::{CommOptions, DEFAULT_MAX_BLOCKS, NcclUse, Placement};

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

/// The pointer table the kernels take by value: a kernel declares its world's
/// entries (`rj_ar_table<R>`), which the driver copies from the front of these 8.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct PtrTable([u64; 8]);
// SAFETY: plain old data with the layout of `rj_ar_table<8>` (`rj_ar_ptrs`), whose
// first R entries are a kernel's `rj_ar_table<R>`.
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
    /// Where the fused all-reduce + norm's LL buffer (as large as the LL
    /// kernel's) starts in each rank's scratch.
    fused_ll_offset: u64,
    /// Where the fused all-reduce + norm's push buffer starts in each rank's
    /// scratch, and the bytes of each of its regions (the push window of x,
    /// then a flag word a row).
    fused_push_offset: u64,
    fused_push_region: u64,
    /// Where the fused two-stage kernel's scratch starts in each rank's
    /// scratch, and the bytes of each of its two sets (a rank's slice of
    /// rows).
    fused_slices_offset: u64,
    fused_slices_set: u64,
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
            // The fused LL kernel's blocks poll each other's lines: its grid is
            // what stays resident.
            let share = match self.in_place(spec.algo).filter(|_| spec.norm.is_none()) {
                Some(at) => at.grid,
                None => self.resident_share(spec, &funcs[0], &self.runtimes[self.ranks[0].rt])?,
            };
            Ok(LoadedKernel {
                funcs,
                share,
                params: spec.params(),
            })
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
        let resident = match spec.norm.map_or(1, |n| n.cluster) {
            1 => {
                let per_sm = func
                    .occupancy_max_active_blocks_per_multiprocessor(spec.threads(), 0, None)
                    .during(|| format!("occupancy of {}", spec.name()))?;
                per_sm * rt.device().sm_count
            }
            // Clusters are placed whole within a GPC: the driver counts them.
            cluster => {
                let cfg = LaunchConfig {
                    grid_dim: (cluster, 1, 1),
                    block_dim: (spec.threads(), 1, 1),
                    shared_mem_bytes: 0,
                };
                let clusters = func
                    .occupancy_max_active_clusters(cfg, &self.ranks[0].stream)
                    .during(|| format!("cluster occupancy of {}", spec.name()))?;
                clusters * cluster
            }
        };
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
    /// the CPU twin's (`reference::all_reduce_quantized`, feature
    /// `cpu-twins`) bit for bit.
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
}
