//! The all-reduce kernels a communicator launches, found once per spec: each
//! local rank's function and the blocks one rank may keep resident.
//!
//! A call then costs one hash of the spec's fields. Looking a kernel up in
//! the runtime's cache by name builds the name (a `format!`) on every call,
//! and the resident share is a driver query; neither belongs on the per-call
//! path of a 5 µs all-reduce. A spec enters here only after it validated, so
//! a hit needs no second check.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::driver::CudaFunction;
use redjit_codegen::AllReduceSpec;
use redjit_codegen::params::Param;

use crate::error::Result;

/// One spec's kernel on every local rank, in the communicator's rank order.
pub(crate) struct LoadedKernel {
    /// The function in each local rank's context.
    pub(crate) funcs: Vec<CudaFunction>,
    /// Blocks one rank may have resident at once (all the GPU holds, or on a
    /// shared GPU its share): the grid's upper bound. The push kernel's fixed
    /// grid for it, which needs no occupancy query.
    pub(crate) share: u32,
    /// `spec.params()`: what each rank's launch pushes, listed once here.
    pub(crate) params: Vec<Param>,
}

/// The kernels loaded so far, by spec.
#[derive(Default)]
pub(crate) struct KernelCache {
    loaded: Mutex<HashMap<AllReduceSpec, Arc<LoadedKernel>>>,
}

impl KernelCache {
    /// `spec`'s kernel, loaded by `load` on first use (which validates the
    /// spec and compiles it: an error leaves nothing cached).
    pub(crate) fn get_or_load(
        &self,
        spec: &AllReduceSpec,
        load: impl FnOnce() -> Result<LoadedKernel>,
    ) -> Result<Arc<LoadedKernel>> {
        if let Some(k) = self.lock().get(spec) {
            return Ok(k.clone());
        }
        // Loaded outside the lock: a first use compiles for milliseconds. Two
        // threads racing here load the same kernel twice and keep one.
        let k = Arc::new(load()?);
        Ok(self.lock().entry(spec.clone()).or_insert(k).clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<AllReduceSpec, Arc<LoadedKernel>>> {
        self.loaded.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use redjit_codegen::{AllReduceAlgo, DType};

    fn loaded(share: u32) -> Result<LoadedKernel> {
        Ok(LoadedKernel {
            funcs: Vec::new(),
            share,
            params: Vec::new(),
        })
    }

    #[test]
    fn a_spec_loads_once_and_a_failed_load_is_not_kept() {
        let cache = KernelCache::default();
        let spec = AllReduceSpec::default();
        let other = AllReduceSpec {
            dtype: DType::BF16,
            algo: AllReduceAlgo::Push,
            ..AllReduceSpec::default()
        };
        let mut loads = 0;
        for _ in 0..3 {
            let k = cache
                .get_or_load(&spec, || {
                    loads += 1;
                    loaded(7)
                })
                .unwrap();
            assert_eq!(k.share, 7);
        }
        assert_eq!(loads, 1);
        let failed = cache.get_or_load(&other, || {
            Err(Error::Comm {
                what: "test".into(),
                rule: "refused".into(),
            })
        });
        assert!(failed.is_err());
        let k = cache.get_or_load(&other, || loaded(3)).unwrap();
        assert_eq!(k.share, 3);
        // The first spec's kernel is untouched by the other's.
        assert_eq!(cache.get_or_load(&spec, || loaded(99)).unwrap().share, 7);
    }
}
