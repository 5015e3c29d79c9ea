//! The NCCL backend of the all-reduce: the same call as
//! [`super::Communicator::all_reduce`] (one input and one output per rank this
//! process drives, a [`Call`] naming the op), run by NCCL. It is its own
//! communicator ([`NcclComm`]) and the algorithm-choice table's fallback
//! ([`super::choice::Route::Nccl`]) inside a [`super::Communicator`] built with
//! `CommOptions::nccl`.
//!
//! ```no_run
//! use redjit_runtime::all_reduce::Call;
//! use redjit_runtime::all_reduce::nccl::{NcclComm, NcclPlacement};
//! use redjit_runtime::{AllReduceAlgo, KernelInput, KernelOutput, Op};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // One process driving GPUs 0 and 1 (ncclCommInitAll).
//! let comm = NcclComm::new(NcclPlacement::Devices { ordinals: vec![0, 1] })?;
//! let s = comm.stream();
//! let ins: Vec<_> = (0..2).map(|r| s.clone_htod(&vec![r as f32; 1000])).collect::<Result<_, _>>()?;
//! let mut outs: Vec<_> = (0..2).map(|_| s.alloc_zeros::<f32>(1000)).collect::<Result<_, _>>()?;
//! let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
//! let mut outputs: Vec<&mut dyn KernelOutput> = outs.iter_mut().map(|b| b as &mut dyn KernelOutput).collect();
//! let avg = Call { op: Op::Avg, scalar: Some(2.0), ..Call::sum(AllReduceAlgo::OneShot) };
//! comm.all_reduce(&inputs, &mut outputs, avg)?; // `algo` and `cp_async` are not used by NCCL
//! comm.synchronize()?;
//! # Ok(()) }
//! ```
//!
//! **Finding the library.** `REDJIT_NCCL_LIB`, when set, names the library
//! file or the folder that holds it (`libnccl.so.2`, else `libnccl.so`), and
//! only that is tried; otherwise the dynamic loader's search path
//! (`LD_LIBRARY_PATH`, the cache) is asked for `libnccl.so.2`, then
//! `libnccl.so`. On the GPU machines NCCL comes with PyTorch's wheel:
//! `REDJIT_NCCL_LIB=$(python -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')/lib`.
//! Absence is an [`Error::NcclUnavailable`] naming every path tried, never a
//! panic: cudarc 0.19's own NCCL loader panics when the library (or any symbol)
//! is missing and only asks for `libnccl.so` and `libnccl.so.<cuda major>`, so
//! it would never find the wheel's `libnccl.so.2`. This module therefore opens
//! the library itself with libloading, resolves every call it makes up front
//! (a missing one is the same typed error), and takes only cudarc's type and
//! constant definitions (`cudarc::nccl::sys`). Return codes and reduction ops
//! cross the boundary as plain integers: `ncclRedOpCreatePreMulSum` hands back
//! op values outside cudarc's `ncclRedOp_t` enum, and a newer NCCL may return
//! codes outside its `ncclResult_t`.
//!
//! **Placements.** [`NcclPlacement::Devices`]: one process drives every rank,
//! one GPU each (`ncclCommInitAll`; calls are issued inside
//! `ncclGroupStart`/`ncclGroupEnd`). [`NcclPlacement::Process`]: one process per
//! GPU; rank 0 makes the NCCL unique id and hands it to the others through
//! [`super::bootstrap::exchange`] on the host's Unix socket, then every rank
//! calls `ncclCommInitRank`. [`NcclPlacement::Given`]: the caller passes the id
//! (made by [`NcclId::new`] on one rank and sent as hex, e.g. in an environment
//! variable or a file: the way a job spanning hosts joins). NCCL allows one rank
//! per GPU in a communicator, so the one-GPU test runs a world of one.
//!
//! **Ops.** sum, prod, min, max map to NCCL's own. avg with a count equal to the
//! world size is `ncclAvg`; any other count (redjit's avg divides by the count
//! the caller gives) and premulsum are `ncclRedOpCreatePreMulSum` with the
//! factor (1/count for avg) in the call's dtype, created per call and
//! destroyed after it. dtypes: f32, bf16, f16 (NCCL >= 2.11 has them all).
//! On one rank NCCL runs those scaling ops through a kernel that can leave a
//! remainder unwritten ([`one_rank_covers`]); such calls go in pieces it covers.
//!
//! **CUDA graphs.** NCCL captures its calls into a graph itself. Through
//! [`super::Communicator::all_reduce_routed`] cudarc's event tracking is paused
//! for a capturing call, as for the kernels; a standalone [`NcclComm`] leaves
//! it alone, so capture with it on buffers whose tracking is off (or on a
//! context with tracking disabled).
//!
//! **Not tested here** (no second GPU, no second host): the multi-rank
//! placements; `Devices` and `Process` are written to NCCL's documented use.

#![warn(missing_docs)]

