//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// Snapshot settings shared by every snapshot test: the top-level directory,
/// file names without the module prefix, and the toolkit's version lines in PTX
/// masked (they say which build made the PTX, not what the PTX is; the NVRTC
/// version the snapshot was taken with is in the header line instead).
#[allow(unused_macros)]
macro_rules! snapshot {
    ($name:expr, $text:expr) => {
        insta::with_settings!({
            snapshot_path => "../snapshots",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            filters => vec![
                (r"(?m)^// Cuda compilation tools.*$", "// Cuda compilation tools [masked]"),
                (r"(?m)^// Based on NVVM.*$", "// Based on NVVM [masked]"),
                (r"(?m)^// Compiler Build ID.*$", "// Compiler Build ID [masked]"),
            ],
        }, {
            insta::assert_snapshot!($name, $text);
        })
    };
}

pub mod ar;
pub mod ar_norm;
pub mod order;

use std::path::PathBuf;

/// True when the test command asked that missing tools fail instead of skip.
fn required(var: &str) -> bool {
    std::env::var(var).map(|v| v == "1").unwrap_or(false)
}

/// NVRTC, or None (and a note) when it is absent; with REDJIT_REQUIRE_NVRTC=1
/// (set by scripts/test.sh) absence is a failure.
pub fn nvrtc_or_skip() -> Option<redjit::Nvrtc> {
    match redjit::Nvrtc::load() {
        Ok(n) => Some(n),
        Err(e) if required("REDJIT_REQUIRE_NVRTC") => panic!("REDJIT_REQUIRE_NVRTC=1 but {e}"),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

/// ptxas from $REDJIT_PTXAS or PATH; with REDJIT_REQUIRE_NVRTC=1 absence fails.
pub fn ptxas_or_skip() -> Option<PathBuf> {
    let candidate = std::env::var_os("REDJIT_PTXAS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("ptxas"))
                    .find(|p| p.is_file())
            })
        });
    match candidate.filter(|p| p.is_file()) {
        Some(p) => Some(p),
        None if required("REDJIT_REQUIRE_NVRTC") => {
            panic!("REDJIT_REQUIRE_NVRTC=1 but ptxas was not found")
        }
        None => {
            eprintln!("skipping: ptxas not found");
            None
        }
    }
}

/// The number of GPUs when there are at least `min`, or None (and a note); with
/// REDJIT_REQUIRE_GPUS=N, fewer than N GPUs (N >= min) is a failure, never a
/// silent pass: the multi-GPU tests skip on a one-GPU machine unless asked.
pub fn gpus_or_skip(min: usize) -> Option<usize> {
    let want: Option<usize> = std::env::var("REDJIT_REQUIRE_GPUS")
        .ok()
        .and_then(|v| v.parse().ok());
    let have = redjit::gpu_available().unwrap_or(0);
    match want {
        Some(n) if have < n.max(min) => {
            panic!("REDJIT_REQUIRE_GPUS={n} but this machine has {have} GPU(s)")
        }
        _ if have < min => {
            eprintln!("skipping: {have} GPU(s), this test needs {min}");
            None
        }
        _ => Some(have),
    }
}

/// A GPU runtime, or None when there is no GPU; REDJIT_REQUIRE_GPU=1 turns a
/// missing GPU into a failure, never a silent pass.
pub fn gpu_or_skip() -> Option<redjit::Runtime> {
    match redjit::Runtime::new(0) {
        Ok(rt) => Some(rt),
        Err(e) if required("REDJIT_REQUIRE_GPU") => panic!("REDJIT_REQUIRE_GPU=1 but {e}"),
        Err(e) => {
            eprintln!("skipping: {e}");
            None
        }
    }
}

/// The numbers of one kernel in a `ptxas -v` report.
#[derive(Debug, Default, Clone)]
pub struct PtxasUsage {
    pub registers: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

impl PtxasUsage {
    /// Every entry function's numbers in a `ptxas -v` report, by name.
    pub fn parse_all(report: &str) -> std::collections::HashMap<String, PtxasUsage> {
        let number_before = |line: &str, unit: &str| -> Option<u32> {
            let i = line.find(unit)?;
            line[..i].split_whitespace().last()?.parse().ok()
        };
        let mut out = std::collections::HashMap::new();
        let mut current: Option<String> = None;
        for line in report.lines() {
            if let Some(rest) = line.split("Compiling entry function '").nth(1) {
                let name = rest.split('\'').next().unwrap_or("").to_string();
                out.insert(name.clone(), PtxasUsage::default());
                current = Some(name);
            }
            let Some(u) = current.as_ref().and_then(|n| out.get_mut(n)) else {
                continue;
            };
            if line.contains("bytes stack frame") {
                u.stack_frame = number_before(line, "bytes stack frame").unwrap_or(u32::MAX);
                u.spill_stores = number_before(line, "bytes spill stores").unwrap_or(u32::MAX);
                u.spill_loads = number_before(line, "bytes spill loads").unwrap_or(u32::MAX);
            }
            if line.contains("Used") && line.contains("registers") {
                u.registers = number_before(line, "registers").unwrap_or(0);
            }
        }
        out
    }
}

/// SplitMix64: a small, fast generator; tests draw a fresh seed per run and print
/// it so a failure can be replayed with REDJIT_TEST_SEED.
pub struct Rng(u64);

impl Rng {
    pub fn fresh(test: &str) -> Rng {
        let seed = std::env::var("REDJIT_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0x1234_5678)
            });
        eprintln!("{test}: REDJIT_TEST_SEED={seed}");
        Rng(seed)
    }

