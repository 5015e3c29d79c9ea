//! Fingerprints what the generated source depends on: the templates and this
//! crate's Rust code. The runtime keys warm cache lookups on (kernel name,
//! fingerprint) so it can skip rendering, while any edit to a template, to the
//! code that fills its context, or to the locked dependency versions (tera)
//! still changes the key.

use std::fs;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    // Cargo.lock pins tera, whose output the templates go through.
    let roots = [
        manifest.join("../templates"),
        manifest.join("src"),
        manifest.join("../Cargo.lock"),
    ];
    let mut all = Vec::new();
    for r in &roots {
        println!("cargo:rerun-if-changed={}", r.display());
        files(r, &mut all);
    }
    all.sort();
    // FNV-1a 128, as runtime/src/hash.rs.
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    let prime: u128 = 0x0000000001000000000000000000013B;
    for p in &all {
        let rel = p
            .strip_prefix(&manifest)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        let data = fs::read(p).unwrap_or_default();
        for b in rel
            .bytes()
            .chain((data.len() as u64).to_le_bytes())
            .chain(data)
        {
            h ^= u128::from(b);
            h = h.wrapping_mul(prime);
        }
    }
    println!("cargo:rustc-env=REDJIT_CODEGEN_FINGERPRINT={h:032x}");
}
