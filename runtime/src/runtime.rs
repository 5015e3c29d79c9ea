//! `Runtime`: one GPU, one stream, a `Jit` for its arch, loaded kernels by name.
//!
//! ```no_run
//! use redjit_runtime::{ReduceCopySpec, Runtime, RuntimeOptions};
//!
//! # fn main() -> Result<(), redjit_runtime::Error> {
//! let rt = Runtime::with_options(RuntimeOptions::default().ordinal(0).no_disk_cache(true))?;
//! println!("{} ({}), {} SMs", rt.device().name, rt.device().arch, rt.device().sm_count);
//! let specs: Vec<ReduceCopySpec> = ReduceCopySpec::matrix(4, redjit_runtime::DType::BF16);
//! let report = rt.prepare(&specs)?; // one parallel compile, then module loads
//! println!("{} kernels, {} compiled, in {:?}", report.kernels, report.compiled, report.wall);
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use redjit_codegen::tuning::Selection;
use redjit_codegen::{Arch, KernelSpec};

use crate::autotune::state::{Autotune, AutotuneState};
use crate::cache::{CacheKey, CompileCache, Origin};
use crate::device::DeviceInfo;
use crate::error::{DriverContext, Error, Result};
use crate::jit::{Compiled, Jit};

/// How a runtime is set up.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RuntimeOptions {
    /// The GPU to drive.
    pub ordinal: usize,
    /// `None`: `$REDJIT_CACHE_DIR` or the platform cache directory. A folder
    /// that cannot be made leaves the runtime a memory-only cache and a
    /// warning, never an error.
    pub cache_dir: Option<std::path::PathBuf>,
    /// Keep compiled kernels in memory only.
    pub no_disk_cache: bool,
    /// Turn off cudarc's per-buffer event tracking on this runtime's context
    /// before anything is allocated on it. With tracking on (cudarc's default,
    /// once a second stream exists, as the runtime's own stream makes one),
    /// every tracked buffer a launch takes costs an event wait before it and
    /// an event record after it: driver calls on the host, and commands the
    /// stream runs around the kernel, which small launches feel on the GPU
    /// too. Turn it off when one stream uses the buffers, or when you order
    /// your streams yourself (events, `join`).
    pub no_event_tracking: bool,
    /// Launch nothing cooperatively. The one kernel that asks for it (16-bit
    /// layer norm's long rows, when every item of the call fits one resident
    /// wave) then takes its items by ticket: 3-5 % slower where measured
    /// (H100, 16-bit rows of 10^5-10^6; the record is in commit de99915). For a
    /// partition of the device (MPS) whose driver refuses or cannot keep the
    /// promise of a cooperative launch; a launch the driver refuses as too
    /// large falls back to the ticket by itself.
    pub no_cooperative_launch: bool,
    /// Whether the first call of a norm operation at a shape class times a
    /// few layouts and keeps the fastest ([`crate::autotune`]); `None`:
    /// `$REDJIT_AUTOTUNE` decides (`1`: on a device no table was measured on,
    /// `always`: everywhere; unset: off).
    pub autotune: Option<Autotune>,
}

impl RuntimeOptions {
    /// Sets [`RuntimeOptions::ordinal`].
    pub fn ordinal(mut self, ordinal: usize) -> Self {
        self.ordinal = ordinal;
        self
    }
    /// Sets [`RuntimeOptions::cache_dir`].
    pub fn cache_dir(mut self, cache_dir: Option<std::path::PathBuf>) -> Self {
        self.cache_dir = cache_dir;
        self
    }
    /// Sets [`RuntimeOptions::no_disk_cache`].
    pub fn no_disk_cache(mut self, no_disk_cache: bool) -> Self {
        self.no_disk_cache = no_disk_cache;
        self
    }
    /// Sets [`RuntimeOptions::no_event_tracking`].
    pub fn no_event_tracking(mut self, no_event_tracking: bool) -> Self {
        self.no_event_tracking = no_event_tracking;
        self
    }
    /// Sets [`RuntimeOptions::no_cooperative_launch`].
    pub fn no_cooperative_launch(mut self, no_cooperative_launch: bool) -> Self {
        self.no_cooperative_launch = no_cooperative_launch;
        self
    }
    /// Sets [`RuntimeOptions::autotune`].
    pub fn autotune(mut self, autotune: Option<Autotune>) -> Self {
        self.autotune = autotune;
        self
    }
}

/// What `prepare` did.
#[derive(Debug, Clone)]
pub struct PrepareReport {
    /// Kernels asked for (loaded already or not).
    pub kernels: usize,
    /// Of those not loaded yet: compiled by NVRTC now.
    pub compiled: usize,
    /// Of those not loaded yet: read from the disk cache.
    pub from_disk: usize,
    /// Of those not loaded yet: found in this process's memory cache.
    pub from_memory: usize,
    /// Compile (parallel) plus module load, wall clock.
    pub wall: Duration,
    /// Of `wall`: cache lookups and NVRTC (waiting for its load, if still under way).
    pub compile: Duration,
    /// Of `wall`: loading modules into the context (`cuModuleLoadData`).
    pub load: Duration,
}

