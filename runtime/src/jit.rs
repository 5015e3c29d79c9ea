//! The JIT: spec -> cache hit, or render (codegen) -> NVRTC -> cache.
//!
//! `Jit` needs no GPU: it compiles for an arch it is given, so the CLI and the CPU
//! tests use it as the runtime does. NVRTC is loaded only when something must be
//! compiled; a warm start keys its lookups from the remembered NVRTC identity
//! (see `identity`) and never renders or loads the compiler.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use redjit_codegen::{Arch, CODEGEN_FINGERPRINT, KernelSource, KernelSpec};

use crate::cache::{CacheKey, CompileCache, Origin};
use crate::error::Result;
use crate::identity::NvrtcIdentity;
use crate::nvrtc::{Artifact, Nvrtc, NvrtcFacts, Target};

/// One compiled kernel and where it came from.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub name: String,
    pub key: CacheKey,
    pub artifact: Arc<Artifact>,
    pub origin: Origin,
}

pub struct Jit {
    /// The GPU the kernels are for; specs are checked against it.
    arch: Arch,
    /// Set for `with_target`; otherwise derived from NVRTC's facts.
    forced_target: Option<Target>,
    cache: CompileCache,
    nvrtc: OnceLock<Nvrtc>,
    facts: Mutex<Option<NvrtcFacts>>,
}

impl Jit {
    /// Compiles for `arch`: cubin when this NVRTC knows the arch, else PTX.
    pub fn new(arch: Arch, cache: CompileCache) -> Jit {
        Jit {
            arch,
            forced_target: None,
            cache,
            nvrtc: OnceLock::new(),
            facts: Mutex::new(None),
        }
    }

    /// Compiles for an explicit target (e.g. PTX, for `redjit ptx` and snapshots).
    pub fn with_target(target: Target, cache: CompileCache) -> Jit {
        Jit {
            forced_target: Some(target),
            ..Jit::new(target.arch, cache)
        }
    }

    /// The NVRTC library, loaded on first use.
    pub fn nvrtc(&self) -> Result<&Nvrtc> {
        if let Some(n) = self.nvrtc.get() {
            return Ok(n);
        }
        let loaded = Nvrtc::load()?;
        if let Some(dir) = self.cache.dir()
            && let Some(id) = NvrtcIdentity::of_loaded(&loaded.facts)
        {
            id.remember(dir);
        }
        *self.lock_facts() = Some(loaded.facts.clone());
        Ok(self.nvrtc.get_or_init(|| loaded))
    }

    /// NVRTC's version and archs: remembered from an earlier process when still
    /// valid, else from loading NVRTC.
    pub fn facts(&self) -> Result<NvrtcFacts> {
        if let Some(f) = self.lock_facts().as_ref() {
            return Ok(f.clone());
        }
        if let Some(id) = self.cache.dir().and_then(NvrtcIdentity::recall) {
            *self.lock_facts() = Some(id.facts.clone());
            return Ok(id.facts);
        }
        Ok(self.nvrtc()?.facts.clone())
    }

    pub fn target(&self) -> Result<Target> {
        match self.forced_target {
            Some(t) => Ok(t),
            None => self.facts()?.target_for(self.arch),
        }
    }

    pub fn arch(&self) -> Arch {
        self.arch
    }

    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }

    /// Validates `spec` for this arch and returns its kernel from the cache, or
    /// renders and compiles it.
    pub fn compile<S: KernelSpec + ?Sized>(&self, spec: &S) -> Result<Compiled> {
        spec.check_arch(self.arch)?;
        let name = spec.name();
        // A second round only when the remembered NVRTC identity proved stale: the
        // first round's compile loaded NVRTC, which refreshed the facts.
        for _ in 0..2 {
            let facts = self.facts()?;
            let target = self.target()?;
            let key =
                CacheKey::for_spec(&name, CODEGEN_FINGERPRINT, target, &facts.version_string());
            let stale = std::cell::Cell::new(false);
            let result = self.cache.get_or_compile(&name, key, target.output, || {
                let nvrtc = self.nvrtc()?;
                if nvrtc.facts != facts {
                    stale.set(true);
                    return Err(crate::Error::NvrtcUnavailable(format!(
                        "the remembered NVRTC {} is not the loaded {}",
                        facts.version_string(),
                        nvrtc.version_string()
                    )));
                }
                nvrtc.compile(&spec.render()?, target)
            });
            if stale.get() {
                continue;
            }
            let (artifact, origin) = result?;
            return Ok(Compiled {
                name,
                key,
                artifact,
                origin,
            });
        }
        Err(crate::Error::NvrtcUnavailable(
            "NVRTC's identity changed twice during one compile".into(),
        ))
    }

    /// Compiles already-rendered source, keyed by its text (through the cache).
    pub fn compile_source(&self, source: &KernelSource) -> Result<Compiled> {
        let nvrtc = self.nvrtc()?;
        let target = self.target()?;
        let key = CacheKey::new(source, target, &nvrtc.version_string());
        let (artifact, origin) =
            self.cache
                .get_or_compile(&source.name, key, target.output, || {
                    nvrtc.compile(source, target)
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

    fn lock_facts(&self) -> std::sync::MutexGuard<'_, Option<NvrtcFacts>> {
        self.facts.lock().unwrap_or_else(|p| p.into_inner())
    }
}