    /// A generator from a seed drawn by another (one stream per chunk of a
    /// parallel fill).
    pub fn seeded(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A finite f32 with a random sign, mantissa and an exponent spread over
    /// 2^-30..2^20, so sums cancel, round, overflow f16 and underflow to its
    /// subnormals; never zero.
    pub fn value(&mut self) -> f32 {
        let r = self.next_u64();
        let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
        let mant = 1.0 + ((r >> 1) & 0x7f_ffff) as f32 / 8_388_608.0;
        let exp = ((r >> 24) % 51) as i32 - 30;
        sign * mant * (exp as f32).exp2()
    }

    /// n random values, generated in parallel chunks (large test sizes).
    pub fn values(&mut self, n: usize) -> Vec<f32> {
        let seeds: Vec<u64> = (0..16).map(|_| self.next_u64()).collect();
        let chunk = n.div_ceil(16).max(1);
        let mut out = vec![0f32; n];
        std::thread::scope(|s| {
            for (part, seed) in out.chunks_mut(chunk).zip(seeds) {
                s.spawn(move || {
                    let mut r = Rng(seed);
                    for x in part {
                        *x = r.value();
                    }
                });
            }
        });
        out
    }
}

/// A JIT that compiles for sm_90 to `output`, in memory only.
pub fn sm90_jit(output: redjit::Output) -> redjit::Jit {
    redjit::Jit::with_target(
        redjit::Target {
            arch: redjit::Arch::SM90,
            output,
        },
        redjit::CompileCache::in_memory(),
    )
}

/// Compiles `specs` for sm_90 to each of `outputs` and checks every kernel's
/// artifact: PTX defines the kernel's entry, cubin is an ELF image.
pub fn assert_compiles_for_sm90<S: redjit::KernelSpec>(specs: &[S], outputs: &[redjit::Output]) {
    for &output in outputs {
        for (spec, r) in specs.iter().zip(sm90_jit(output).compile_all(specs)) {
            let name = spec.name();
            let c = r.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!c.artifact.bytes.is_empty(), "{name}");
            match output {
                redjit::Output::Ptx => assert!(
                    c.artifact
                        .ptx()
                        .unwrap()
                        .contains(&format!(".entry {name}(")),
                    "{name}"
                ),
                redjit::Output::Cubin => assert_eq!(&c.artifact.bytes[..4], b"\x7fELF", "{name}"),
            }
        }
    }
}