/// One GPU: its context and stream, a [`Jit`] for its arch, and the kernels
/// loaded so far (by name). Launchers such as [`Runtime::reduce_copy`] take
/// their kernels from here.
pub struct Runtime {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    device: DeviceInfo,
    jit: Jit,
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// Loaded modules by the key their artifact is stored under: the kernels of
    /// one batch share one module.
    modules: Mutex<HashMap<CacheKey, Arc<CudaModule>>>,
    context_time: Duration,
    tuning: Selection,
    autotune: AutotuneState,
}

/// Blocks of `threads` threads of `func` an SM keeps resident when each
/// launches with `dynamic_smem` bytes of dynamic shared memory (the occupancy
/// API, so this very kernel's registers and shared memory count), at least 1;
/// `kernel` names it in an error.
pub(crate) fn blocks_per_sm(
    func: &CudaFunction,
    threads: u32,
    dynamic_smem: usize,
    kernel: &str,
) -> Result<u32> {
    let n = func
        .occupancy_max_active_blocks_per_multiprocessor(threads, dynamic_smem, None)
        .during(|| format!("querying the occupancy of {kernel}"))?;
    Ok(n.max(1))
}

/// Checks that a CUDA driver and a device exist, without cudarc's panic when the
/// driver library is missing.
pub fn gpu_available() -> Result<usize> {
    if !crate::libraries::driver_present() {
        return Err(Error::NoGpu(
            "the CUDA driver library (libcuda.so) is not installed".into(),
        ));
    }
    let n = CudaContext::device_count().during(|| "cuDeviceGetCount".into())?;
    if n <= 0 {
        return Err(Error::NoGpu("the CUDA driver reports no devices".into()));
    }
    Ok(n as usize)
}

/// Loads NVRTC (~10 ms) on a thread of its own, beside context creation
/// (~100 ms), so that a cold start finds it ready; a warm start, served from
/// the disk cache, never waits for it.
fn load_nvrtc_aside() {
    std::thread::spawn(|| {
        let _ = crate::nvrtc::Nvrtc::load();
    });
}

impl Runtime {
    /// A runtime on GPU `ordinal` with the default disk cache.
    pub fn new(ordinal: usize) -> Result<Runtime> {
        Runtime::with_options(RuntimeOptions {
            ordinal,
            ..RuntimeOptions::default()
        })
    }

    /// A runtime set up as `opts` says; [`Error::NoGpu`] without a driver or
    /// device.
    pub fn with_options(opts: RuntimeOptions) -> Result<Runtime> {
        let count = gpu_available()?;
        if opts.ordinal >= count {
            return Err(Error::NoGpu(format!(
                "device ordinal {} requested, {count} device(s) present",
                opts.ordinal
            )));
        }
        load_nvrtc_aside();
        let t0 = Instant::now();
        let ctx = CudaContext::new(opts.ordinal)
            .during(|| format!("creating a context on device {}", opts.ordinal))?;
        if opts.no_event_tracking {
            // SAFETY: nothing has been allocated on this context object yet; the
            // option's doc puts ordering across streams on the caller.
            unsafe { ctx.disable_event_tracking() };
        }
        let stream = ctx.new_stream().during(|| "creating a stream".into())?;
        Runtime::build(ctx, stream, t0.elapsed(), &opts)
    }

    /// A runtime that launches on another library's stream (candle's, say):
    /// its context is the stream's, and its launches are ordered with that
    /// library's work on the stream. `opts.ordinal` and
    /// `opts.no_event_tracking` are not used: the stream says the device, and
    /// its context was set up by its owner.
    pub fn on_stream(stream: Arc<CudaStream>, opts: RuntimeOptions) -> Result<Runtime> {
        load_nvrtc_aside();
        let ctx = stream.context().clone();
        Runtime::build(ctx, stream, Duration::ZERO, &opts)
    }

