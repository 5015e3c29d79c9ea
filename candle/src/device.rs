//! One redjit [`Runtime`] per candle CUDA device, on that device's stream,
//! and the norm kernels it has loaded, kept for the life of the process.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use candle_core::Result;
use candle_core::cuda_backend::{CudaDevice, DeviceId};
use redjit_runtime::{
    DType, NormKernel, NormOp, NormSpec, ReduceCopyKernel, ReduceCopySpec, ReduceKernel,
    ReduceSpec, Runtime, RuntimeOptions, SoftmaxAlgo,
};

use crate::error::wrap;

/// A candle device's runtime and its loaded kernels.
pub struct Redjit {
    rt: Runtime,
    /// Norm kernels by spec, one each (its loaded functions and workspace).
    norm_specs: Kernels<NormSpec, NormKernel<'static>>,
    /// The same kernels by the call that resolved to each, many to one.
    norms: Kernels<NormKey, NormKernel<'static>>,
    reductions: Kernels<ReduceSpec, ReduceKernel<'static>>,
    copies: Kernels<ReduceCopySpec, ReduceCopyKernel<'static>>,
}

/// A norm call's kernel key: the op, whether it adds the residual, the dtype,
/// and the rows x cols the tuning table lays it out for: a warm call finds
/// its kernel by this, resolving no layout and naming no kernel.
pub(crate) type NormKey = (NormOp, Option<SoftmaxAlgo>, bool, DType, usize, usize);

/// Loaded kernels by key.
type Kernels<Key, K> = Mutex<HashMap<Key, Arc<K>>>;

/// The kernel of `key` in `cache`, else `load`ed (outside the lock: a compile
/// takes a while) and kept.
fn cached<Key: Eq + Hash + Clone, K>(
    cache: &Kernels<Key, K>,
    key: &Key,
    load: impl FnOnce() -> Result<Arc<K>>,
) -> Result<Arc<K>> {
    let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(k) = lock().get(key) {
        return Ok(k.clone());
    }
    let k = load()?;
    Ok(lock().entry(key.clone()).or_insert(k).clone())
}

/// The runtimes made so far, by candle device. Each is leaked on purpose: its
/// kernels borrow it, and a device's kernels live as long as the process.
static DEVICES: OnceLock<Mutex<HashMap<DeviceId, &'static Redjit>>> = OnceLock::new();

/// The runtime of `dev`, made on its first use: it launches on candle's stream
/// of that device, so redjit's kernels and candle's run in order. Kernels are
/// compiled once and kept in redjit's disk cache, as everywhere else.
pub fn redjit(dev: &CudaDevice) -> Result<&'static Redjit> {
    let devices = DEVICES.get_or_init(Mutex::default);
    let mut devices = devices.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(r) = devices.get(&dev.id()) {
        return Ok(r);
    }
    let rt = Runtime::on_stream(dev.cuda_stream(), RuntimeOptions::default()).map_err(wrap)?;
    let r: &'static Redjit = Box::leak(Box::new(Redjit {
        rt,
        norm_specs: Mutex::default(),
        norms: Mutex::default(),
        reductions: Mutex::default(),
        copies: Mutex::default(),
    }));
    devices.insert(dev.id(), r);
    Ok(r)
}

impl Redjit {
    /// The runtime (its device, tuning table and JIT).
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// The norm kernel of `key`, laid out by the device's tuning table and
    /// loaded on its first use.
    pub(crate) fn norm(&'static self, key: NormKey) -> Result<Arc<NormKernel<'static>>> {
        cached(&self.norms, &key, || {
            let (op, algo, residual, dtype, rows, cols) = key;
            let spec = NormSpec::with((op, algo, residual), dtype, dtype, cols as u64).for_shape(
                Some(rows as u64),
                cols as u64,
                &self.rt.tuning().tuning,
            );
            cached(&self.norm_specs, &spec, || {
                self.rt.norm(&spec).map(Arc::new).map_err(wrap)
            })
        })
    }

    /// The reduce kernel `spec`, loaded on its first use.
    pub(crate) fn reduce(&'static self, spec: &ReduceSpec) -> Result<Arc<ReduceKernel<'static>>> {
        cached(&self.reductions, spec, || {
            self.rt.reduce(spec).map(Arc::new).map_err(wrap)
        })
    }

    /// The reduce_copy kernel `spec`, loaded on its first use.
    pub(crate) fn reduce_copy(
        &'static self,
        spec: &ReduceCopySpec,
    ) -> Result<Arc<ReduceCopyKernel<'static>>> {
        cached(&self.copies, spec, || {
            self.rt.reduce_copy(spec).map(Arc::new).map_err(wrap)
        })
    }
}
