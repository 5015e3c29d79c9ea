//! The JIT: spec -> source (codegen) -> cache hit, or NVRTC -> cache.
//!
//! `Jit` needs no GPU: it compiles for an arch it is given, so the CLI and the CPU
//! tests use it as the runtime does.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use redjit_codegen::{Arch, KernelSource, KernelSpec};

use crate::cache::{CacheKey, CompileCache, Origin};
use crate::error::Result;
use crate::nvrtc::{Artifact, Nvrtc, Target};

/// One compiled kernel and where it came from.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub name: String,
    pub key: CacheKey,
    pub artifact: Arc<Artifact>,
    pub origin: Origin,
}

pub struct Jit {
    nvrtc: Nvrtc,
    /// The GPU the kernels are for; specs are checked against it.
    arch: Arch,
    target: Target,
    cache: CompileCache,
}

impl Jit {
    /// Compiles for `arch`: cubin when this NVRTC knows the arch, else PTX.
    pub fn new(arch: Arch, cache: CompileCache) -> Result<Jit> {
        let nvrtc = Nvrtc::load()?;
        let target = nvrtc.target_for(arch)?;
        Ok(Jit {
            nvrtc,
            arch,
            target,
            cache,
        })
    }

    /// Compiles for an explicit target (e.g. PTX, for `redjit ptx` and snapshots).
    pub fn with_target(target: Target, cache: CompileCache) -> Result<Jit> {
        Ok(Jit {
            nvrtc: Nvrtc::load()?,
            arch: target.arch,
            target,
            cache,
        })
    }

    pub fn nvrtc(&self) -> &Nvrtc {
        &self.nvrtc
    }

    pub fn target(&self) -> Target {
        self.target
    }

    pub fn arch(&self) -> Arch {
        self.arch
    }

    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }

    /// Validates `spec` for this arch, renders and compiles it (through the cache).
    pub fn compile<S: KernelSpec + ?Sized>(&self, spec: &S) -> Result<Compiled> {
        spec.check_arch(self.arch)?;
        self.compile_source(&spec.render()?)
    }

    /// Compiles already-rendered source (through the cache).
    pub fn compile_source(&self, source: &KernelSource) -> Result<Compiled> {
        let key = CacheKey::new(source, self.target, &self.nvrtc.version_string());
        let (artifact, origin) =
            self.cache
                .get_or_compile(&source.name, key, self.target.output, || {
                    self.nvrtc.compile(source, self.target)
                })?;
        Ok(Compiled {
            name: source.name.clone(),
            key,
            artifact,
            origin,
        })
    }

    /// Compiles many specs in parallel (NVRTC programs are independent), one result
    /// per spec, in order.
    pub fn compile_all<S: KernelSpec + Sync>(&self, specs: &[S]) -> Vec<Result<Compiled>> {
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(specs.len());
        if workers <= 1 {
            return specs.iter().map(|s| self.compile(s)).collect();
        }
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Result<Compiled>>>> =
            Mutex::new((0..specs.len()).map(|_| None).collect());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(spec) = specs.get(i) else { break };
                        let r = self.compile(spec);
                        results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
                    }
                });
            }
        });
        results
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .into_iter()
            .map(|r| r.expect("every index below specs.len() is taken by exactly one worker"))
            .collect()
    }
}
