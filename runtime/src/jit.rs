//! The JIT: spec -> cache hit, or render (codegen) -> NVRTC -> cache.
//!
//! `Jit` needs no GPU: it compiles for an arch it is given, so the CLI and the CPU
//! tests use it as the runtime does. NVRTC is loaded only when something must be
//! compiled; a warm start keys its lookups from the remembered NVRTC identity
//! (see `identity`) and never renders or loads the compiler.
//!
//! ```no_run
//! use redjit_runtime::{Arch, CompileCache, Jit, ReduceCopySpec};
//!
//! # fn main() -> Result<(), redjit_runtime::Error> {
//! // No GPU needed: compile for sm_90 into a memory-only cache.
//! let jit = Jit::new(Arch::SM90, CompileCache::in_memory());
//! let compiled = jit.compile(&ReduceCopySpec::default())?;
//! println!("{} ({:?}, {} bytes)", compiled.name, compiled.origin, compiled.artifact.bytes.len());
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, OnceLock};

use redjit_codegen::{Arch, CODEGEN_FINGERPRINT, KernelSource, KernelSpec};

use crate::cache::Hit;
use crate::cache::{CacheKey, CompileCache, Origin};
use crate::error::{Error, Result};
use crate::identity::NvrtcIdentity;
use crate::nvrtc::{Artifact, Nvrtc, NvrtcFacts, Target};

/// One compiled kernel and where it came from.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The kernel's name (its CUDA symbol).
    pub name: String,
    /// The kernel's cache key.
    pub key: CacheKey,
    /// The cubin or PTX holding the kernel (perhaps with others of its batch).
    pub artifact: Arc<Artifact>,
    /// The key the artifact is stored under: equal for kernels sharing a module.
    pub artifact_key: CacheKey,
    /// Memory, disk, or compiled now.
    pub origin: Origin,
}

impl Compiled {
    fn new(name: String, key: CacheKey, hit: Hit) -> Compiled {
        Compiled {
            name,
            key,
            artifact: hit.artifact,
            artifact_key: hit.artifact_key,
            origin: hit.origin,
        }
    }
}

/// Most kernels rendered into one NVRTC program: a batch this large compiles in
/// well under the time of its kernels compiled apart, and a failure falls back
/// to compiling its kernels one by one.
const MAX_BATCH: usize = 32;

