//! `redjit cache ls|clear|size`: the compile cache's directory on disk.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use redjit_runtime::cache::{self, ENTRY_EXTENSION};
use redjit_runtime::identity;

use crate::error::{CliError, CliResult};

#[derive(Debug, Clone, Args)]
pub struct CacheArgs {
    /// The cache directory [default: $REDJIT_CACHE_DIR, else $XDG_CACHE_HOME/redjit,
    /// else ~/.cache/redjit].
    #[arg(long, global = true, value_name = "DIR")]
    pub dir: Option<PathBuf>,

    #[command(subcommand)]
    pub action: CacheAction,
}

#[derive(Debug, Clone, Copy, Subcommand)]
pub enum CacheAction {
    /// List the entries (file name, bytes).
    Ls {
        /// Print one JSON object (dir, entries) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Remove the entries (*.rjc), leftover temp files (.tmp-*) and the remembered
    /// NVRTC identity; nothing else.
    Clear,
    /// Print the total size and the number of entries.
    Size,
}

pub fn cache_cmd(args: &CacheArgs) -> CliResult {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => cache_dir()?,
    };
    // A missing folder is an empty cache; anything else there is no cache.
    if dir.exists() && !dir.is_dir() {
        return Err(CliError::usage(format!(
            "cache dir {}: not a folder (the cache is a folder of compiled kernels)",
            dir.display()
        )));
    }
    match args.action {
        CacheAction::Ls { json: true } => {
            let entries = cache::list_entries(&dir);
            let list: Vec<serde_json::Value> = entries
                .iter()
                .map(|e| {
                    serde_json::json!({
                        "file": e.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                        "bytes": e.bytes,
                    })
                })
                .collect();
            let v = serde_json::json!({ "dir": dir.display().to_string(), "entries": list });
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        CacheAction::Ls { json: false } => {
            let entries = cache::list_entries(&dir);
            println!("cache dir: {}", dir.display());
            for e in &entries {
                let name = e.path.file_name().map(|n| n.to_string_lossy());
                println!("{:>10}  {}", e.bytes, name.unwrap_or_default());
            }
            let total: u64 = entries.iter().map(|e| e.bytes).sum();
            println!("{} entries, {}", entries.len(), fmt_bytes(total));
        }
        CacheAction::Clear => {
            let removed = clear_dir(&dir).map_err(|e| {
                CliError::failure(format!("cannot clear the cache at {}: {e}", dir.display()))
            })?;
            println!("removed {removed} file(s) from {}", dir.display());
        }
        CacheAction::Size => {
            let (count, total) = dir_usage(&dir);
            println!(
                "{}: {} in {count} entries ({total} bytes)",
                dir.display(),
                fmt_bytes(total)
            );
        }
    }
    Ok(())
}

/// The default cache directory, or a usage error saying how to name one.
pub fn cache_dir() -> CliResult<PathBuf> {
    cache::default_dir().ok_or_else(|| {
        CliError::usage(
            "no cache directory: set REDJIT_CACHE_DIR (or HOME / XDG_CACHE_HOME), or pass --dir",
        )
    })
}

/// Entry count and total bytes of the cache at `dir` (0, 0 when it does not exist).
pub fn dir_usage(dir: &Path) -> (usize, u64) {
    let entries = cache::list_entries(dir);
    (entries.len(), entries.iter().map(|e| e.bytes).sum())
}

/// Removes the cache entries (`*.rjc`), temp leftovers (`.tmp-*`) and the remembered
/// NVRTC identity in `dir`, and nothing else; returns how many files were removed.
/// A missing dir holds none.
pub fn clear_dir(dir: &Path) -> io::Result<usize> {
    let read = match fs::read_dir(dir) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in read {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_entry =
            Path::new(&*name).extension().and_then(|x| x.to_str()) == Some(ENTRY_EXTENSION);
        let is_tmp = name.starts_with(".tmp-");
        let is_identity = name == identity::FILE_NAME;
        if (is_entry || is_tmp || is_identity) && entry.file_type()?.is_file() {
            fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// `1.5 MiB`-style sizes.
pub fn fmt_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_removes_only_entries_and_temp_files() {
        let dir = std::env::temp_dir().join(format!("redjit-cli-clear-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for f in [
            "a-1.rjc",
            "b-2.rjc",
            ".tmp-1-2-a",
            "keep.txt",
            "keep.rjc.bak",
        ] {
            fs::write(dir.join(f), b"x").unwrap();
        }
        assert_eq!(clear_dir(&dir).unwrap(), 3);
        let mut left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["keep.rjc.bak", "keep.txt"]);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(clear_dir(&dir).unwrap(), 0);
    }

    #[test]
    fn sizes_are_readable() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(1536), "1.5 KiB");
        assert_eq!(fmt_bytes(1 << 30), "1.0 GiB");
    }
}
