//! Remembers, in the cache directory, which NVRTC library the last process
//! loaded and what it reported, so the next process can compute cache keys
//! without loading NVRTC (a ~100 MB library: about 10 ms to map, twenty times the
//! whole warm-start budget).
//!
//! The memo is trusted only while the library file has the same size and
//! modification time and `LD_LIBRARY_PATH` is unchanged; any miss loads NVRTC
//! and rewrites it. Not detected: a change that makes the dynamic loader pick
//! another library through `ld.so.cache` alone; `redjit cache clear` recovers.
//!
//! ```no_run
//! use redjit_runtime::identity::NvrtcIdentity;
//!
//! let dir = std::path::Path::new("/tmp/redjit-cache");
//! match NvrtcIdentity::recall(dir) {
//!     Some(id) => println!("NVRTC {:?} at {}", id.facts, id.lib.display()),
//!     None => println!("no memo: the next start loads NVRTC"),
//! }
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::nvrtc::NvrtcFacts;

/// The memo's file name inside the cache directory.
pub const FILE_NAME: &str = "nvrtc-identity.txt";

/// Which NVRTC library a process loaded, what it reported, and how to tell
/// whether it is still the one the next process would load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvrtcIdentity {
    /// What the library reported (version, supported archs).
    pub facts: NvrtcFacts,
    /// The library file.
    pub lib: PathBuf,
    stamp: (u64, u128),
    search_path: String,
}

fn stamp(path: &Path) -> Option<(u64, u128)> {
    let m = fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()?
        .duration_since(UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((m.len(), mtime))
}

fn search_path() -> String {
    std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
}

/// The file of the NVRTC this process has mapped, from /proc/self/maps.
pub fn loaded_library() -> Option<PathBuf> {
    let maps = fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| {
            let name = Path::new(p)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("");
            name.starts_with("libnvrtc.") || name.starts_with("libnvrtc64")
        })
        .map(PathBuf::from)
}

impl NvrtcIdentity {
    /// The identity of the NVRTC this process loaded (None if it cannot be found).
    pub fn of_loaded(facts: &NvrtcFacts) -> Option<NvrtcIdentity> {
        let lib = loaded_library()?;
        Some(NvrtcIdentity {
            facts: facts.clone(),
            stamp: stamp(&lib)?,
            lib,
            search_path: search_path(),
        })
    }

    /// The remembered identity in `dir`, if present, well formed and still valid.
    pub fn recall(dir: &Path) -> Option<NvrtcIdentity> {
        let text = fs::read_to_string(dir.join(FILE_NAME)).ok()?;
        let field = |key: &str| -> Option<String> {
            text.lines()
                .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ').map(str::to_string))
        };
        let version = field("version")?;
        let (major, minor) = version.split_once('.')?;
        let id = NvrtcIdentity {
            facts: NvrtcFacts {
                version: (major.parse().ok()?, minor.parse().ok()?),
                archs: field("archs")?
                    .split(',')
                    .map(|a| a.parse().ok())
                    .collect::<Option<Vec<u32>>>()?,
            },
            lib: PathBuf::from(field("lib")?),
            stamp: (
                field("size")?.parse().ok()?,
                field("mtime_ns")?.parse().ok()?,
            ),
            search_path: field("ld_library_path").unwrap_or_default(),
        };
        let valid = stamp(&id.lib) == Some(id.stamp)
            && id.search_path == search_path()
            && !id.facts.archs.is_empty();
        valid.then_some(id)
    }

    /// Writes the memo atomically; a failure only costs the next process a load.
    pub fn remember(&self, dir: &Path) {
        let archs: Vec<String> = self.facts.archs.iter().map(u32::to_string).collect();
        let text = format!(
            "version {}\narchs {}\nlib {}\nsize {}\nmtime_ns {}\nld_library_path {}\n",
            self.facts.version_string(),
            archs.join(","),
            self.lib.display(),
            self.stamp.0,
            self.stamp.1,
            self.search_path
        );
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = dir.join(format!(".tmp-{}-{seq}-{FILE_NAME}", std::process::id()));
        if fs::write(&tmp, text)
            .and_then(|_| fs::rename(&tmp, dir.join(FILE_NAME)))
            .is_err()
        {
            let _ = fs::remove_file(&tmp);
        }
    }
}
