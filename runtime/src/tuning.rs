//! Which tuning table a runtime lays kernels out by: a table the user
//! measured for this device (`redjit tune`, kept in the cache directory) over
//! the shipped one ([`Tuning::for_device`]). A user table that cannot be read
//! is a warning and the shipped table, never an error: tables choose among
//! valid kernels, so without one every call still runs.

use std::path::{Path, PathBuf};

use redjit_codegen::tuning::{DeviceKey, Selection, Tuning, device_slug, parse_table};

use crate::device::DeviceInfo;

/// The key the tables know `device` by.
pub fn device_key(device: &DeviceInfo) -> DeviceKey {
    DeviceKey {
        name: device.name.clone(),
        arch: device.arch,
        sms: device.sm_count,
        l2_bytes: device.l2_bytes,
    }
}

/// Where `redjit tune` keeps the table it measured for `key`, under the
/// cache directory `dir`: `<dir>/tuning/<device slug>.toml`.
pub fn user_table_path(dir: &Path, key: &DeviceKey) -> PathBuf {
    dir.join("tuning")
        .join(format!("{}.toml", device_slug(key)))
}

/// The table for `device`: the user's under `cache_dir`, if there is one
/// and it reads, else the shipped one; a user table that does not read is
/// named in `why` and warned about on stderr.
pub fn select(device: &DeviceInfo, cache_dir: Option<&Path>) -> Selection {
    let key = device_key(device);
    let shipped = Tuning::for_device(&key);
    let Some(path) = cache_dir.map(|d| user_table_path(d, &key)) else {
        return shipped;
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return shipped,
        Err(e) => return fallback(shipped, &format!("{}: {e}", path.display())),
    };
    let label = path.display().to_string();
    match parse_table(&label, &text).and_then(Tuning::resolve) {
        Ok(tuning) => Selection {
            why: format!("user table {label} (redjit tune)"),
            tuning,
            measured_here: true,
        },
        Err(e) => fallback(shipped, &e.to_string()),
    }
}

fn fallback(shipped: Selection, problem: &str) -> Selection {
    eprintln!(
        "redjit: warning: ignoring the tuning table {problem}; using {}",
        shipped.tuning.name()
    );
    Selection {
        why: format!("{} (the user table was ignored: {problem})", shipped.why),
        tuning: shipped.tuning,
        measured_here: shipped.measured_here,
    }
}
