//! The compile cache: in memory, in front of a directory on disk.
//!
//! Key: a hash of the kernel source, the NVRTC options, the NVRTC version and the
//! target (arch and output kind), so a new driver arch, compiler or template never
//! loads a stale binary. Entries are written atomically (temp file + rename) and
//! carry a length and a checksum; a truncated or corrupt entry is detected, counted
//! and rebuilt, never loaded. A failed write is reported on stderr and the
//! compiled artifact is still returned: the cache is an optimisation, not a
//! dependency.
//!
//! ```
//! use redjit_runtime::nvrtc::{Artifact, Output, Target};
//! use redjit_runtime::{Arch, CacheKey, CompileCache, Origin};
//!
//! let cache = CompileCache::in_memory();
//! let target = Target { arch: Arch::SM90, output: Output::Ptx };
//! let key = CacheKey::for_spec("my_kernel", redjit_codegen::CODEGEN_FINGERPRINT, target, "13.0");
//! let compile = || Ok(Artifact { output: Output::Ptx, bytes: b".version 9.0".to_vec() });
//! assert_eq!(cache.get_or_compile("my_kernel", key, Output::Ptx, compile)?.origin, Origin::Compiled);
//! let again = cache.get_or_compile("my_kernel", key, Output::Ptx, || unreachable!())?;
//! assert_eq!(again.origin, Origin::Memory);
//! assert_eq!(cache.stats().memory_hits, 1);
//! # Ok::<(), redjit_runtime::Error>(())
//! ```

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use redjit_codegen::KernelSource;

use crate::error::{Error, Result};
use crate::hash::{Fnv128, fnv128};
use crate::nvrtc::{Artifact, Output, Target};

const MAGIC: &[u8; 8] = b"RJCACHE1";
const HEADER_LEN: usize = 8 + 8 + 8 + 16;
/// File extension of entries: `<kernel name>-<key>.rjc`.
pub const ENTRY_EXTENSION: &str = "rjc";

/// Identifies one compiled artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey(pub u128);

impl CacheKey {
    /// The key of rendered source: its name and text, the NVRTC version, the
    /// target and its options.
    pub fn new(source: &KernelSource, target: Target, nvrtc_version: &str) -> CacheKey {
        let mut h = Fnv128::default();
        h.field(b"redjit-cache-v1")
            .field(source.name.as_bytes())
            .field(source.code.as_bytes())
            .field(nvrtc_version.as_bytes())
            .field(target.arch.to_string().as_bytes())
            .field(target.output.extension().as_bytes());
        for o in target.options() {
            h.field(o.as_bytes());
        }
        CacheKey(h.finish())
    }

    /// The key of a spec's kernel: its name and the codegen fingerprint determine
    /// the source (the name parses back to the spec; the fingerprint covers the
    /// templates and the code that renders them), so a warm lookup needs no
    /// rendering.
    pub fn for_spec(
        name: &str,
        codegen_fingerprint: &str,
        target: Target,
        nvrtc_version: &str,
    ) -> CacheKey {
        let mut h = Fnv128::default();
        h.field(b"redjit-spec-v1")
            .field(name.as_bytes())
            .field(codegen_fingerprint.as_bytes())
            .field(nvrtc_version.as_bytes())
            .field(target.arch.to_string().as_bytes())
            .field(target.output.extension().as_bytes());
        for o in target.options() {
            h.field(o.as_bytes());
        }
        CacheKey(h.finish())
    }

    /// 32 hex digits, as in entry file names.
    pub fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }
}

/// Where an artifact came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// This process had it already.
    Memory,
    /// Read (and checked) from the cache directory.
    Disk,
    /// NVRTC compiled it just now.
    Compiled,
}

/// Counters, for reports and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from memory.
    pub memory_hits: u64,
    /// Lookups answered from disk.
    pub disk_hits: u64,
    /// Kernels compiled (a batch counts each of its kernels).
    pub compiled: u64,
    /// Entries found on disk but rejected (truncated, bad checksum, wrong kind).
    pub corrupt: u64,
    /// Entries that could not be written (reported on stderr, not fatal).
    pub write_failures: u64,
}

#[derive(Default)]
struct Counters {
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    compiled: AtomicU64,
    corrupt: AtomicU64,
    write_failures: AtomicU64,
}

