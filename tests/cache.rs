//! The compile cache with real NVRTC compiles (no GPU): misses and hits in memory
//! and on disk, corrupt entries rebuilt, concurrent writers of one key, the key's
//! inputs, and `compile_all`'s order. Needs NVRTC (scripts/test.sh installs it),
//! except the key test.

mod common;

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Barrier};

use redjit::cache::list_entries;
use redjit::{
    Arch, CacheKey, CacheStats, CompileCache, Compiled, DType, Jit, KernelSource, KernelSpec,
    Origin, Output, ReduceCopySpec, Role, Target,
};

const CUBIN_SM90: Target = Target {
    arch: Arch::SM90,
    output: Output::Cubin,
};

/// A fresh, empty directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "redjit-cache-test-{}-{test}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn jit_on(dir: &Path) -> Jit {
    Jit::with_target(CUBIN_SM90, CompileCache::on_disk(dir).unwrap())
}

fn spec() -> ReduceCopySpec {
    ReduceCopySpec::default()
}

fn stats(memory_hits: u64, disk_hits: u64, compiled: u64, corrupt: u64) -> CacheStats {
    CacheStats {
        memory_hits,
        disk_hits,
        compiled,
        corrupt,
        write_failures: 0,
    }
}

/// Names of the files in `dir` that are left-over temporaries of atomic writes.
fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-"))
        .collect()
}

/// The one entry file in `dir` (asserting that there is exactly one).
fn only_entry(dir: &Path) -> PathBuf {
    let entries = list_entries(dir);
    assert_eq!(
        entries.len(),
        1,
        "entries in {}: {entries:?}",
        dir.display()
    );
    entries[0].path.clone()
}

#[test]
fn miss_then_memory_hit_then_disk_hit_in_a_new_jit() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let dir = TempDir::new("hit");
    let spec = spec();

    let jit = jit_on(dir.path());
    let first = jit.compile(&spec).unwrap();
    assert_eq!(first.origin, Origin::Compiled);
    assert_eq!(first.name, spec.name());
    assert_eq!(first.artifact.output, Output::Cubin);
    assert_eq!(&first.artifact.bytes[..4], b"\x7fELF");
    assert_eq!(jit.cache().stats(), stats(0, 0, 1, 0));

    // The entry is where entry_path says, and it is the only one.
    let path = jit.cache().entry_path(&first.name, first.key).unwrap();
    assert!(path.is_file(), "{} missing", path.display());
    assert_eq!(only_entry(dir.path()), path);
    assert!(temp_files(dir.path()).is_empty());

    let again = jit.compile(&spec).unwrap();
    assert_eq!(again.origin, Origin::Memory);
    assert_eq!(again.key, first.key);
    assert!(Arc::ptr_eq(&again.artifact, &first.artifact));
    assert_eq!(jit.cache().stats(), stats(1, 0, 1, 0));

    // A new process, in effect: a new Jit and cache on the same directory.
    let jit2 = jit_on(dir.path());
    let from_disk = jit2.compile(&spec).unwrap();
    assert_eq!(from_disk.origin, Origin::Disk);
    assert_eq!(from_disk.key, first.key);
    assert_eq!(*from_disk.artifact, *first.artifact);
    assert_eq!(jit2.cache().stats(), stats(0, 1, 0, 0));
    // ... which then serves it from memory.
    assert_eq!(jit2.compile(&spec).unwrap().origin, Origin::Memory);
    assert_eq!(jit2.cache().stats(), stats(1, 1, 0, 0));
    // The first cache's counters are its own.
    assert_eq!(jit.cache().stats(), stats(1, 0, 1, 0));

    // Another spec is another entry, compiled.
    let other = ReduceCopySpec {
        unroll: 2,
        ..spec.clone()
    };
    let c = jit2.compile(&other).unwrap();
    assert_eq!(c.origin, Origin::Compiled);
    assert_ne!(c.key, first.key);
    assert_eq!(list_entries(dir.path()).len(), 2);
}

/// One way to damage an entry file, given its valid contents.
struct Damage {
    what: &'static str,
    apply: fn(&[u8]) -> Vec<u8>,
}

