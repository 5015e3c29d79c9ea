//! The shipped tables and which one a device takes: its own (same name and
//! SM count), else the nearest table of its arch, else none (the ladder).

use std::sync::OnceLock;

use super::{Tuning, TuningTable, parse_table};
use crate::SpecError;
use crate::registry::Arch;

/// The tables shipped in `codegen/tuning/`, by name.
const SHIPPED: &[(&str, &str)] = &[
    ("h100-sxm", include_str!("../../tuning/h100-sxm.toml")),
    ("h200", include_str!("../../tuning/h200.toml")),
];

/// The table a derivation without a device takes.
pub(super) const BUILTIN: &str = "h100-sxm";

/// The names of the shipped tables.
pub(super) fn shipped_names() -> Vec<&'static str> {
    SHIPPED.iter().map(|(n, _)| *n).collect()
}

/// Every shipped table, parsed once per process: a runtime's start and each
/// base a table names then cost no parse.
fn shipped_tables() -> &'static [(&'static str, Result<TuningTable, SpecError>)] {
    static PARSED: OnceLock<Vec<(&'static str, Result<TuningTable, SpecError>)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        SHIPPED
            .iter()
            .map(|&(n, text)| (n, parse_table(n, text)))
            .collect()
    })
}

/// A shipped table, parsed (`None`: no table of that name).
pub(super) fn shipped_table(name: &str) -> Option<Result<TuningTable, SpecError>> {
    shipped_tables()
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.clone())
}

/// What identifies a device to the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceKey {
    /// The name the driver reports.
    pub name: String,
    /// Its compute capability.
    pub arch: Arch,
    /// Its SM count.
    pub sms: u32,
    /// Its L2 cache, bytes.
    pub l2_bytes: u64,
}

/// A file-name-safe key of the device: its name in lower case, runs of
/// other characters as one `-`, then its SM count (`nvidia-h200-132sm`).
pub fn device_slug(key: &DeviceKey) -> String {
    let mut out = String::new();
    for c in key.name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    format!("{}-{}sm", out.trim_end_matches('-'), key.sms)
}

/// The table a device takes and why.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The table, its bases resolved.
    pub tuning: Tuning,
    /// Why it was chosen, in a line (`redjit info` prints it).
    pub why: String,
    /// Whether the table was measured on this very device (its shipped table,
    /// or one the user measured): the runtime's autotune leaves such a
    /// device to its table.
    pub measured_here: bool,
}

/// How far a table's device is from `key` (same arch assumed): SMs and L2
/// MiB apart.
fn distance(t: &TuningTable, key: &DeviceKey) -> u64 {
    u64::from(t.device.sms.abs_diff(key.sms))
        + u64::from(t.device.l2_mib).abs_diff(key.l2_bytes >> 20)
}

pub(super) fn select(key: &DeviceKey) -> Selection {
    let tables: Vec<&TuningTable> = shipped_tables()
        .iter()
        .filter_map(|(_, t)| t.as_ref().ok())
        .collect();
    let own = tables.iter().find(|t| {
        t.device.name == key.name && t.device.sms == key.sms && t.device.arch == key.arch
    });
    let measured_here = own.is_some();
    let (table, why) = match own {
        Some(t) => (
            t,
            format!("shipped table {} (measured on this device)", t.name),
        ),
        None => match tables
            .iter()
            .filter(|t| t.device.arch == key.arch)
            .min_by_key(|t| distance(t, key))
        {
            Some(t) => (
                t,
                format!(
                    "shipped table {} (measured on {}, the nearest {} device; `redjit tune` measures this one)",
                    t.name, t.device.name, key.arch
                ),
            ),
            None => {
                return Selection {
                    tuning: Tuning::ladder(),
                    why: format!(
                        "no table for {} ({}): the heuristic ladder; `redjit tune` measures one",
                        key.name, key.arch
                    ),
                    measured_here: false,
                };
            }
        },
    };
    match Tuning::resolve((*table).clone()) {
        Ok(tuning) => Selection {
            tuning,
            why,
            measured_here,
        },
        Err(e) => Selection {
            tuning: Tuning::ladder(),
            why: format!("the heuristic ladder: {e}"),
            measured_here: false,
        },
    }
}