use std::ffi::{CStr, OsString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use cudarc::driver::{CudaContext, CudaStream, SyncOnDrop};
use cudarc::nccl::sys::{
    ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclResult_t, ncclScalarResidence_t, ncclUniqueId,
};
use redjit_codegen::{DType, Op};

use super::call::{Call, check_call_for};
use crate::elem::{KernelInput, KernelOutput};
use crate::error::{DriverContext, Error, Result};

/// The environment variable naming the NCCL library (file or folder).
pub const NCCL_LIB_ENV: &str = "REDJIT_NCCL_LIB";

/// Library names asked of the dynamic loader, in order (PyTorch's wheel ships
/// `libnccl.so.2` only; a toolkit install adds `libnccl.so`).
pub const LOADER_NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

type Code = u32;
type GetVersion = unsafe extern "C" fn(*mut c_int) -> Code;
type GetUniqueId = unsafe extern "C" fn(*mut ncclUniqueId) -> Code;
type CommInitRank = unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> Code;
type CommInitAll = unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> Code;
type CommDestroy = unsafe extern "C" fn(ncclComm_t) -> Code;
type CommGetAsyncError = unsafe extern "C" fn(ncclComm_t, *mut Code) -> Code;
type GetErrorString = unsafe extern "C" fn(Code) -> *const c_char;
type GetLastError = unsafe extern "C" fn(ncclComm_t) -> *const c_char;
type Group = unsafe extern "C" fn() -> Code;
type RedOpCreatePreMulSum =
    unsafe extern "C" fn(*mut Code, *mut c_void, Code, Code, ncclComm_t) -> Code;
type RedOpDestroy = unsafe extern "C" fn(Code, ncclComm_t) -> Code;
type AllReduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    Code,
    Code,
    ncclComm_t,
    *mut c_void,
) -> Code;

/// An opened NCCL library and the calls the backend makes, all resolved.
pub struct NcclLib {
    path: String,
    version: i32,
    get_unique_id: GetUniqueId,
    comm_init_rank: CommInitRank,
    comm_init_all: CommInitAll,
    comm_destroy: CommDestroy,
    comm_get_async_error: CommGetAsyncError,
    get_error_string: GetErrorString,
    get_last_error: Option<GetLastError>,
    group_start: Group,
    group_end: Group,
    red_op_create_pre_mul_sum: RedOpCreatePreMulSum,
    red_op_destroy: RedOpDestroy,
    all_reduce: AllReduce,
    // Last: the function pointers above point into it.
    _lib: libloading::Library,
}