/// The entry format's header: magic, output kind, length, checksum.
const HEADER_LEN: usize = 8 + 8 + 8 + 16;

fn damages() -> Vec<Damage> {
    vec![
        Damage {
            what: "truncated to half",
            apply: |d| d[..d.len() / 2].to_vec(),
        },
        Damage {
            what: "last byte cut off",
            apply: |d| d[..d.len() - 1].to_vec(),
        },
        Damage {
            what: "emptied",
            apply: |_| Vec::new(),
        },
        Damage {
            what: "a payload byte flipped",
            apply: |d| {
                let mut d = d.to_vec();
                let i = HEADER_LEN + (d.len() - HEADER_LEN) / 2;
                d[i] ^= 0xff;
                d
            },
        },
        Damage {
            what: "garbage",
            apply: |d| {
                (0..d.len())
                    .map(|i| (i as u8).wrapping_mul(31) ^ 0xa5)
                    .collect()
            },
        },
        Damage {
            what: "a short text",
            apply: |_| b"not a redjit cache entry\n".to_vec(),
        },
    ]
}

/// Compiles into a fresh dir, damages the entry, and checks that a new Jit
/// rebuilds it rather than loading it.
fn corrupt_entry_is_rebuilt(
    what: &str,
    spec: &ReduceCopySpec,
    damage: impl FnOnce(&Path, &[u8]) -> Vec<u8>,
) {
    let dir = TempDir::new("corrupt");
    let jit = jit_on(dir.path());
    let first = jit.compile(spec).unwrap();
    assert_eq!(first.origin, Origin::Compiled, "{what}");
    let path = jit.cache().entry_path(&first.name, first.key).unwrap();
    let valid = fs::read(&path).unwrap();
    assert!(valid.len() > HEADER_LEN, "{what}");
    let damaged = damage(dir.path(), &valid);
    assert_ne!(damaged, valid, "{what}: the damage changed nothing");
    fs::write(&path, &damaged).unwrap();

    let jit2 = jit_on(dir.path());
    let rebuilt = jit2.compile(spec).unwrap();
    assert_eq!(
        rebuilt.origin,
        Origin::Compiled,
        "{what}: loaded a damaged entry"
    );
    assert_eq!(jit2.cache().stats(), stats(0, 0, 1, 1), "{what}");
    assert_eq!(*rebuilt.artifact, *first.artifact, "{what}");
    // The entry was rewritten whole, atomically.
    assert_eq!(
        fs::read(&path).unwrap(),
        valid,
        "{what}: entry not rewritten"
    );
    assert_eq!(only_entry(dir.path()), path, "{what}");
    assert!(temp_files(dir.path()).is_empty(), "{what}");

    let jit3 = jit_on(dir.path());
    let loaded = jit3.compile(spec).unwrap();
    assert_eq!(loaded.origin, Origin::Disk, "{what}");
    assert_eq!(*loaded.artifact, *first.artifact, "{what}");
    assert_eq!(jit3.cache().stats(), stats(0, 1, 0, 0), "{what}");
}

#[test]
fn a_damaged_entry_is_counted_rebuilt_and_valid_afterwards() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let spec = spec();
    for d in damages() {
        corrupt_entry_is_rebuilt(d.what, &spec, |_, valid| (d.apply)(valid));
    }
}

#[test]
fn an_entry_of_the_other_output_kind_is_rejected() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let spec = spec();
    // A well-formed, checksummed PTX entry put where the cubin entry belongs.
    corrupt_entry_is_rebuilt("PTX entry in a cubin's place", &spec, |_, _| {
        let ptx_dir = TempDir::new("ptx-entry");
        let ptx_jit = Jit::with_target(
            Target {
                arch: Arch::SM90,
                output: Output::Ptx,
            },
            CompileCache::on_disk(ptx_dir.path()).unwrap(),
        );
        let c = ptx_jit.compile(&spec).unwrap();
        let ptx_entry = ptx_jit.cache().entry_path(&c.name, c.key).unwrap();
        fs::read(ptx_entry).unwrap()
    });
}

