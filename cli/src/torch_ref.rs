//! The PyTorch reference written by `scripts/torch_ref.py`, for `bench --compare`.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{CliError, CliResult};

#[derive(Debug, Clone, Deserialize)]
pub struct TorchRef {
    #[serde(default)]
    pub gpu: Option<String>,
    #[serde(default)]
    pub torch: Option<String>,
    #[serde(default)]
    pub n: Option<u64>,
    #[serde(default)]
    pub copy_gbps: Option<f64>,
    pub entries: Vec<TorchEntry>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchEntry {
    pub transport: String,
    pub srcs: String,
    pub dsts: String,
    #[serde(default)]
    pub eager_gbps: Option<f64>,
    #[serde(default)]
    pub compile_gbps: Option<f64>,
}

/// The reference's GB/s, keyed by (transport, src roles, dst roles), e.g. ("bf16", "TA", "T").
pub struct TorchTable {
    pub meta: TorchRef,
    by_key: HashMap<(String, String, String), TorchEntry>,
}

impl TorchTable {
    pub fn load(path: &Path) -> CliResult<TorchTable> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(format!(
                "cannot read --compare file {}: {e}",
                path.display()
            ))
        })?;
        let meta: TorchRef = serde_json::from_str(&text).map_err(|e| {
            CliError::usage(format!(
                "--compare file {} is not a torch_ref.py JSON: {e}",
                path.display()
            ))
        })?;
        let by_key = meta
            .entries
            .iter()
            .map(|e| {
                (
                    (
                        e.transport.clone(),
                        e.srcs.to_uppercase(),
                        e.dsts.to_uppercase(),
                    ),
                    e.clone(),
                )
            })
            .collect();
        Ok(TorchTable { meta, by_key })
    }

    pub fn get(&self, transport: &str, srcs: &str, dsts: &str) -> Option<&TorchEntry> {
        self.by_key
            .get(&(transport.to_string(), srcs.to_string(), dsts.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_the_script_format() {
        let path = std::env::temp_dir().join(format!("redjit-torch-{}.json", std::process::id()));
        std::fs::write(
            &path,
            r#"{"gpu":"H100","torch":"2.11","date":"2026-01-01","n":268435456,"copy_gbps":2900.5,
               "entries":[{"config":2,"transport":"bf16","srcs":"TA","dsts":"T","eager_gbps":900.0,
                           "compile_gbps":2500.0,"eager_us":1.0,"compile_us":1.0},
                          {"config":null,"transport":"f16","srcs":"A","dsts":"T","eager_gbps":1.0,
                           "compile_gbps":null,"compile_error":"boom"}]}"#,
        )
        .unwrap();
        let t = TorchTable::load(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(t.get("bf16", "TA", "T").unwrap().compile_gbps, Some(2500.0));
        assert_eq!(t.get("f16", "A", "T").unwrap().compile_gbps, None);
        assert!(t.get("f16", "TA", "T").is_none());
        assert!(TorchTable::load(Path::new("/nonexistent/x.json")).is_err());
    }
}
