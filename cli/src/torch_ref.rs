//! The PyTorch reference written by `scripts/torch_ref.py`, for `bench --compare`.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{CliError, CliResult};
use crate::timing::LaunchGap;

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
    /// Whether PyTorch's timed calls counted the host's issue time (files
    /// before the field did).
    #[serde(default = "LaunchGap::before_the_field")]
    pub launch_gap: LaunchGap,
    pub entries: Vec<TorchEntry>,
}

/// One measured PyTorch expression. reduce_copy entries are keyed by
/// (transport, srcs, dsts); others (`family` set) by the redjit kernel `name`
/// and `shape`. `n`, when present, is the entry's own size (a sweep).
#[derive(Debug, Clone, Deserialize)]
pub struct TorchEntry {
    #[serde(default)]
    pub family: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub shape: Option<String>,
    #[serde(default)]
    pub n: Option<u64>,
    #[serde(default)]
    pub transport: String,
    #[serde(default)]
    pub srcs: String,
    #[serde(default)]
    pub dsts: String,
    #[serde(default)]
    pub eager_gbps: Option<f64>,
    /// Microseconds a call (the all-reduce entries: NCCL and PyTorch symmetric
    /// memory; null where that variant failed).
    #[serde(default)]
    pub eager_us: Option<f64>,
    #[serde(default)]
    pub compile_gbps: Option<f64>,
    /// The norms: the Triton one-row-per-program kernel and Liger-Kernel
    /// (read by `redjit report`).
    #[serde(default)]
    pub triton_gbps: Option<f64>,
    #[serde(default)]
    pub liger_gbps: Option<f64>,
}

/// The reference's GB/s: reduce_copy entries keyed by (transport, src roles, dst
/// roles, n), e.g. ("bf16", "TA", "T", 2^28); other families' by (kernel name,
/// n, shape).
pub struct TorchTable {
    pub meta: TorchRef,
    by_key: HashMap<(String, String, String, u64), TorchEntry>,
    by_name: HashMap<(String, u64, Option<String>), TorchEntry>,
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
        let n_of = |e: &TorchEntry| e.n.or(meta.n).unwrap_or(0);
        let mut by_key = HashMap::new();
        let mut by_name = HashMap::new();
        for e in &meta.entries {
            match (&e.family, &e.name) {
                (Some(f), Some(name)) if f != "reduce_copy" => {
                    by_name.insert((name.clone(), n_of(e), e.shape.clone()), e.clone());
                }
                _ => {
                    let key = (
                        e.transport.clone(),
                        e.srcs.to_uppercase(),
                        e.dsts.to_uppercase(),
                        n_of(e),
                    );
                    by_key.insert(key, e.clone());
                }
            }
        }
        Ok(TorchTable {
            meta,
            by_key,
            by_name,
        })
    }

    /// A reduce_copy form at n elements.
    pub fn get(&self, transport: &str, srcs: &str, dsts: &str, n: u64) -> Option<&TorchEntry> {
        self.by_key
            .get(&(transport.to_string(), srcs.to_string(), dsts.to_string(), n))
    }

    /// Another family's kernel at n elements (and shape, for row and column kernels).
    pub fn get_named(&self, name: &str, n: u64, shape: Option<&str>) -> Option<&TorchEntry> {
        self.by_name
            .get(&(name.to_string(), n, shape.map(str::to_string)))
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
            r#"{"gpu":"H100","torch":"2.11","date":"2000-01-01","n":268435456,"copy_gbps":2900.5,
               "entries":[{"config":2,"transport":"bf16","srcs":"TA","dsts":"T","eager_gbps":900.0,
                           "compile_gbps":2500.0,"eager_us":1.0,"compile_us":1.0},
                          {"config":null,"transport":"f16","srcs":"A","dsts":"T","eager_gbps":1.0,
                           "compile_gbps":null,"compile_error":"boom"},
                          {"config":null,"transport":"bf16","srcs":"A","dsts":"A","n":1024,"eager_gbps":5.0},
                          {"family":"reduce","name":"reduce_all_sum_f32_f32","n":1024,"eager_gbps":7.0},
                          {"family":"reduce","name":"reduce_rows_sum_bf16_f32","n":8,"shape":"2x4",
                           "eager_gbps":1.0,"compile_gbps":9.0},
                          {"family":"all_reduce","name":"all_reduce_symm_two_shot_bf16","n":4096,
                           "world":2,"eager_us":10.5,"eager_gbps":0.8,"busbw_gbps":0.8,"eager_expr":"x"},
                          {"family":"all_reduce","name":"all_reduce_symm_one_shot_f16","n":4096,
                           "world":2,"eager_us":null,"eager_gbps":null,"busbw_gbps":null,
                           "eager_expr":"x","error":"not implemented for 'Half'"}]}"#,
        )
        .unwrap();
        let t = TorchTable::load(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let n = 268435456;
        assert_eq!(
            t.get("bf16", "TA", "T", n).unwrap().compile_gbps,
            Some(2500.0)
        );
        assert_eq!(t.get("f16", "A", "T", n).unwrap().compile_gbps, None);
        assert!(t.get("f16", "TA", "T", n).is_none());
        assert!(t.get("bf16", "TA", "T", 1024).is_none());
        assert_eq!(t.get("bf16", "A", "A", 1024).unwrap().eager_gbps, Some(5.0));
        let sum = t.get_named("reduce_all_sum_f32_f32", 1024, None).unwrap();
        assert_eq!(sum.eager_gbps, Some(7.0));
        let rows = t
            .get_named("reduce_rows_sum_bf16_f32", 8, Some("2x4"))
            .unwrap();
        assert_eq!(rows.compile_gbps, Some(9.0));
        assert!(t.get_named("reduce_rows_sum_bf16_f32", 8, None).is_none());
        let two_shot = t.get_named("all_reduce_symm_two_shot_bf16", 4096, None);
        assert_eq!(two_shot.unwrap().eager_us, Some(10.5));
        let failed = t.get_named("all_reduce_symm_one_shot_f16", 4096, None);
        assert_eq!(failed.unwrap().eager_us, None);
        assert!(TorchTable::load(Path::new("/nonexistent/x.json")).is_err());
    }
}