#[test]
fn two_threads_writing_one_key_leave_one_valid_entry() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let spec = spec();
    for round in 0..5 {
        let dir = TempDir::new("race");
        let jits = [jit_on(dir.path()), jit_on(dir.path())];
        let barrier = Barrier::new(jits.len());
        let results: Vec<Compiled> = std::thread::scope(|s| {
            let handles: Vec<_> = jits
                .iter()
                .map(|jit| {
                    let (barrier, spec) = (&barrier, &spec);
                    s.spawn(move || {
                        barrier.wait();
                        jit.compile(spec)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap().unwrap())
                .collect()
        });
        assert_eq!(results[0].key, results[1].key, "round {round}");
        assert_eq!(*results[0].artifact, *results[1].artifact, "round {round}");
        // Each either compiled or found the other's complete entry; none saw a
        // partial one, and no write failed.
        let mut total = CacheStats::default();
        for (jit, r) in jits.iter().zip(&results) {
            assert!(
                matches!(r.origin, Origin::Compiled | Origin::Disk),
                "round {round}: {:?}",
                r.origin
            );
            let s = jit.cache().stats();
            total.disk_hits += s.disk_hits;
            total.compiled += s.compiled;
            total.corrupt += s.corrupt;
            total.write_failures += s.write_failures;
        }
        assert_eq!(total.compiled + total.disk_hits, 2, "round {round}");
        assert!(total.compiled >= 1, "round {round}");
        assert_eq!(total.corrupt, 0, "round {round}");
        assert_eq!(total.write_failures, 0, "round {round}");

        let path = jits[0]
            .cache()
            .entry_path(&results[0].name, results[0].key)
            .unwrap();
        assert_eq!(only_entry(dir.path()), path, "round {round}");
        assert_eq!(
            temp_files(dir.path()),
            Vec::<String>::new(),
            "round {round}"
        );

        let fresh = jit_on(dir.path());
        let loaded = fresh.compile(&spec).unwrap();
        assert_eq!(loaded.origin, Origin::Disk, "round {round}");
        assert_eq!(*loaded.artifact, *results[0].artifact, "round {round}");
        assert_eq!(fresh.cache().stats(), stats(0, 1, 0, 0), "round {round}");
    }
}

#[test]
fn the_key_changes_with_source_target_output_and_nvrtc_version() {
    let source = KernelSource {
        name: "k".into(),
        kernels: vec!["k".into()],
        code: "extern \"C\" __global__ void k() {}\n".into(),
    };
    let key = |s: &KernelSource, t: Target, v: &str| CacheKey::new(s, t, v);
    let base = key(&source, CUBIN_SM90, "13.0");
    // Deterministic.
    assert_eq!(base, key(&source.clone(), CUBIN_SM90, "13.0"));
    assert_eq!(base.hex().len(), 32);

    let changed_code = KernelSource {
        code: source.code.replace("{}", "{ }"),
        ..source.clone()
    };
    let changed_name = KernelSource {
        name: "k2".into(),
        ..source.clone()
    };
    let sm80 = Target {
        arch: Arch::SM80,
        ..CUBIN_SM90
    };
    let ptx = Target {
        output: Output::Ptx,
        ..CUBIN_SM90
    };
    let variants = [
        ("code", key(&changed_code, CUBIN_SM90, "13.0")),
        ("name", key(&changed_name, CUBIN_SM90, "13.0")),
        ("arch", key(&source, sm80, "13.0")),
        ("output", key(&source, ptx, "13.0")),
        ("nvrtc version", key(&source, CUBIN_SM90, "13.1")),
        ("nvrtc version 12.9", key(&source, CUBIN_SM90, "12.9")),
    ];
    for (what, k) in &variants {
        assert_ne!(*k, base, "changing the {what} kept the key");
    }
    let distinct: HashSet<CacheKey> = variants.iter().map(|(_, k)| *k).collect();
    assert_eq!(distinct.len(), variants.len(), "two variants share a key");

    // The spec key (what Jit::compile uses) has the same inputs, plus the
    // codegen fingerprint in place of the source.
    let fp = redjit::codegen::CODEGEN_FINGERPRINT;
    let name = spec().name();
    let spec_key = |n: &str, f: &str, t: Target, v: &str| CacheKey::for_spec(n, f, t, v);
    let base = spec_key(&name, fp, CUBIN_SM90, "13.0");
    assert_eq!(base, spec_key(&name, fp, CUBIN_SM90, "13.0"));
    let variants = [
        (
            "name",
            spec_key(
                "reduce_copy_u2_f32_bf16_TA_T_sum_rn",
                fp,
                CUBIN_SM90,
                "13.0",
            ),
        ),
        (
            "fingerprint",
            spec_key(&name, "another-fingerprint", CUBIN_SM90, "13.0"),
        ),
        ("arch", spec_key(&name, fp, sm80, "13.0")),
        ("output", spec_key(&name, fp, ptx, "13.0")),
        ("nvrtc version", spec_key(&name, fp, CUBIN_SM90, "13.1")),
    ];
    for (what, k) in &variants {
        assert_ne!(*k, base, "changing the {what} kept the spec key");
    }
    let distinct: HashSet<CacheKey> = variants.iter().map(|(_, k)| *k).collect();
    assert_eq!(
        distinct.len(),
        variants.len(),
        "two spec variants share a key"
    );
}

#[test]
fn compile_all_returns_results_in_input_order() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    // Six distinct specs, deliberately in no sorted order.
    let specs = vec![
        ReduceCopySpec {
            unroll: 8,
            transport: DType::F16,
            ..spec()
        },
        ReduceCopySpec {
            unroll: 1,
            srcs: vec![Role::Accum.into()],
            dsts: vec![Role::Transport],
            ..spec()
        },
        spec(),
        ReduceCopySpec {
            unroll: 2,
            srcs: vec![Role::Accum.into(), Role::Accum.into()],
            dsts: vec![Role::Accum],
            ..spec()
        },
        ReduceCopySpec {
            srcs: vec![Role::Transport.into(), Role::Transport.into()],
            ..spec()
        },
        ReduceCopySpec {
            unroll: 1,
            transport: DType::F16,
            srcs: vec![Role::Transport.into()],
            dsts: vec![Role::Accum],
            ..spec()
        },
    ];
    let names: HashSet<String> = specs.iter().map(|s| s.name()).collect();
    assert_eq!(names.len(), specs.len(), "the specs are not distinct");

    // PTX, so each artifact can be checked to hold its own spec's kernel.
    let jit = Jit::with_target(
        Target {
            arch: Arch::SM90,
            output: Output::Ptx,
        },
        CompileCache::in_memory(),
    );
    let results = jit.compile_all(&specs);
    assert_eq!(results.len(), specs.len());
    for (spec, r) in specs.iter().zip(&results) {
        let c = r
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: {e}", spec.name()));
        assert_eq!(c.name, spec.name());
        assert_eq!(c.origin, Origin::Compiled, "{}", c.name);
        let ptx = c.artifact.ptx().unwrap();
        assert!(
            ptx.contains(&format!(".entry {}(", spec.name())),
            "{}",
            c.name
        );
        // The kernel cached under this spec's key is this result's artifact.
        let again = jit.compile(spec).unwrap();
        assert_eq!(again.origin, Origin::Memory, "{}", c.name);
        assert_eq!(again.key, c.key, "{}", c.name);
        assert!(Arc::ptr_eq(&again.artifact, &c.artifact), "{}", c.name);
    }
    assert_eq!(jit.cache().stats(), stats(6, 0, 6, 0));

    // An invalid spec among valid ones fails alone, in its place.
    let mut mixed = specs.clone();
    mixed.insert(
        3,
        ReduceCopySpec {
            unroll: 3,
            ..spec()
        },
    );
    let results = jit.compile_all(&mixed);
    assert_eq!(results.len(), mixed.len());
    for (i, (spec, r)) in mixed.iter().zip(&results).enumerate() {
        match r {
            Ok(c) => {
                assert_ne!(i, 3, "the invalid spec compiled");
                assert_eq!(c.name, spec.name());
            }
            Err(e) => {
                assert_eq!(i, 3, "{}: {e}", spec.name());
                assert!(e.to_string().contains("invalid unroll = 3"), "{e}");
            }
        }
    }
}

#[test]
fn the_spec_key_changes_with_name_fingerprint_target_output_and_nvrtc_version() {
    let name = "reduce_copy_u4_f32_bf16_TA_T_sum_rn";
    let fp = redjit::codegen::CODEGEN_FINGERPRINT;
    let base = CacheKey::for_spec(name, fp, CUBIN_SM90, "13.0");
    assert_eq!(base, CacheKey::for_spec(name, fp, CUBIN_SM90, "13.0"));
    let variants = [
        CacheKey::for_spec(
            "reduce_copy_u2_f32_bf16_TA_T_sum_rn",
            fp,
            CUBIN_SM90,
            "13.0",
        ),
        CacheKey::for_spec(name, "0000", CUBIN_SM90, "13.0"),
        CacheKey::for_spec(
            name,
            fp,
            Target {
                arch: Arch::SM80,
                ..CUBIN_SM90
            },
            "13.0",
        ),
        CacheKey::for_spec(
            name,
            fp,
            Target {
                output: Output::Ptx,
                ..CUBIN_SM90
            },
            "13.0",
        ),
        CacheKey::for_spec(name, fp, CUBIN_SM90, "13.1"),
    ];
    for (i, v) in variants.iter().enumerate() {
        assert_ne!(*v, base, "variant {i} kept the key");
    }
    assert_eq!(fp.len(), 32, "the fingerprint is a 128-bit hex hash");
}

#[test]
fn a_batch_shares_one_file_and_each_kernel_is_found_by_its_own_key() {
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let dir = TempDir::new("batch");
    let specs: Vec<ReduceCopySpec> = ReduceCopySpec::matrix(2, DType::BF16)[..6].to_vec();
    let first = jit_on(dir.path());
    let compiled: Vec<_> = first
        .compile_all(&specs)
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    // One NVRTC program: one artifact holding every kernel.
    assert!(compiled.iter().all(|c| c.origin == Origin::Compiled));
    assert!(
        compiled
            .iter()
            .all(|c| c.artifact_key == compiled[0].artifact_key)
    );
    assert_eq!(first.cache().stats().compiled, 6);
    let entries = list_entries(dir.path());
    assert_eq!(
        entries.len(),
        7,
        "one batch file and six references: {entries:?}"
    );
    let batch_files: Vec<_> = entries
        .iter()
        .filter(|e| {
            e.path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("batch-")
        })
        .collect();
    assert_eq!(batch_files.len(), 1);

    // A new process (a new Jit) finds each kernel alone, from disk, sharing the
    // one artifact; kernels already in memory are not read again.
    let second = jit_on(dir.path());
    for (spec, c) in specs.iter().zip(&compiled) {
        let again = second.compile(spec).unwrap();
        assert_eq!(again.origin, Origin::Disk, "{}", spec.name());
        assert_eq!(again.key, c.key);
        assert_eq!(again.artifact_key, c.artifact_key);
        assert_eq!(again.artifact.bytes, c.artifact.bytes);
    }
    assert_eq!(second.cache().stats().compiled, 0);

    // A damaged batch file: every member is counted corrupt and recompiled.
    let batch = batch_files[0].path.clone();
    let mut data = fs::read(&batch).unwrap();
    let last = data.len() - 1;
    data[last] ^= 0xff;
    fs::write(&batch, &data).unwrap();
    let third = jit_on(dir.path());
    let rebuilt = third.compile(&specs[0]).unwrap();
    assert_eq!(rebuilt.origin, Origin::Compiled);
    assert_eq!(third.cache().stats().corrupt, 1);
    assert!(temp_files(dir.path()).is_empty());
}

#[test]
fn a_cache_folder_that_cannot_be_made_leaves_a_memory_cache() {
    // The cache is an optimisation: a folder under a file cannot be made, and
    // the cache then holds kernels in memory, still compiling and serving them.
    let dir = TempDir::new("unmakeable");
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let cache = CompileCache::on_disk_or_memory(file.join("cache"));
    assert_eq!(cache.dir(), None);
    assert!(CompileCache::on_disk(file.join("cache")).is_err());
    let Some(_nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let jit = Jit::with_target(CUBIN_SM90, cache);
    jit.compile(&spec()).unwrap();
    jit.compile(&spec()).unwrap();
    assert_eq!(jit.cache().stats(), stats(1, 0, 1, 0));
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}