/// Runs `ptxas -v` for sm_90 once per NVRTC program `compile_all` makes of
/// `specs` (it batches kernels) and checks every kernel's own report: no stack
/// frame, no spills, and launchable at `threads(spec)` threads per block
/// (registers x threads fit the 64 K register file; one thread has at most 255).
/// Skips, as `ptxas_or_skip` says, without NVRTC or ptxas.
pub fn assert_ptxas_no_stack_no_spills<S: redjit::KernelSpec>(
    specs: &[S],
    threads: impl Fn(&S) -> u32,
) {
    let Some(_nvrtc) = nvrtc_or_skip() else {
        return;
    };
    let Some(ptxas) = ptxas_or_skip() else {
        return;
    };
    let compiled: Vec<_> = sm90_jit(redjit::Output::Ptx)
        .compile_all(specs)
        .into_iter()
        .zip(specs)
        .map(|(r, s)| r.unwrap_or_else(|e| panic!("{}: {e}", s.name())))
        .collect();
    let mut programs = Vec::new();
    for c in &compiled {
        if !programs.contains(&c.artifact_key) {
            programs.push(c.artifact_key);
        }
    }
    let dir = std::env::temp_dir().join(format!(
        "redjit-ptxas-{}-{}",
        std::process::id(),
        specs.first().map(|s| s.name()).unwrap_or_default()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let mut checked = 0;
    let mut bad = Vec::new();
    for (p, key) in programs.iter().enumerate() {
        let members: Vec<_> = compiled.iter().filter(|c| c.artifact_key == *key).collect();
        let path = dir.join(format!("program{p}.ptx"));
        std::fs::write(&path, members[0].artifact.ptx().unwrap()).unwrap();
        let out = std::process::Command::new(&ptxas)
            .args(["-v", "--gpu-name", "sm_90", "-o", "/dev/null"])
            .arg(&path)
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "ptxas failed on program {p}:\n{report}"
        );
        let usage = PtxasUsage::parse_all(&report);
        for c in members {
            let spec = specs.iter().find(|s| s.name() == c.name).unwrap();
            let u = usage
                .get(&c.name)
                .unwrap_or_else(|| panic!("no resource report for {}:\n{report}", c.name));
            let limit = (65_536 / threads(spec)).min(255);
            if u.stack_frame != 0
                || u.spill_stores != 0
                || u.spill_loads != 0
                || u.registers == 0
                || u.registers > limit
            {
                bad.push(format!("{}: {u:?} (limit {limit})", c.name));
            }
            checked += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(checked, specs.len());
    assert!(
        bad.is_empty(),
        "stack, spills or too many registers:\n{}",
        bad.join("\n")
    );
}

/// The generated source of `spec`, after the invariants every snapshot relies on:
/// named after the spec, header-free, fully rendered, with the kernel declared
/// as `kernel_line` says, and the same text on a second render.
pub fn checked_source<S: redjit::KernelSpec>(spec: &S, kernel_line: &str) -> String {
    let name = spec.name();
    let src = spec.render().unwrap();
    assert_eq!(src.name, name);
    let code = src.code;
    assert!(!code.contains("#include"), "{name}: has an #include");
    assert!(
        code.contains("extern \"C\" __global__") && code.contains(kernel_line),
        "{name}: no kernel declared as {kernel_line:?}"
    );
    assert!(
        !code.contains("{{") && !code.contains("{%"),
        "{name}: unrendered template syntax"
    );
    assert_eq!(
        spec.render().unwrap().code,
        code,
        "{name}: not deterministic"
    );
    code
}

/// The sm_90 PTX NVRTC makes of `spec`, checked to be sm_90 text that defines
/// the kernel's entry.
pub fn sm90_ptx<S: redjit::KernelSpec + ?Sized>(spec: &S) -> String {
    let name = spec.name();
    let compiled = sm90_jit(redjit::Output::Ptx)
        .compile(spec)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(compiled.artifact.output, redjit::Output::Ptx);
    let ptx = compiled
        .artifact
        .ptx()
        .unwrap_or_else(|| panic!("{name}: PTX is not UTF-8"));
    assert!(!ptx.contains('\0'), "{name}: PTX text holds a NUL");
    assert!(ptx.contains(".target sm_90"), "{name}: not sm_90 PTX");
    assert!(
        ptx.contains(&format!(".entry {name}(")),
        "{name}: no .entry {name}"
    );
    ptx.to_string()
}

/// Asserts how often each instruction occurs in `ptx` (0: never).
pub fn assert_instruction_counts(name: &str, ptx: &str, counts: &[(&str, usize)]) {
    for &(instruction, count) in counts {
        assert_eq!(
            ptx.matches(instruction).count(),
            count,
            "{name}: how often the PTX has {instruction:?}"
        );
    }
}

/// A PTX snapshot's text: a header naming the kernel, the NVRTC that made it and
/// the target, then the PTX.
pub fn ptx_snapshot_text(name: &str, nvrtc_version: &str, ptx: &str) -> String {
    format!("// spec: {name}  nvrtc: {nvrtc_version}  target: sm_90 ptx\n{ptx}")
}

/// A buffer description that is no device memory: the validation tests' input
/// and output (dtype, length and address are all a call check reads).
pub struct FakeBuffer {
    pub dtype: redjit::DType,
    pub len: usize,
    pub address: u64,
}

// SAFETY: not upheld (no device memory): a FakeBuffer only ever reaches the
// call checks (`check_*_call`), which read its description and launch nothing.
unsafe impl redjit::KernelInput for FakeBuffer {
    fn dtype(&self) -> redjit::DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push_input<'a>(&'a self, _: &mut cudarc::driver::LaunchArgs<'a>) {}
    fn address(&self, _: &cudarc::driver::CudaStream) -> u64 {
        self.address
    }
}

// SAFETY: as above.
unsafe impl redjit::KernelOutput for FakeBuffer {
    fn dtype(&self) -> redjit::DType {
        self.dtype
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push_output<'a>(&'a mut self, _: &mut cudarc::driver::LaunchArgs<'a>) {}
    fn address(&self, _: &cudarc::driver::CudaStream) -> u64 {
        self.address
    }
}