/// Specs in, compiled kernels out, through the cache: the compiler half of the
/// runtime (the module loading and launching are [`crate::Runtime`]'s).
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

    /// What this JIT emits: the forced target, else cubin for its arch when NVRTC
    /// knows it, else PTX.
    pub fn target(&self) -> Result<Target> {
        match self.forced_target {
            Some(t) => Ok(t),
            None => self.facts()?.target_for(self.arch),
        }
    }

    /// The arch specs are checked against.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The compile cache in front of NVRTC.
    pub fn cache(&self) -> &CompileCache {
        &self.cache
    }

    /// Validates `spec` for this arch and returns its kernel from the cache, or
    /// renders and compiles it.
    pub fn compile<S: KernelSpec + ?Sized>(&self, spec: &S) -> Result<Compiled> {
        self.compile_all(&[spec])
            .pop()
            .unwrap_or_else(|| unreachable!("one result per spec"))
    }

    /// Compiles already-rendered source, keyed by its text (through the cache).
    pub fn compile_source(&self, source: &KernelSource) -> Result<Compiled> {
        let nvrtc = self.nvrtc()?;
        let target = self.target()?;
        let key = CacheKey::new(source, target, &nvrtc.version_string());
        let hit = self
            .cache
            .get_or_compile(&source.name, key, target.output, || {
                nvrtc.compile(source, target)
            })?;
        Ok(Compiled::new(source.name.clone(), key, hit))
    }

    /// Compiles many specs, one result per spec, in order. Cached kernels come
    /// from the cache; the rest are rendered into as few NVRTC programs as
    /// `MAX_BATCH` allows (NVRTC serialises programs within a process, so one
    /// program of N kernels beats N programs on N threads).
    pub fn compile_all<S: KernelSpec>(&self, specs: &[S]) -> Vec<Result<Compiled>> {
        // A second round only when the remembered NVRTC identity proved stale:
        // loading NVRTC for the first round refreshed the facts and the keys.
        let first = self.compile_round(specs);
        match first {
            Ok(results) => results,
            Err(()) => self.compile_round(specs).unwrap_or_else(|()| {
                specs
                    .iter()
                    .map(|_| {
                        Err(Error::NvrtcUnavailable(
                            "NVRTC's identity changed during the compile".into(),
                        ))
                    })
                    .collect()
            }),
        }
    }

    /// `Err(())`: the keys were computed from a stale NVRTC identity; retry.
    fn compile_round<S: KernelSpec>(&self, specs: &[S]) -> Result<Vec<Result<Compiled>>, ()> {
        let mut results: Vec<Option<Result<Compiled>>> = specs.iter().map(|_| None).collect();
        let setup = self.facts().and_then(|f| Ok((self.target()?, f)));
        let (target, facts) = match setup {
            Ok(t) => t,
            Err(e) => {
                return Ok(specs.iter().map(|_| Err(unavailable(&e))).collect());
            }
        };
        let version = facts.version_string();
        // Look every spec up; collect the misses, each name once.
        let mut misses: Vec<(usize, String, CacheKey)> = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            if let Err(e) = spec.check_arch(self.arch) {
                results[i] = Some(Err(e.into()));
                continue;
            }
            let name = spec.name();
            let key = CacheKey::for_spec(&name, CODEGEN_FINGERPRINT, target, &version);
            match self.cache.lookup(&name, key, target.output) {
                Some(hit) => results[i] = Some(Ok(Compiled::new(name, key, hit))),
                None => misses.push((i, name, key)),
            }
        }
        if !misses.is_empty() {
            let nvrtc = match self.nvrtc() {
                Ok(n) => n,
                Err(e) => {
                    for (i, _, _) in &misses {
                        results[*i] = Some(Err(unavailable(&e)));
                    }
                    return Ok(finish(results));
                }
            };
            if nvrtc.facts != facts {
                return Err(());
            }
            let mut unique: Vec<(usize, String, CacheKey)> = Vec::new();
            for m in &misses {
                if !unique.iter().any(|u| u.1 == m.1) {
                    unique.push(m.clone());
                }
            }
            for chunk in unique.chunks(MAX_BATCH) {
                for (name, result) in self.compile_chunk(nvrtc, target, specs, chunk) {
                    for (i, n, key) in &misses {
                        if *n == name {
                            results[*i] = Some(
                                result
                                    .as_ref()
                                    .map(|c| Compiled {
                                        key: *key,
                                        ..c.clone()
                                    })
                                    .map_err(Clone::clone),
                            );
                        }
                    }
                }
            }
        }
        Ok(finish(results))
    }

    /// Compiles one chunk of uncached kernels: as one program when it has several
    /// (falling back to one program per kernel if that fails, so each error lands
    /// on its own kernel), else alone.
    fn compile_chunk<S: KernelSpec>(
        &self,
        nvrtc: &Nvrtc,
        target: Target,
        specs: &[S],
        chunk: &[(usize, String, CacheKey)],
    ) -> Vec<(String, Result<Compiled>)> {
        let alone = |i: usize, name: &str, key: CacheKey| -> Result<Compiled> {
            let artifact = nvrtc.compile(&specs[i].render()?, target)?;
            Ok(Compiled::new(
                name.to_string(),
                key,
                self.cache.store(name, key, artifact),
            ))
        };
        if let [(i, name, key)] = chunk {
            return vec![(name.clone(), alone(*i, name, *key))];
        }
        let members: Vec<&dyn KernelSpec> = chunk
            .iter()
            .map(|(i, _, _)| &specs[*i] as &dyn KernelSpec)
            .collect();
        let batch = redjit_codegen::render_batch(&members)
            .map_err(Error::from)
            .and_then(|source| nvrtc.compile(&source, target));
        match batch {
            Ok(artifact) => {
                let keys: Vec<(String, CacheKey)> =
                    chunk.iter().map(|(_, n, k)| (n.clone(), *k)).collect();
                let hit = self.cache.store_batch(&keys, artifact);
                chunk
                    .iter()
                    .map(|(_, name, key)| {
                        (
                            name.clone(),
                            Ok(Compiled::new(name.clone(), *key, hit.clone())),
                        )
                    })
                    .collect()
            }
            Err(_) => chunk
                .iter()
                .map(|(i, name, key)| (name.clone(), alone(*i, name, *key)))
                .collect(),
        }
    }

    fn lock_facts(&self) -> std::sync::MutexGuard<'_, Option<NvrtcFacts>> {
        self.facts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The error each kernel of a round gets when NVRTC could not be set up: an
/// `NvrtcUnavailable` as it is (wrapping its message again would repeat the
/// advice), anything else as the reason NVRTC is unavailable.
fn unavailable(e: &Error) -> Error {
    match e {
        Error::NvrtcUnavailable(reason) => Error::NvrtcUnavailable(reason.clone()),
        other => Error::NvrtcUnavailable(other.to_string()),
    }
}

/// Every slot is filled by `compile_round`; an empty one would be a bug there.
fn finish(results: Vec<Option<Result<Compiled>>>) -> Vec<Result<Compiled>> {
    results
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| {
                Err(Error::NvrtcUnavailable(
                    "internal: a kernel was neither found nor compiled".into(),
                ))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrtc_unavailable_is_said_once() {
        let e = unavailable(&Error::NvrtcUnavailable("no libnvrtc found".into())).to_string();
        assert_eq!(e.matches("NVRTC is not available").count(), 1, "{e}");
        assert_eq!(e.matches("Install the CUDA toolkit").count(), 1, "{e}");
        let e = unavailable(&Error::NoGpu("no driver".into())).to_string();
        assert!(
            e.starts_with("NVRTC is not available: no CUDA GPU: no driver."),
            "{e}"
        );
    }
}