impl std::fmt::Debug for NcclLib {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclLib")
            .field("path", &self.path)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// The candidates for `setting` (the value of `REDJIT_NCCL_LIB`, if set): the
/// file itself, or `libnccl.so.2` and `libnccl.so` in the folder; without a
/// setting, the loader's names.
pub fn candidates(setting: Option<&Path>) -> Vec<PathBuf> {
    match setting {
        Some(p) if p.is_dir() => LOADER_NAMES.iter().map(|n| p.join(n)).collect(),
        Some(p) => vec![p.to_path_buf()],
        None => LOADER_NAMES.iter().map(PathBuf::from).collect(),
    }
}

fn unavailable(tried: Vec<String>, reason: impl Into<String>) -> Error {
    Error::NcclUnavailable {
        tried,
        reason: reason.into(),
    }
}

impl NcclLib {
    /// The process's NCCL, opened once from `REDJIT_NCCL_LIB` or the loader's
    /// search path (see the module docs). A failure is remembered: later calls
    /// return the same error.
    pub fn get() -> Result<&'static NcclLib> {
        static LIB: OnceLock<Result<NcclLib>> = OnceLock::new();
        LIB.get_or_init(|| {
            let setting: Option<OsString> =
                std::env::var_os(NCCL_LIB_ENV).filter(|v| !v.is_empty());
            NcclLib::open(setting.as_deref().map(Path::new))
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// Opens NCCL from `setting` (a file or folder, as `REDJIT_NCCL_LIB` would
    /// say) or, with `None`, through the loader's search path, and resolves
    /// every call; not cached (see [`NcclLib::get`]).
    pub fn open(setting: Option<&Path>) -> Result<NcclLib> {
        let mut tried = Vec::new();
        for c in candidates(setting) {
            // SAFETY: NCCL's initialisers have no preconditions (it sets itself up
            // on the first call, not at load).
            match unsafe { libloading::Library::new(&c) } {
                Ok(lib) => return NcclLib::resolve(lib, c.display().to_string(), tried),
                Err(e) => tried.push(format!("{} ({e})", c.display())),
            }
        }
        let reason = match setting {
            Some(p) => format!("{NCCL_LIB_ENV}={} could not be opened", p.display()),
            None => format!("{NCCL_LIB_ENV} is not set and the dynamic loader found no NCCL"),
        };
        Err(unavailable(tried, reason))
    }

    fn resolve(lib: libloading::Library, path: String, mut tried: Vec<String>) -> Result<NcclLib> {
        fn sym<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
            // SAFETY: each `T` is the C signature of `name` in nccl.h (with
            // enums as the u32 they are passed as); the pointer is kept only
            // while `lib` is alive (NcclLib holds both).
            unsafe { lib.get::<T>(name.as_bytes()).ok().map(|s| *s) }
        }
        let missing = |name: &str, tried: &mut Vec<String>| {
            tried.push(format!("{path} (opened, but it has no {name})"));
            unavailable(
                std::mem::take(tried),
                format!("{path} lacks {name}: not NCCL, or older than 2.11"),
            )
        };
        macro_rules! need {
            ($name:literal) => {
                match sym(&lib, $name) {
                    Some(f) => f,
                    None => return Err(missing($name, &mut tried)),
                }
            };
        }
        let get_version: GetVersion = need!("ncclGetVersion");
        let mut version = 0;
        // SAFETY: out-pointer to a live i32.
        let code = unsafe { get_version(&mut version) };
        if code != 0 {
            tried.push(format!("{path} (ncclGetVersion returned {code})"));
            return Err(unavailable(tried, "ncclGetVersion failed"));
        }
        Ok(NcclLib {
            get_unique_id: need!("ncclGetUniqueId"),
            comm_init_rank: need!("ncclCommInitRank"),
            comm_init_all: need!("ncclCommInitAll"),
            comm_destroy: need!("ncclCommDestroy"),
            comm_get_async_error: need!("ncclCommGetAsyncError"),
            get_error_string: need!("ncclGetErrorString"),
            get_last_error: sym(&lib, "ncclGetLastError"),
            group_start: need!("ncclGroupStart"),
            group_end: need!("ncclGroupEnd"),
            red_op_create_pre_mul_sum: need!("ncclRedOpCreatePreMulSum"),
            red_op_destroy: need!("ncclRedOpDestroy"),
            all_reduce: need!("ncclAllReduce"),
            path,
            version,
            _lib: lib,
        })
    }

    /// Where the library was opened from (a path, or the name the loader
    /// resolved).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// NCCL's version code (`major * 10000 + minor * 100 + patch` since 2.9).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// `code` as a typed error, with NCCL's strings.
    fn check(
        &self,
        code: Code,
        comm: Option<ncclComm_t>,
        during: impl FnOnce() -> String,
    ) -> Result<()> {
        if code == ncclResult_t::ncclSuccess as u32 {
            return Ok(());
        }
        let text = |p: *const c_char| {
            // SAFETY: NCCL returns a static NUL-terminated string (or null).
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        // SAFETY: ncclGetErrorString accepts any value and returns a static string.
        let mut message = text(unsafe { (self.get_error_string)(code) }).unwrap_or_default();
        if let (Some(last), Some(comm)) = (self.get_last_error, comm) {
            // SAFETY: `comm` is a live communicator (or null, which NCCL accepts).
            if let Some(l) = text(unsafe { last(comm) }).filter(|l| !l.is_empty()) {
                message = format!("{message}; last error: {l}");
            }
        }
        Err(Error::Nccl {
            during: during(),
            code,
            name: result_name(code),
            message,
        })
    }
}

/// The name of an `ncclResult_t` value.
pub fn result_name(code: u32) -> String {
    use ncclResult_t::*;
    let known = [
        ncclSuccess,
        ncclUnhandledCudaError,
        ncclSystemError,
        ncclInternalError,
        ncclInvalidArgument,
        ncclInvalidUsage,
        ncclRemoteError,
        ncclInProgress,
        ncclTimeout,
    ];
    known
        .iter()
        .find(|k| **k as u32 == code)
        .map(|k| format!("{k:?}"))
        .unwrap_or_else(|| format!("ncclResult {code}"))
}

/// NCCL's datatype for a redjit dtype: f32, bf16 and f16 (the dtypes the
/// all-reduce reduces).
pub fn nccl_dtype(dtype: DType) -> Result<ncclDataType_t> {
    match dtype {
        DType::F32 => Ok(ncclDataType_t::ncclFloat32),
        DType::BF16 => Ok(ncclDataType_t::ncclBfloat16),
        DType::F16 => Ok(ncclDataType_t::ncclFloat16),
        other => Err(Error::Comm {
            what: "NCCL dtype".into(),
            rule: format!("{other}: the NCCL backend reduces f32, bf16 and f16"),
        }),
    }
}

/// How a redjit op runs in NCCL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NcclOp {
    /// One of NCCL's own ops.
    Builtin(ncclRedOp_t),
    /// `ncclRedOpCreatePreMulSum` with this factor.
    PreMulSum(f32),
}

/// NCCL's one-rank PreMulSum kernel (`oneRankReduce`, `src/device/onerank.cu`,
/// which NCCL runs for avg and premulsum when the communicator has one rank)
/// launches `min(32, ceil(bytes / 16 KiB))` blocks and gives block b the
/// elements `[b, b + 1) * alignUp(count / blocks, 16 / elt_size)`, capped at
/// count: when count / blocks rounds down to a whole pack, the remainder is
/// never written (seen on the H100 with NCCL 2.28.9: avg of 2^20 + 3 f32 left
/// the last 3 unwritten). Whether one call of `count` elements covers them all.
pub fn one_rank_covers(count: usize, elt_size: usize) -> bool {
    if count == 0 {
        return true;
    }
    let pack = (16 / elt_size.max(1)).max(1);
    let blocks = (count * elt_size).div_ceil(16 << 10).clamp(1, 32);
    blocks * (count / blocks).div_ceil(pack) * pack >= count
}

/// Pieces `(offset, count)` tiling `0..count` that NCCL's one-rank PreMulSum
/// kernel covers whole (see [`one_rank_covers`]): the whole call when it does;
/// else a multiple of 32 blocks' packs (when it still launches 32 blocks) and
/// the small rest, or else pieces of 16 KiB (one block each).
pub fn one_rank_pieces(count: usize, elt_size: usize) -> Vec<(usize, usize)> {
    if one_rank_covers(count, elt_size) {
        return vec![(0, count)];
    }
    let pack = (16 / elt_size.max(1)).max(1);
    let head = count / (32 * pack) * (32 * pack);
    if head * elt_size > 31 * (16 << 10) && one_rank_covers(count - head, elt_size) {
        return vec![(0, head), (head, count - head)];
    }
    let step = ((16 << 10) / elt_size.max(1)).max(1);
    (0..count)
        .step_by(step)
        .map(|o| (o, step.min(count - o)))
        .collect()
}

/// The NCCL op for `op` with the call's `scalar`, among `world` ranks: avg with
/// a count of `world` is `ncclAvg`, any other count a premulsum by 1/count.
pub fn nccl_op(op: Op, scalar: Option<f32>, world: u32) -> Result<NcclOp> {
    let need = |meaning: &str| {
        scalar.ok_or_else(|| Error::Comm {
            what: "scalar".into(),
            rule: format!("op {op} needs {meaning}"),
        })
    };
    Ok(match op {
        Op::Sum => NcclOp::Builtin(ncclRedOp_t::ncclSum),
        Op::Prod => NcclOp::Builtin(ncclRedOp_t::ncclProd),
        Op::Min => NcclOp::Builtin(ncclRedOp_t::ncclMin),
        Op::Max => NcclOp::Builtin(ncclRedOp_t::ncclMax),
        Op::PreMulSum => NcclOp::PreMulSum(need("a factor")?),
        Op::Avg => {
            let count = need("a count")?;
            if count == world as f32 {
                NcclOp::Builtin(ncclRedOp_t::ncclAvg)
            } else if count == 0.0 || !count.is_finite() {
                return Err(Error::Comm {
                    what: "scalar".into(),
                    rule: format!(
                        "avg over a count of {count}: the count must be finite and non-zero"
                    ),
                });
            } else {
                NcclOp::PreMulSum(1.0 / count)
            }
        }
    })
}

/// An NCCL unique id: made by one rank ([`NcclId::new`]), handed to every rank
/// (as hex: [`NcclId::to_hex`], [`NcclId::from_hex`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NcclId(pub [u8; 128]);

impl std::fmt::Debug for NcclId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NcclId({}..)", &self.to_hex()[..16])
    }
}

