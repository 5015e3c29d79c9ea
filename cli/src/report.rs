//! The reduce-copy benchmark's results: the table on stdout and the JSON file.

use std::path::Path;

use serde::Serialize;

use crate::error::{CliError, CliResult};

/// One benchmarked kernel.
#[derive(Debug, Clone, Serialize)]
pub struct KernelRow {
    pub name: String,
    /// The seed's configuration number; null for one-source forms.
    pub config: Option<u32>,
    pub unroll: u32,
    pub transport: String,
    pub srcs: String,
    pub dsts: String,
    pub bytes_per_elem: u64,
    pub median_us: f64,
    pub gbps: f64,
    pub pct_of_copy: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torch_eager_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub torch_compile_gbps: Option<f64>,
    /// With --misaligned: (which buffer + how many elements off, median µs).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub misaligned: Vec<(String, f64)>,
}

/// The `--json` file.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub gpu: String,
    pub arch: String,
    pub driver: String,
    pub date: String,
    pub n: u64,
    pub iters: usize,
    pub copy_gbps: f64,
    pub kernels: Vec<KernelRow>,
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> CliResult {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::failure(format!("cannot encode JSON: {e}")))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))
}

/// Prints the table header; `compare` adds the PyTorch columns.
pub fn print_header(compare: bool) {
    let mut line = format!(
        "{:<40} {:>6} {:>6} {:>10} {:>9} {:>7}",
        "kernel", "config", "B/elem", "median us", "GB/s", "% copy"
    );
    if compare {
        line += &format!(
            " {:>11} {:>13} {:>11}",
            "eager GB/s", "compile GB/s", "vs compile"
        );
    }
    println!("{line}");
    println!("{}", "-".repeat(line.len()));
}

pub fn print_row(row: &KernelRow, compare: bool) {
    let config = row.config.map_or("-".to_string(), |c| c.to_string());
    let mut line = format!(
        "{:<40} {:>6} {:>6} {:>10.1} {:>9.1} {:>6.1}%",
        row.name, config, row.bytes_per_elem, row.median_us, row.gbps, row.pct_of_copy
    );
    if compare {
        let gbps = |v: Option<f64>| v.map_or("-".to_string(), |g| format!("{g:.1}"));
        let ratio = row
            .torch_compile_gbps
            .filter(|&g| g > 0.0)
            .map_or("-".to_string(), |g| format!("{:.2}x", row.gbps / g));
        line += &format!(
            " {:>11} {:>13} {:>11}",
            gbps(row.torch_eager_gbps),
            gbps(row.torch_compile_gbps),
            ratio
        );
    }
    println!("{line}");
}

/// Today's date in UTC, `YYYY-MM-DD`.
pub fn utc_date() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    civil_date((secs / 86_400) as i64)
}

/// Days since 1970-01-01 -> `YYYY-MM-DD` (proleptic Gregorian; H. Hinnant's algorithm).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(11_017), "2000-03-01");
        assert_eq!(civil_date(19_782), "2024-02-29");
        assert_eq!(civil_date(20_454), "2026-01-01");
    }
}