    fn build(
        ctx: Arc<CudaContext>,
        stream: Arc<CudaStream>,
        context_time: Duration,
        opts: &RuntimeOptions,
    ) -> Result<Runtime> {
        let ordinal = ctx.ordinal();
        let attr = |a: CUdevice_attribute| ctx.attribute(a).during(|| format!("reading {a:?}"));
        let (major, minor) = ctx
            .compute_capability()
            .during(|| "reading the compute capability".into())?;
        let device = DeviceInfo {
            ordinal,
            name: ctx.name().during(|| "reading the device name".into())?,
            arch: Arch::from_compute_capability(major, minor),
            sm_count: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1)
                as u32,
            l2_bytes: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u64,
            max_shared_per_block: attr(
                CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )?
            .max(0) as u64,
            total_mem: ctx
                .total_mem()
                .during(|| "reading the memory size".into())? as u64,
            driver_version: driver_version()?,
            cooperative_launch: !opts.no_cooperative_launch
                && attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
        };
        let cache = match (&opts.cache_dir, opts.no_disk_cache) {
            (_, true) => CompileCache::in_memory(),
            (Some(dir), false) => CompileCache::on_disk_or_memory(dir),
            (None, false) => CompileCache::from_env(),
        };
        let dir = cache
            .dir()
            .map(Path::to_path_buf)
            .or_else(crate::cache::default_dir);
        let tuning = crate::tuning::select(&device, dir.as_deref());
        let autotune = AutotuneState::new(
            opts.autotune.unwrap_or_else(Autotune::from_env),
            tuning.measured_here,
            // A memory-only cache keeps its picks in memory too.
            cache.dir(),
            &crate::tuning::device_key(&device),
        );
        let jit = Jit::new(device.arch, cache);
        Ok(Runtime {
            tuning,
            autotune,
            ctx,
            stream,
            device,
            jit,
            functions: Mutex::default(),
            modules: Mutex::default(),
            context_time,
        })
    }

    /// The tuning table kernels are laid out by on this device, and why it
    /// was chosen.
    pub fn tuning(&self) -> &Selection {
        &self.tuning
    }

    /// Autotune's mode and kept picks (`crate::autotune`).
    pub(crate) fn autotune_state(&self) -> &AutotuneState {
        &self.autotune
    }

    /// The CUDA context (primary context of the device).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The runtime's own stream.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Facts about the GPU.
    pub fn device(&self) -> &DeviceInfo {
        &self.device
    }

    /// The JIT (and through it the compile cache) the runtime compiles with.
    pub fn jit(&self) -> &Jit {
        &self.jit
    }

    /// Time spent creating the CUDA context and stream (reported apart from JIT).
    pub fn context_time(&self) -> Duration {
        self.context_time
    }

    /// Compiles (in parallel, through the cache) and loads every spec not loaded yet.
    pub fn prepare<S: KernelSpec>(&self, specs: &[S]) -> Result<PrepareReport> {
        let t0 = Instant::now();
        let pending: Vec<&S> = {
            let loaded = self.lock();
            specs
                .iter()
                .filter(|s| !loaded.contains_key(&s.name()))
                .collect()
        };
        let mut report = PrepareReport {
            kernels: specs.len(),
            compiled: 0,
            from_disk: 0,
            from_memory: 0,
            wall: Duration::ZERO,
            compile: Duration::ZERO,
            load: Duration::ZERO,
        };
        let results = self.jit.compile_all(&pending);
        report.compile = t0.elapsed();
        for compiled in results {
            let compiled = compiled?;
            match compiled.origin {
                Origin::Compiled => report.compiled += 1,
                Origin::Disk => report.from_disk += 1,
                Origin::Memory => report.from_memory += 1,
            }
            self.load(&compiled)?;
        }
        report.wall = t0.elapsed();
        report.load = report.wall - report.compile;
        Ok(report)
    }

    /// Whether the kernel `name` is loaded (by `prepare` or an earlier use): lets a
    /// caller serialise first uses, so a kernel is compiled once, without taking a
    /// lock on every launch.
    pub fn is_loaded(&self, name: &str) -> bool {
        self.lock().contains_key(name)
    }

    /// The loaded kernel for `spec`, compiling and loading it on first use.
    pub fn function<S: KernelSpec + ?Sized>(&self, spec: &S) -> Result<CudaFunction> {
        if let Some(f) = self.lock().get(&spec.name()) {
            return Ok(f.clone());
        }
        let compiled = self.jit.compile(spec)?;
        self.load(&compiled)
    }

    fn load(&self, compiled: &Compiled) -> Result<CudaFunction> {
        let loaded = self.lock_modules().get(&compiled.artifact_key).cloned();
        let module = match loaded {
            Some(m) => m,
            None => {
                let m: Arc<CudaModule> = self
                    .ctx
                    .load_module(Ptx::from_binary(compiled.artifact.bytes.clone()))
                    .during(|| format!("loading the module of {}", compiled.name))?;
                self.lock_modules().insert(compiled.artifact_key, m.clone());
                m
            }
        };
        let f = module
            .load_function(&compiled.name)
            .during(|| format!("finding {} in its module", compiled.name))?;
        self.lock().insert(compiled.name.clone(), f.clone());
        Ok(f)
    }

    fn lock_modules(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Arc<CudaModule>>> {
        self.modules.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CudaFunction>> {
        self.functions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The CUDA driver's version, e.g. 13000 for 13.0.
fn driver_version() -> Result<i32> {
    let mut v = 0;
    // SAFETY: out-pointer to a live i32; the driver library was checked present.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) }
        .result()
        .during(|| "cuDriverGetVersion".into())?;
    Ok(v)
}