impl NcclId {
    /// A fresh id from `ncclGetUniqueId` (rank 0 makes it; it holds the
    /// address NCCL's own bootstrap listens on).
    pub fn new() -> Result<NcclId> {
        let lib = NcclLib::get()?;
        let mut id = ncclUniqueId { internal: [0; 128] };
        // SAFETY: out-pointer to a live ncclUniqueId.
        lib.check(unsafe { (lib.get_unique_id)(&mut id) }, None, || {
            "ncclGetUniqueId".into()
        })?;
        Ok(NcclId(id.internal.map(|c| c as u8)))
    }

    /// 256 lowercase hex digits.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads [`NcclId::to_hex`]'s text (surrounding whitespace ignored).
    pub fn from_hex(text: &str) -> Result<NcclId> {
        let t = text.trim();
        let bad = || Error::Comm {
            what: "NCCL unique id".into(),
            rule: format!(
                "{:?}: expected 256 hex digits",
                t.chars().take(32).collect::<String>()
            ),
        };
        if t.len() != 256 || !t.is_ascii() {
            return Err(bad());
        }
        let mut id = [0u8; 128];
        for (i, b) in id.iter_mut().enumerate() {
            *b = u8::from_str_radix(&t[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(NcclId(id))
    }

    fn raw(&self) -> ncclUniqueId {
        ncclUniqueId {
            internal: self.0.map(|b| b as c_char),
        }
    }
}

/// Where the NCCL ranks live (one GPU per rank: NCCL refuses two ranks of one
/// communicator on the same device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NcclPlacement {
    /// This process drives every rank; rank r on GPU `ordinals[r]`.
    Devices {
        /// The GPU of each rank, in rank order; no GPU twice.
        ordinals: Vec<usize>,
    },
    /// One process per rank: rank 0 makes the unique id and hands it out
    /// through the bootstrap socket `rendezvous` (the same path in every process).
    Process {
        /// This process's GPU.
        ordinal: usize,
        /// This process's rank.
        rank: u32,
        /// Number of ranks, one per process.
        world: u32,
        /// The bootstrap socket's path.
        rendezvous: PathBuf,
        /// How long to wait for every rank at the rendezvous.
        join_timeout: Duration,
    },
    /// One process per rank, the unique id passed by the caller (every rank
    /// the same id; across hosts, the way to join).
    Given {
        /// This process's GPU.
        ordinal: usize,
        /// This process's rank.
        rank: u32,
        /// Number of ranks.
        world: u32,
        /// The id rank 0 made.
        id: NcclId,
    },
}

impl NcclPlacement {
    /// (world, the ranks this process drives with their GPUs), checked.
    fn ranks(&self) -> Result<(u32, Vec<(u32, usize)>)> {
        let err = |rule: String| Error::Comm {
            what: "NCCL placement".into(),
            rule,
        };
        match self {
            NcclPlacement::Devices { ordinals } => {
                if ordinals.is_empty() {
                    return Err(err("no devices: at least one rank".into()));
                }
                for (i, o) in ordinals.iter().enumerate() {
                    if ordinals[..i].contains(o) {
                        return Err(err(format!(
                            "GPU {o} appears twice in {ordinals:?}: NCCL allows one rank per GPU in a communicator"
                        )));
                    }
                }
                let w = ordinals.len() as u32;
                Ok((
                    w,
                    ordinals
                        .iter()
                        .enumerate()
                        .map(|(r, &o)| (r as u32, o))
                        .collect(),
                ))
            }
            NcclPlacement::Process {
                ordinal,
                rank,
                world,
                ..
            }
            | NcclPlacement::Given {
                ordinal,
                rank,
                world,
                ..
            } => {
                if *rank >= *world {
                    return Err(err(format!(
                        "rank {rank} of world {world}: rank must be below world"
                    )));
                }
                Ok((*world, vec![(*rank, *ordinal)]))
            }
        }
    }
}

struct NcclRank {
    id: u32,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    comm: ncclComm_t,
}

/// An NCCL communicator over the ranks this process drives, with one stream per
/// rank; calls are ordered with [`NcclComm::stream`] like
/// [`super::Communicator`]'s with its main stream.
pub struct NcclComm {
    lib: &'static NcclLib,
    placement: NcclPlacement,
    world: u32,
    ranks: Vec<NcclRank>,
    main: Arc<CudaStream>,
    issuing: Mutex<()>,
    broken: Mutex<Option<String>>,
}

// SAFETY: the NCCL communicators are used only under `issuing` (one call at a
// time), by `synchronize` (ncclCommGetAsyncError is thread-safe) and by drop;
// the CUDA handles are cudarc's Send + Sync types.
unsafe impl Send for NcclComm {}
// SAFETY: as for Send.
unsafe impl Sync for NcclComm {}

impl std::fmt::Debug for NcclComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NcclComm")
            .field("placement", &self.placement)
            .field("world", &self.world)
            .field("lib", &self.lib)
            .finish_non_exhaustive()
    }
}