/// Memory + disk cache of compiled kernels. Cheap to share across threads.
pub struct CompileCache {
    dir: Option<PathBuf>,
    /// Kernel key -> the artifact holding it and the key it is stored under.
    memory: Mutex<HashMap<CacheKey, Hit>>,
    counters: Counters,
}

/// A cached kernel: the artifact holding it (perhaps with other kernels), the key
/// that artifact is stored under (the kernel's own, or its batch's: kernels
/// sharing it share one module), and where it was found.
#[derive(Debug, Clone)]
pub struct Hit {
    /// The cubin or PTX holding the kernel.
    pub artifact: Arc<Artifact>,
    /// The key the artifact is stored under (the kernel's, or its batch's).
    pub artifact_key: CacheKey,
    /// Where it was found.
    pub origin: Origin,
}

impl CompileCache {
    /// A cache with no disk layer.
    pub fn in_memory() -> CompileCache {
        CompileCache {
            dir: None,
            memory: Mutex::default(),
            counters: Counters::default(),
        }
    }

    /// A cache persisted under `dir` (created if missing).
    pub fn on_disk(dir: impl Into<PathBuf>) -> Result<CompileCache> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| Error::Cache {
            path: dir.display().to_string(),
            message: format!("cannot create the directory: {e}"),
        })?;
        Ok(CompileCache {
            dir: Some(dir),
            ..CompileCache::in_memory()
        })
    }

    /// The cache under `dir`, else, where the folder cannot be made, a
    /// memory-only cache and one warning on stderr naming the folder and why:
    /// the cache is an optimisation, never a reason not to run.
    pub fn on_disk_or_memory(dir: impl Into<PathBuf>) -> CompileCache {
        CompileCache::on_disk(dir).unwrap_or_else(|e| {
            eprintln!("redjit: warning: {e}; compiling into memory only");
            CompileCache::in_memory()
        })
    }

    /// `$REDJIT_CACHE_DIR`, else the platform cache directory
    /// (`$XDG_CACHE_HOME/redjit`, `~/.cache/redjit`), else memory only; a
    /// folder that cannot be made is memory only too, with a warning
    /// ([`CompileCache::on_disk_or_memory`]).
    pub fn from_env() -> CompileCache {
        match default_dir() {
            Some(dir) => CompileCache::on_disk_or_memory(dir),
            None => CompileCache::in_memory(),
        }
    }

    /// The disk layer's directory; `None` for a memory-only cache.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The counters so far.
    pub fn stats(&self) -> CacheStats {
        let c = &self.counters;
        CacheStats {
            memory_hits: c.memory_hits.load(Ordering::Relaxed),
            disk_hits: c.disk_hits.load(Ordering::Relaxed),
            compiled: c.compiled.load(Ordering::Relaxed),
            corrupt: c.corrupt.load(Ordering::Relaxed),
            write_failures: c.write_failures.load(Ordering::Relaxed),
        }
    }

    /// The path of the entry for `key` (whether or not it exists).
    pub fn entry_path(&self, name: &str, key: CacheKey) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("{name}-{}.{ENTRY_EXTENSION}", key.hex())))
    }

    /// The path of a batch file.
    fn batch_path(&self, batch: CacheKey) -> Option<PathBuf> {
        self.dir
            .as_ref()
            .map(|d| d.join(format!("batch-{}.{ENTRY_EXTENSION}", batch.hex())))
    }

    /// The cached kernel for `key`, from memory or disk.
    pub fn lookup(&self, name: &str, key: CacheKey, output: Output) -> Option<Hit> {
        if let Some(hit) = self.lock().get(&key) {
            self.counters.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Some(Hit {
                origin: Origin::Memory,
                ..hit.clone()
            });
        }
        let path = self.entry_path(name, key)?;
        let found = match read_entry(&path, output) {
            Entry::Artifact(artifact) => Ok((Arc::new(artifact), key)),
            Entry::Ref(batch) => self.resolve_batch(batch, output),
            Entry::Missing => return None,
            Entry::Corrupt(why) => Err(why),
        };
        match found {
            Ok((artifact, artifact_key)) => {
                self.counters.disk_hits.fetch_add(1, Ordering::Relaxed);
                let hit = Hit {
                    artifact,
                    artifact_key,
                    origin: Origin::Disk,
                };
                self.lock().insert(key, hit.clone());
                Some(hit)
            }
            Err(why) => {
                self.counters.corrupt.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "redjit: cache entry {} is unusable ({why}); recompiling",
                    path.display()
                );
                None
            }
        }
    }

    /// A batch's artifact: shared with kernels of the batch already in memory,
    /// else read (and checked) from its file.
    fn resolve_batch(
        &self,
        batch: CacheKey,
        output: Output,
    ) -> Result<(Arc<Artifact>, CacheKey), String> {
        if let Some(hit) = self.lock().values().find(|h| h.artifact_key == batch) {
            return Ok((hit.artifact.clone(), batch));
        }
        let path = self.batch_path(batch).ok_or("no cache directory")?;
        match read_entry(&path, output) {
            Entry::Artifact(a) => Ok((Arc::new(a), batch)),
            Entry::Missing => Err(format!("its batch file {} is missing", path.display())),
            Entry::Ref(_) => Err(format!(
                "its batch file {} is itself a reference",
                path.display()
            )),
            Entry::Corrupt(why) => Err(format!("its batch file {}: {why}", path.display())),
        }
    }

    /// Stores one kernel's artifact under its key.
    pub fn store(&self, name: &str, key: CacheKey, artifact: Artifact) -> Hit {
        let artifact = Arc::new(artifact);
        self.counters.compiled.fetch_add(1, Ordering::Relaxed);
        if let Some(path) = self.entry_path(name, key) {
            self.write(
                &path,
                &encode(output_code(artifact.output), &artifact.bytes),
            );
        }
        let hit = Hit {
            artifact,
            artifact_key: key,
            origin: Origin::Compiled,
        };
        self.lock().insert(key, hit.clone());
        hit
    }

    /// Stores an artifact that holds several kernels: the batch file first, then
    /// one reference per kernel (a reader never finds a reference before its
    /// batch). Returns the shared hit.
    pub fn store_batch(&self, members: &[(String, CacheKey)], artifact: Artifact) -> Hit {
        let mut h = Fnv128::default();
        h.field(b"redjit-batch-v1")
            .field(artifact.output.extension().as_bytes());
        for (_, key) in members {
            h.field(&key.0.to_le_bytes());
        }
        let batch = CacheKey(h.finish());
        let artifact = Arc::new(artifact);
        self.counters
            .compiled
            .fetch_add(members.len() as u64, Ordering::Relaxed);
        if let Some(path) = self.batch_path(batch)
            && self.write(
                &path,
                &encode(output_code(artifact.output), &artifact.bytes),
            )
        {
            for (name, key) in members {
                if let Some(entry) = self.entry_path(name, *key) {
                    self.write(&entry, &encode(REF_CODE, &batch.0.to_le_bytes()));
                }
            }
        }
        let hit = Hit {
            artifact,
            artifact_key: batch,
            origin: Origin::Compiled,
        };
        let mut memory = self.lock();
        for (_, key) in members {
            memory.insert(*key, hit.clone());
        }
        hit
    }

    /// Returns the cached kernel for `key`, or runs `compile`, stores and returns it.
    pub fn get_or_compile(
        &self,
        name: &str,
        key: CacheKey,
        output: Output,
        compile: impl FnOnce() -> Result<Artifact>,
    ) -> Result<Hit> {
        if let Some(hit) = self.lookup(name, key, output) {
            return Ok(hit);
        }
        Ok(self.store(name, key, compile()?))
    }

    /// Writes an entry; a failure is counted and reported, never fatal.
    fn write(&self, path: &Path, data: &[u8]) -> bool {
        match write_entry(path, data) {
            Ok(()) => true,
            Err(e) => {
                self.counters.write_failures.fetch_add(1, Ordering::Relaxed);
                eprintln!(
                    "redjit: could not write cache entry {}: {e}",
                    path.display()
                );
                false
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Hit>> {
        // A panic while holding the lock cannot leave the map half-updated.
        self.memory.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `$REDJIT_CACHE_DIR`, else `$XDG_CACHE_HOME/redjit`, else `$HOME/.cache/redjit`.
pub fn default_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("REDJIT_CACHE_DIR")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("redjit")))
        .or_else(|| var("HOME").map(|d| d.join(".cache").join("redjit")))
}

enum Entry {
    Artifact(Artifact),
    /// A kernel compiled in a batch: the batch's key.
    Ref(CacheKey),
    Missing,
    Corrupt(String),
}

const REF_CODE: u64 = 3;

fn output_code(o: Output) -> u64 {
    match o {
        Output::Ptx => 1,
        Output::Cubin => 2,
    }
}

fn encode(kind: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv128(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Checks magic, length and checksum; returns the kind code and the payload.
fn decode(data: &[u8]) -> Result<(u64, &[u8]), String> {
    if data.len() < HEADER_LEN {
        return Err(format!(
            "{} bytes, shorter than the {HEADER_LEN}-byte header",
            data.len()
        ));
    }
    let (header, payload) = data.split_at(HEADER_LEN);
    if &header[..8] != MAGIC {
        return Err("bad magic".into());
    }
    let word = |i: usize| u64::from_le_bytes(header[i..i + 8].try_into().unwrap_or([0; 8]));
    if word(16) != payload.len() as u64 {
        return Err(format!(
            "truncated: header says {} bytes, file has {}",
            word(16),
            payload.len()
        ));
    }
    let sum = u128::from_le_bytes(header[24..40].try_into().unwrap_or([0; 16]));
    if sum != fnv128(payload) {
        return Err("checksum mismatch".into());
    }
    Ok((word(8), payload))
}

fn read_entry(path: &Path, output: Output) -> Entry {
    let data = match fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Entry::Missing,
        Err(e) => return Entry::Corrupt(format!("unreadable: {e}")),
    };
    match decode(&data) {
        Ok((REF_CODE, payload)) => match <[u8; 16]>::try_from(payload) {
            Ok(b) => Entry::Ref(CacheKey(u128::from_le_bytes(b))),
            Err(_) => Entry::Corrupt(format!(
                "a reference of {} bytes, expected 16",
                payload.len()
            )),
        },
        Ok((kind, payload)) if kind == output_code(output) => Entry::Artifact(Artifact {
            output,
            bytes: payload.to_vec(),
        }),
        Ok((kind, _)) => Entry::Corrupt(format!(
            "holds output kind {kind}, expected {}",
            output_code(output)
        )),
        Err(why) => Entry::Corrupt(why),
    }
}

/// Writes to a temp file unique to this process and call, then renames it over the
/// entry: readers see the old file or the whole new one, never a partial write,
/// and two writers of one key each rename a complete file. No fsync: it sat on
/// the cold-start path, and an entry torn by a crash fails its checksum and is
/// rebuilt, which is all a cache needs.
fn write_entry(path: &Path, data: &[u8]) -> std::io::Result<()> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".tmp-{}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed),
        path.file_name().and_then(|n| n.to_str()).unwrap_or("entry")
    ));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(data)?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// One entry on disk, for `redjit cache ls`.
