//! Shared by the commands that write results: JSON files and today's date.

use std::path::Path;

use serde::Serialize;

use crate::error::{CliError, CliResult};

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> CliResult {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::failure(format!("cannot encode JSON: {e}")))?;
    std::fs::write(path, text + "\n")
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", path.display())))
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
        assert_eq!(civil_date(10_957), "2000-01-01");
    }
}
