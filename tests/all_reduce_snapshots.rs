//! Snapshots of the all-reduce kernels, reviewed like code: the CUDA source and
//! the sm_90 PTX (pinned NVRTC) of the one-shot, two-stage and cp.async
//! two-stage kernels for 4 bf16 ranks. Invariants are checked before each
//! snapshot: the barrier's release/acquire pairs, the bounded spin, no trap, no
//! local memory, 16-byte peer loads, cp.async only where asked for.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test
//! all_reduce_snapshots`, then read the diff.

mod common;

use redjit::{AllReduceSpec, Arch, CompileCache, Jit, KernelSpec, Output, Target};

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

fn check_and_snapshot(name: &str, barriers: usize, cp_async: bool) {
    let spec: AllReduceSpec = name.parse().unwrap();
    let src = spec.render().unwrap();
    let code = src.code;
    assert!(!code.contains("#include"), "{name}");
    assert!(
        code.contains(&format!(
            "extern \"C\" __global__ void __launch_bounds__({}, 1) {name}(",
            spec.threads()
        )),
        "{name}"
    );
    assert!(
        !code.contains("{{") && !code.contains("{%"),
        "{name}: unrendered"
    );
    let statements = code.lines().filter(|l| !l.trim_start().starts_with("//"));
    for line in statements {
        assert!(
            !line.contains("__trap") && !line.contains("atomicAdd"),
            "{name}: {line}"
        );
    }
    assert_eq!(
        code.matches("rj_ar_barrier<kRanks>(").count(),
        barriers,
        "{name}"
    );
    assert_eq!(
        spec.render().unwrap().code,
        code,
        "{name}: not deterministic"
    );
    snapshot!(format!("{name}.cu"), code.as_str());

    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let jit = Jit::with_target(
        Target {
            arch: Arch::SM90,
            output: Output::Ptx,
        },
        CompileCache::in_memory(),
    );
    let compiled = jit.compile(&spec).unwrap_or_else(|e| panic!("{name}: {e}"));
    let ptx = compiled.artifact.ptx().unwrap();
    assert!(ptx.contains(&format!(".entry {name}(")), "{name}");
    assert!(!ptx.contains(".local"), "{name}: local memory");
    assert!(
        !ptx.contains("trap"),
        "{name}: a trap would poison the context"
    );
    // One release store and one acquire spin per barrier; the timer read before
    // and inside each spin; the error word written with a relaxed system store.
    for (instruction, count) in [
        ("st.release.sys.global.u32", barriers),
        ("ld.acquire.sys.global.u32", barriers),
        ("%globaltimer", 2 * barriers),
        ("st.relaxed.sys.global.u32", barriers),
        ("bar.red.and.pred", barriers),
        (
            "cp.async.cg.shared.global",
            if cp_async { 2 * spec.world as usize } else { 0 },
        ),
    ] {
        assert_eq!(
            ptx.matches(instruction).count(),
            count,
            "{name}: how often the PTX has {instruction:?}"
        );
    }
    // Peer data moves in 16-byte packs.
    assert!(ptx.contains("ld.global.v4.u32"), "{name}");
    assert!(ptx.contains("st.global.v4.u32"), "{name}");
    let text = format!(
        "// spec: {name}  nvrtc: {}  target: sm_90 ptx\n{ptx}",
        nvrtc.version_string()
    );
    snapshot!(format!("{name}.sm_90.ptx"), text);
}

#[test]
fn one_shot_bf16_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_bf16_sum_oneshot", 2, false);
}

#[test]
fn two_stage_bf16_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_bf16_sum_twostage", 2, false);
}

#[test]
fn two_stage_cp_async_bf16_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_bf16_sum_twostage_cpasync", 2, true);
}
