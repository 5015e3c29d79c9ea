//! The compile cache: in memory, in front of a directory on disk.
//!
//! Key: a hash of the kernel source, the NVRTC options, the NVRTC version and the
//! target (arch and output kind), so a new driver arch, compiler or template never
//! loads a stale binary. Entries are written atomically (temp file + rename) and
//! carry a length and a checksum; a truncated or corrupt entry is detected, counted
//! and rebuilt, never loaded. A failed write is reported on stderr and the
//! compiled artifact is still returned: the cache is an optimisation, not a
//! dependency.

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

    pub fn hex(&self) -> String {
        format!("{:032x}", self.0)
    }
}

/// Where an artifact came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Memory,
    Disk,
    Compiled,
}

/// Counters, for reports and tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub memory_hits: u64,
    pub disk_hits: u64,
    pub compiled: u64,
    /// Entries found on disk but rejected (truncated, bad checksum, wrong kind).
    pub corrupt: u64,
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
    memory: Mutex<HashMap<CacheKey, Arc<Artifact>>>,
    counters: Counters,
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

    /// `$REDJIT_CACHE_DIR`, else the platform cache directory
    /// (`$XDG_CACHE_HOME/redjit`, `~/.cache/redjit`), else memory only.
    pub fn from_env() -> Result<CompileCache> {
        match default_dir() {
            Some(dir) => CompileCache::on_disk(dir),
            None => Ok(CompileCache::in_memory()),
        }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

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

    /// Returns the cached artifact for `key`, or runs `compile`, stores and returns it.
    pub fn get_or_compile(
        &self,
        name: &str,
        key: CacheKey,
        output: Output,
        compile: impl FnOnce() -> Result<Artifact>,
    ) -> Result<(Arc<Artifact>, Origin)> {
        if let Some(a) = self.lock().get(&key) {
            self.counters.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((a.clone(), Origin::Memory));
        }
        let path = self.entry_path(name, key);
        if let Some(path) = &path {
            match read_entry(path, output) {
                Entry::Valid(artifact) => {
                    self.counters.disk_hits.fetch_add(1, Ordering::Relaxed);
                    let artifact = Arc::new(artifact);
                    self.lock().insert(key, artifact.clone());
                    return Ok((artifact, Origin::Disk));
                }
                Entry::Missing => {}
                Entry::Corrupt(why) => {
                    self.counters.corrupt.fetch_add(1, Ordering::Relaxed);
                    eprintln!(
                        "redjit: cache entry {} is unusable ({why}); recompiling",
                        path.display()
                    );
                }
            }
        }
        let artifact = Arc::new(compile()?);
        self.counters.compiled.fetch_add(1, Ordering::Relaxed);
        if let Some(path) = &path
            && let Err(e) = write_entry(path, &artifact)
        {
            self.counters.write_failures.fetch_add(1, Ordering::Relaxed);
            eprintln!(
                "redjit: could not write cache entry {}: {e}",
                path.display()
            );
        }
        self.lock().insert(key, artifact.clone());
        Ok((artifact, Origin::Compiled))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, Arc<Artifact>>> {
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
    Valid(Artifact),
    Missing,
    Corrupt(String),
}

fn output_code(o: Output) -> u64 {
    match o {
        Output::Ptx => 1,
        Output::Cubin => 2,
    }
}

fn encode(artifact: &Artifact) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + artifact.bytes.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&output_code(artifact.output).to_le_bytes());
    out.extend_from_slice(&(artifact.bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv128(&artifact.bytes).to_le_bytes());
    out.extend_from_slice(&artifact.bytes);
    out
}

fn decode(data: &[u8], output: Output) -> Result<Artifact, String> {
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
    if word(8) != output_code(output) {
        return Err(format!(
            "holds output kind {}, expected {}",
            word(8),
            output_code(output)
        ));
    }
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
    Ok(Artifact {
        output,
        bytes: payload.to_vec(),
    })
}

fn read_entry(path: &Path, output: Output) -> Entry {
    match fs::read(path) {
        Ok(data) => match decode(&data, output) {
            Ok(a) => Entry::Valid(a),
            Err(why) => Entry::Corrupt(why),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Entry::Missing,
        Err(e) => Entry::Corrupt(format!("unreadable: {e}")),
    }
}

/// Writes to a temp file unique to this process and call, then renames it over the
/// entry: readers see the old file or the whole new one, never a partial write,
/// and two writers of one key each rename a complete file.
fn write_entry(path: &Path, artifact: &Artifact) -> std::io::Result<()> {
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
        f.write_all(&encode(artifact))?;
        f.sync_data()?;
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
    pub path: PathBuf,
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

    fn artifact() -> Artifact {
        Artifact {
            output: Output::Cubin,
            bytes: (0..=255u8).cycle().take(1000).collect(),
        }
    }

    #[test]
    fn entries_round_trip_and_every_truncation_is_caught() {
        let a = artifact();
        let data = encode(&a);
        assert_eq!(decode(&data, Output::Cubin).unwrap(), a);
        for len in 0..data.len() {
            assert!(
                decode(&data[..len], Output::Cubin).is_err(),
                "truncated to {len} accepted"
            );
        }
        assert!(decode(&data, Output::Ptx).is_err());
    }

    #[test]
    fn every_flipped_payload_byte_is_caught() {
        let data = encode(&artifact());
        for i in HEADER_LEN..data.len() {
            let mut bad = data.clone();
            bad[i] ^= 0x5a;
            assert!(decode(&bad, Output::Cubin).is_err(), "flip at {i} accepted");
        }
    }
}