impl NcclComm {
    /// Opens NCCL (see the module docs) and joins the ranks of `placement`; a
    /// context per GPU, a stream per rank, and a main stream on the first.
    pub fn new(placement: NcclPlacement) -> Result<NcclComm> {
        let (_, ranks) = placement.ranks()?;
        let lib = NcclLib::get()?;
        crate::runtime::gpu_available()?;
        let ctxs = ranks
            .iter()
            .map(|&(_, o)| {
                CudaContext::new(o).during(|| format!("creating a context on device {o}"))
            })
            .collect::<Result<Vec<_>>>()?;
        let main = ctxs[0]
            .new_stream()
            .during(|| "creating the main stream".into())?;
        NcclComm::with_contexts(lib, placement, ctxs, main)
    }

    /// Joins the ranks of `placement` on the given contexts (one per local rank,
    /// in order), ordering calls with `main`.
    pub(crate) fn with_contexts(
        lib: &'static NcclLib,
        placement: NcclPlacement,
        ctxs: Vec<Arc<CudaContext>>,
        main: Arc<CudaStream>,
    ) -> Result<NcclComm> {
        let (world, local) = placement.ranks()?;
        // Streams first: nothing to undo if one fails.
        let streams = local
            .iter()
            .zip(&ctxs)
            .map(|(&(id, _), ctx)| {
                ctx.new_stream()
                    .during(|| format!("rank {id}: creating its stream"))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); local.len()];
        match &placement {
            NcclPlacement::Devices { ordinals } => {
                let devs: Vec<c_int> = ordinals.iter().map(|&o| o as c_int).collect();
                ctxs[0]
                    .bind_to_thread()
                    .during(|| "binding the context".into())?;
                // SAFETY: `comms` has room for one handle per device in `devs`.
                let code = unsafe {
                    (lib.comm_init_all)(comms.as_mut_ptr(), world as c_int, devs.as_ptr())
                };
                lib.check(code, None, || {
                    format!("ncclCommInitAll over GPUs {ordinals:?}")
                })?;
            }
            NcclPlacement::Process {
                rank,
                world,
                rendezvous,
                join_timeout,
                ..
            } => {
                let mine = if *rank == 0 {
                    NcclId::new()?.0
                } else {
                    [0u8; 128]
                };
                let table =
                    super::bootstrap::exchange(rendezvous, *rank, *world, &mine, *join_timeout)?;
                let id: [u8; 128] = table
                    .first()
                    .and_then(|t| t.as_slice().try_into().ok())
                    .ok_or_else(|| Error::Comm {
                        what: "NCCL placement".into(),
                        rule: "rank 0's unique id did not arrive whole".into(),
                    })?;
                init_rank(lib, &ctxs[0], &mut comms[0], *world, NcclId(id), *rank)?;
            }
            NcclPlacement::Given {
                rank, world, id, ..
            } => {
                init_rank(lib, &ctxs[0], &mut comms[0], *world, *id, *rank)?;
            }
        }
        let ranks = local
            .iter()
            .zip(ctxs)
            .zip(streams)
            .zip(comms)
            .map(|(((&(id, _), ctx), stream), comm)| NcclRank {
                id,
                ctx,
                stream,
                comm,
            })
            .collect();
        Ok(NcclComm {
            lib,
            placement,
            world,
            ranks,
            main,
            issuing: Mutex::new(()),
            broken: Mutex::new(None),
        })
    }

    /// Number of ranks.
    pub fn world(&self) -> u32 {
        self.world
    }

    /// The ranks this process drives, in order: `all_reduce` takes one input
    /// and one output for each.
    pub fn local_ranks(&self) -> Vec<u32> {
        self.ranks.iter().map(|r| r.id).collect()
    }

    /// Where the ranks live.
    pub fn placement(&self) -> &NcclPlacement {
        &self.placement
    }

