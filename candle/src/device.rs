//! One redjit [`Runtime`] per candle CUDA device, on that device's stream,
//! and the norm kernels it has loaded, kept for the life of the process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use candle_core::Result;
use candle_core::cuda_backend::{CudaDevice, DeviceId};
use redjit_runtime::{KernelSpec, NormKernel, NormSpec, Runtime, RuntimeOptions};

use crate::error::wrap;

/// A candle device's runtime and its loaded kernels by spec name.
pub struct Redjit {
    rt: Runtime,
    norms: Mutex<HashMap<String, Arc<NormKernel<'static>>>>,
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
        norms: Mutex::default(),
    }));
    devices.insert(dev.id(), r);
    Ok(r)
}

impl Redjit {
    /// The runtime (its device, tuning table and JIT).
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }

    /// The norm kernel `spec`, loaded on its first use.
    pub(crate) fn norm(&'static self, spec: &NormSpec) -> Result<Arc<NormKernel<'static>>> {
        let name = spec.name();
        if let Some(k) = self.lock_norms().get(&name) {
            return Ok(k.clone());
        }
        // Compiled (or read from the disk cache) outside the lock.
        let k = Arc::new(self.rt.norm(spec).map_err(wrap)?);
        Ok(self.lock_norms().entry(name).or_insert(k).clone())
    }

    fn lock_norms(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<NormKernel<'static>>>> {
        self.norms.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