#[derive(Debug, Clone)]
pub struct DiskEntry {
    /// The entry's file.
    pub path: PathBuf,
    /// Its size.
    pub bytes: u64,
}

/// Lists the entries of a cache directory (empty when it does not exist).
pub fn list_entries(dir: &Path) -> Vec<DiskEntry> {
    let Ok(read) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<DiskEntry> = read
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().and_then(|x| x.to_str()) == Some(ENTRY_EXTENSION))
        .map(|e| DiskEntry {
            bytes: e.metadata().map(|m| m.len()).unwrap_or(0),
            path: e.path(),
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload() -> Vec<u8> {
        (0..=255u8).cycle().take(1000).collect()
    }

    #[test]
    fn entries_round_trip_and_every_truncation_is_caught() {
        let data = encode(2, &payload());
        let (kind, p) = decode(&data).unwrap();
        assert_eq!((kind, p), (2, payload().as_slice()));
        for len in 0..data.len() {
            assert!(decode(&data[..len]).is_err(), "truncated to {len} accepted");
        }
    }

    #[test]
    fn every_flipped_payload_byte_is_caught() {
        let data = encode(2, &payload());
        for i in HEADER_LEN..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0x5a;
            assert!(decode(&bad).is_err(), "flip at {i} accepted");
        }
    }
}