    /// The library in use.
    pub fn lib(&self) -> &'static NcclLib {
        self.lib
    }

    /// The main stream: calls are ordered with its work.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.main
    }

    /// The stream of this process's `local`-th rank, on that rank's GPU (the
    /// place to allocate and read its buffers), or None past the local ranks.
    pub fn rank_stream(&self, local: usize) -> Option<&Arc<CudaStream>> {
        self.ranks.get(local).map(|r| &r.stream)
    }

    /// Why the communicator is broken (an NCCL error seen by `synchronize`).
    pub fn broken(&self) -> Option<String> {
        self.broken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// `outputs[r] = op(inputs[0], ..., inputs[R-1])` on every rank r this
    /// process drives, by NCCL. The call is checked as the peer-memory
    /// communicator checks it (`check_call_for`: rank count, equal dtypes and
    /// sizes, the op's scalar) except for size and alignment, which NCCL does
    /// not limit; `call.algo` and `call.cp_async` are not used.
    pub fn all_reduce(
        &self,
        inputs: &[&dyn KernelInput],
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
    ) -> Result<()> {
        if let Some(reason) = self.broken() {
            return Err(Error::Broken { reason });
        }
        let Ok(_issuing) = self.issuing.try_lock() else {
            return Err(Error::Comm {
                what: "concurrent call".into(),
                rule: "another all-reduce is being issued on this NCCL communicator; one at a time"
                    .into(),
            });
        };
        self.issue(&self.main, inputs, outputs, call)
    }

    /// The call, ordered with `main` (the caller holds whatever lock makes it
    /// the only one issuing).
    pub(crate) fn issue(
        &self,
        main: &Arc<CudaStream>,
        inputs: &[&dyn KernelInput],
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
    ) -> Result<()> {
        let (dtype, n, op) =
            check_call(self.ranks.len() as u32, self.world, inputs, outputs, call)?;
        if n == 0 {
            return Ok(());
        }
        // Each buffer's address on its own rank's stream (its GPU's context);
        // the guards record the reads and writes after NCCL's work is issued.
        let (send, _read): (Vec<u64>, Vec<SyncOnDrop<'_>>) = inputs
            .iter()
            .zip(&self.ranks)
            .map(|(i, r)| i.read_address(&r.stream))
            .unzip();
        let (recv, _written): (Vec<u64>, Vec<SyncOnDrop<'_>>) = outputs
            .iter_mut()
            .zip(&self.ranks)
            .map(|(o, r)| o.write_address(&r.stream))
            .unzip();
        self.issue_addresses(main, &send, &recv, n, dtype, op)
    }

    /// The hierarchical mode's cross-host step: an all-reduce of `n` elements
    /// of `dtype` in place at `at` (this communicator's one local rank), ordered
    /// with `main`.
    pub(crate) fn issue_in_place(
        &self,
        main: &Arc<CudaStream>,
        at: u64,
        n: usize,
        dtype: DType,
        op: NcclOp,
    ) -> Result<()> {
        if let Some(reason) = self.broken() {
            return Err(Error::Broken { reason });
        }
        if self.ranks.len() != 1 {
            return Err(Error::Comm {
                what: "local ranks".into(),
                rule: format!(
                    "an in-place slice call drives one local rank; this communicator drives {}",
                    self.ranks.len()
                ),
            });
        }
        let Ok(_issuing) = self.issuing.try_lock() else {
            return Err(Error::Comm {
                what: "concurrent call".into(),
                rule: "another all-reduce is being issued on this NCCL communicator; one at a time"
                    .into(),
            });
        };
        if n == 0 {
            return Ok(());
        }
        self.issue_addresses(main, &[at], &[at], n, dtype, op)
    }

    /// `ncclAllReduce` from `send[i]` to `recv[i]` (device addresses of `n`
    /// elements of `dtype`, checked by the caller) on local rank i, ordered with
    /// `main`.
    fn issue_addresses(
        &self,
        main: &Arc<CudaStream>,
        send: &[u64],
        recv: &[u64],
        n: usize,
        dtype: DType,
        op: NcclOp,
    ) -> Result<()> {
        let datatype = nccl_dtype(dtype)? as u32;
        for rank in &self.ranks {
            let r = rank.id;
            rank.stream
                .join(main)
                .during(|| format!("rank {r}: waiting for the main stream"))?;
        }
        // premulsum: one op per communicator, its factor in the call's dtype.
        let mut ops: Vec<Code> = Vec::new();
        let mut result = Ok(());
        for rank in &self.ranks {
            let made = match op {
                NcclOp::Builtin(b) => Ok(b as u32),
                NcclOp::PreMulSum(f) => self.create_premulsum(rank, f, dtype, datatype),
            };
            match made {
                Ok(o) => ops.push(o),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // One rank with a scaling op runs NCCL's one-rank kernel, which can drop
        // a remainder: split the call into pieces it covers whole.
        let elt_bytes = dtype.info().bytes as usize;
        let scaling = matches!(
            op,
            NcclOp::PreMulSum(_) | NcclOp::Builtin(ncclRedOp_t::ncclAvg)
        );
        let pieces = if self.world == 1 && scaling {
            one_rank_pieces(n, elt_bytes)
        } else {
            vec![(0, n)]
        };
        if result.is_ok() {
            result = self.grouped(|| {
                for (i, rank) in self.ranks.iter().enumerate() {
                    let r = rank.id;
                    rank.ctx
                        .bind_to_thread()
                        .during(|| format!("rank {r}: binding its context"))?;
                    // SAFETY: send[i] and recv[i] are device buffers of n elements
                    // of `datatype` on rank i's GPU (check_call_for checked both
                    // lengths and dtypes, or the hierarchical caller passes its
                    // own scratch slice of n elements); `ops[i]` belongs to rank i's live
                    // communicator; the stream is a live stream of its context.
                    for &(at, count) in &pieces {
                        let skip = (at * elt_bytes) as u64;
                        // SAFETY: as above; `at + count <= n`, so each piece lies
                        // within both buffers.
                        let code = unsafe {
                            (self.lib.all_reduce)(
                                (send[i] + skip) as *const c_void,
                                (recv[i] + skip) as *mut c_void,
                                count,
                                datatype,
                                ops[i],
                                rank.comm,
                                rank.stream.cu_stream() as *mut c_void,
                            )
                        };
                        self.lib.check(code, Some(rank.comm), || {
                            format!("ncclAllReduce on rank {r}")
                        })?;
                    }
                }
                Ok(())
            });
        }
        if let NcclOp::PreMulSum(_) = op {
            // NCCL resolves the op when the call is enqueued (at ncclGroupEnd),
            // so it may be destroyed right after.
            for (rank, &o) in self.ranks.iter().zip(&ops) {
                // SAFETY: `o` was created on `rank.comm`, which is alive.
                let code = unsafe { (self.lib.red_op_destroy)(o, rank.comm) };
                let r = rank.id;
                let destroyed = self.lib.check(code, Some(rank.comm), || {
                    format!("ncclRedOpDestroy on rank {r}")
                });
                if result.is_ok() {
                    result = destroyed;
                }
            }
        }
        result?;
        for rank in &self.ranks {
            let r = rank.id;
            main.join(&rank.stream)
                .during(|| format!("main stream waiting for rank {r}"))?;
        }
        Ok(())
    }

    fn create_premulsum(
        &self,
        rank: &NcclRank,
        factor: f32,
        dtype: DType,
        datatype: u32,
    ) -> Result<Code> {
        let (f32v, bf16v, f16v) = (
            factor,
            half::bf16::from_f32(factor),
            half::f16::from_f32(factor),
        );
        let scalar: *const c_void = match dtype {
            DType::BF16 => (&bf16v as *const half::bf16).cast(),
            DType::F16 => (&f16v as *const half::f16).cast(),
            _ => (&f32v as *const f32).cast(),
        };
        let mut op: Code = 0;
        let r = rank.id;
        // SAFETY: `scalar` points to a live value of `datatype`, which NCCL copies
        // (host-immediate residence) before returning; `op` is a live out-param.
        let code = unsafe {
            (self.lib.red_op_create_pre_mul_sum)(
                &mut op,
                scalar as *mut c_void,
                datatype,
                ncclScalarResidence_t::ncclScalarHostImmediate as u32,
                rank.comm,
            )
        };
        self.lib.check(code, Some(rank.comm), || {
            format!("ncclRedOpCreatePreMulSum({factor}) on rank {r}")
        })?;
        Ok(op)
    }

    /// Runs `f` inside ncclGroupStart/End when this process drives more than
    /// one rank (NCCL would otherwise wait inside the first rank's call for the
    /// others); the group is always ended.
    fn grouped(&self, f: impl FnOnce() -> Result<()>) -> Result<()> {
        if self.ranks.len() == 1 {
            return f();
        }
        // SAFETY: no arguments.
        self.lib
            .check(unsafe { (self.lib.group_start)() }, None, || {
                "ncclGroupStart".into()
            })?;
        let result = f();
        // SAFETY: no arguments; closes the group opened above.
        let ended = self.lib.check(unsafe { (self.lib.group_end)() }, None, || {
            "ncclGroupEnd".into()
        });
        result.and(ended)
    }

    /// Waits for every rank and the main stream, then asks NCCL for an
    /// asynchronous error on each communicator: one breaks this communicator
    /// (every later call is an `Err`).
    pub fn synchronize(&self) -> Result<()> {
        for rank in &self.ranks {
            let r = rank.id;
            rank.stream
                .synchronize()
                .during(|| format!("rank {r}: synchronising"))?;
        }
        self.main
            .synchronize()
            .during(|| "synchronising the main stream".into())?;
        for rank in &self.ranks {
            let mut async_err: Code = 0;
            // SAFETY: a live communicator and an out-pointer to a live u32.
            let code = unsafe { (self.lib.comm_get_async_error)(rank.comm, &mut async_err) };
            let r = rank.id;
            self.lib.check(code, Some(rank.comm), || {
                format!("ncclCommGetAsyncError on rank {r}")
            })?;
            if let Err(e) = self
                .lib
                .check(async_err, Some(rank.comm), || format!("rank {r}"))
            {
                let reason = e.to_string();
                *self.broken.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason);
                return Err(e);
            }
        }
        if let Some(reason) = self.broken() {
            return Err(Error::Broken { reason });
        }
        Ok(())
    }
}

/// Validates one NCCL call without a GPU, for a process driving `local` of
/// `world` ranks: the peer-memory communicator's checks
/// ([`check_call_for`]: rank count, equal dtypes and sizes, the op's scalar)
/// except size and alignment, which NCCL does not limit, then the dtype and op
/// in NCCL's terms. Returns the dtype, the element count and the op.
pub fn check_call(
    local: u32,
    world: u32,
    inputs: &[&dyn KernelInput],
    outputs: &[&mut dyn KernelOutput],
    call: Call,
) -> Result<(DType, usize, NcclOp)> {
    // No output addresses: NCCL takes any alignment, so the peer kernels'
    // 16-byte rule is not applied; no staging buffer, so no size limit.
    let (dtype, n) = check_call_for(local, world, usize::MAX, inputs, outputs, &[], call)?;
    if call.skip_rank.is_some() {
        return Err(Error::Comm {
            what: "skip_rank".into(),
            rule: "the NCCL backend has no skipped-rank test hook (NCCL would wait for the rank forever)".into(),
        });
    }
    nccl_dtype(dtype)?;
    Ok((dtype, n, nccl_op(call.op, call.scalar, world)?))
}

fn init_rank(
    lib: &NcclLib,
    ctx: &Arc<CudaContext>,
    comm: &mut ncclComm_t,
    world: u32,
    id: NcclId,
    rank: u32,
) -> Result<()> {
    ctx.bind_to_thread()
        .during(|| "binding the context".into())?;
    // SAFETY: `comm` is a live out-param; the id is passed by value as nccl.h
    // declares; NCCL uses the current (primary) context's device.
    let code = unsafe { (lib.comm_init_rank)(comm, world as c_int, id.raw(), rank as c_int) };
    lib.check(code, None, || {
        format!("ncclCommInitRank (rank {rank} of {world})")
    })
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // Destroying the comms of several local ranks from one thread is
        // grouped (with the comms still healthy, destroy may wait for its
        // peers). Errors here cannot reach anyone: NCCL has released or leaked
        // the comm either way.
        let destroy = || {
            for rank in &self.ranks {
                if rank.comm.is_null() || rank.ctx.bind_to_thread().is_err() {
                    continue;
                }
                // SAFETY: a communicator this struct made and no one else holds.
                let _ = unsafe { (self.lib.comm_destroy)(rank.comm) };
            }
            Ok(())
        };
        let _ = self.grouped(destroy);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_map_to_nccl_and_others_are_refused() {
        assert_eq!(nccl_dtype(DType::F32).unwrap() as u32, 7);
        assert_eq!(nccl_dtype(DType::F16).unwrap() as u32, 6);
        assert_eq!(nccl_dtype(DType::BF16).unwrap() as u32, 9);
        for d in [DType::E4M3, DType::E5M2, DType::I8] {
            let e = nccl_dtype(d).unwrap_err().to_string();
            assert!(e.contains("reduces f32, bf16 and f16"), "{e}");
        }
    }

    #[test]
    fn ops_map_to_nccl() {
        use ncclRedOp_t::*;
        let b = NcclOp::Builtin;
        assert_eq!(nccl_op(Op::Sum, None, 4).unwrap(), b(ncclSum));
        assert_eq!(nccl_op(Op::Prod, None, 4).unwrap(), b(ncclProd));
        assert_eq!(nccl_op(Op::Min, None, 4).unwrap(), b(ncclMin));
        assert_eq!(nccl_op(Op::Max, None, 4).unwrap(), b(ncclMax));
        assert_eq!(nccl_op(Op::Avg, Some(4.0), 4).unwrap(), b(ncclAvg));
        assert_eq!(
            nccl_op(Op::Avg, Some(2.0), 4).unwrap(),
            NcclOp::PreMulSum(0.5)
        );
        assert_eq!(
            nccl_op(Op::PreMulSum, Some(0.75), 4).unwrap(),
            NcclOp::PreMulSum(0.75)
        );
        // NCCL's values, as nccl.h numbers them.
        assert_eq!(
            [ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg].map(|o| o as u32),
            [0, 1, 2, 3, 4]
        );
        for op in [Op::Avg, Op::PreMulSum] {
            assert!(
                nccl_op(op, None, 2)
                    .unwrap_err()
                    .to_string()
                    .contains("needs")
            );
        }
        assert!(
            nccl_op(Op::Avg, Some(0.0), 2)
                .unwrap_err()
                .to_string()
                .contains("non-zero")
        );
        // Every registry op has a mapping.
        for op in Op::ALL {
            nccl_op(*op, Some(2.0), 2).unwrap();
        }
    }

    /// The failing H100 case is detected, and every split tiles the call with
    /// pieces the one-rank kernel covers, for every size class it launches.
    #[test]
    fn one_rank_pieces_tile_the_call_and_are_covered() {
        assert!(!one_rank_covers((1 << 20) + 3, 4));
        assert!(one_rank_covers(1 << 20, 4));
        assert!(one_rank_covers(1031, 4));
        for elt in [2usize, 4] {
            let mut sizes: Vec<usize> = (0..3000).collect();
            for base in [1usize << 14, 1 << 17, 1 << 20, 1 << 24, 123_457, 1_000_003] {
                sizes.extend(base.saturating_sub(70)..base + 70);
            }
            for n in sizes {
                let pieces = one_rank_pieces(n, elt);
                let mut next = 0;
                for &(at, count) in &pieces {
                    assert_eq!(at, next, "n={n} elt={elt}: {pieces:?}");
                    assert!(
                        count > 0 || n == 0,
                        "n={n} elt={elt}: empty piece in {pieces:?}"
                    );
                    assert!(
                        one_rank_covers(count, elt),
                        "n={n} elt={elt}: piece {at}+{count} not covered"
                    );
                    next += count;
                }
                assert_eq!(next, n, "n={n} elt={elt}: {pieces:?}");
                assert!(
                    pieces.len() <= 32,
                    "n={n} elt={elt}: {} pieces",
                    pieces.len()
                );
            }
        }
    }

    #[test]
    fn ids_round_trip_through_hex() {
        let id = NcclId(std::array::from_fn(|i| (i * 37) as u8));
        assert_eq!(
            NcclId::from_hex(&format!(" {}\n", id.to_hex())).unwrap(),
            id
        );
        assert!(
            NcclId::from_hex("abc")
                .unwrap_err()
                .to_string()
                .contains("256 hex digits")
        );
        assert!(NcclId::from_hex(&"zz".repeat(128)).is_err());
    }

    #[test]
    fn result_codes_have_names() {
        assert_eq!(result_name(5), "ncclInvalidUsage");
        assert_eq!(result_name(77), "ncclResult 77");
    }
}
