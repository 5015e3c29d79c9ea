//! Snapshots of the all-reduce kernels, reviewed like code: the CUDA source and
//! the sm_90 PTX (pinned NVRTC) of the one-shot, two-stage and cp.async
//! two-stage kernels for 4 bf16 ranks. Invariants are checked before each
//! snapshot: the barrier's release/acquire pairs, the bounded spin, no trap, no
//! local memory, 16-byte peer loads, cp.async only where asked for.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test
//! all_reduce_snapshots`, then read the diff.

#[macro_use]
mod common;

use redjit::AllReduceSpec;

/// Snapshots kernel `name`'s source and sm_90 PTX after the checks every
/// all-reduce kernel passes (no trap, no atomicAdd, no local memory) and the
/// kernel's own (`source`, `ptx`).
fn snapshot_kernel(name: &str, source: impl Fn(&str), ptx_checks: impl Fn(&str)) {
    let spec: AllReduceSpec = name.parse().unwrap();
    let code = common::checked_source(
        &spec,
        &format!(
            "extern \"C\" __global__ void __launch_bounds__({}, 1) {name}(",
            spec.threads()
        ),
    );
    let statements = code.lines().filter(|l| !l.trim_start().starts_with("//"));
    for line in statements {
        assert!(
            !line.contains("__trap") && !line.contains("atomicAdd"),
            "{name}: {line}"
        );
    }
    source(&code);
    snapshot!(format!("{name}.cu"), code.as_str());

    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let ptx = common::sm90_ptx(&spec);
    assert!(!ptx.contains(".local"), "{name}: local memory");
    assert!(
        !ptx.contains("trap"),
        "{name}: a trap would poison the context"
    );
    ptx_checks(&ptx);
    snapshot!(
        format!("{name}.sm_90.ptx"),
        common::ptx_snapshot_text(name, &nvrtc.version_string(), &ptx)
    );
}

/// A kernel with signal barriers: `barriers` of them, cp.async where asked.
fn check_and_snapshot(name: &str, barriers: usize, cp_async: bool) {
    let world = name.parse::<AllReduceSpec>().unwrap().world as usize;
    snapshot_kernel(
        name,
        |code| {
            assert_eq!(
                code.matches("rj_ar_barrier<kRanks>(").count(),
                barriers,
                "{name}"
            );
        },
        |ptx| {
            // One release store and one acquire spin per barrier; the timer
            // read before and inside each spin; the error word written with a
            // relaxed system store.
            let counts = [
                ("st.release.sys.global.u32", barriers),
                ("ld.acquire.sys.global.u32", barriers),
                ("%globaltimer", 2 * barriers),
                ("st.relaxed.sys.global.u32", barriers),
                ("bar.red.and.pred", barriers),
                (
                    "cp.async.cg.shared.global",
                    if cp_async { 2 * world } else { 0 },
                ),
            ];
            common::assert_instruction_counts(name, ptx, &counts);
            // Peer data moves in 16-byte packs.
            assert!(ptx.contains("ld.global.v4.u32"), "{name}");
            assert!(ptx.contains("st.global.v4.u32"), "{name}");
        },
    );
}

#[test]
fn one_shot_bf16_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_bf16_sum_oneshot", 2, false);
}

#[test]
fn push_bf16_source_and_ptx() {
    // One barrier: the buffer sets alternate instead of an end barrier.
    check_and_snapshot("all_reduce_r4_bf16_sum_push", 1, false);
}

#[test]
fn two_stage_bf16_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_bf16_sum_twostage", 2, false);
}

#[test]
fn two_stage_cp_async_bf16_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_bf16_sum_twostage_cpasync", 2, true);
}

#[test]
fn one_shot_quantized_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_f32_sum_oneshot_q_bf16_sr", 2, false);
}

#[test]
fn two_stage_quantized_source_and_ptx() {
    check_and_snapshot("all_reduce_r4_f32_sum_twostage_q_bf16_sr", 2, false);
}

#[test]
fn push_ll_bf16_source_and_ptx() {
    // No barrier: each line's flags are the signal.
    let name = "all_reduce_r4_bf16_sum_pushll";
    snapshot_kernel(
        name,
        |code| {
            assert_eq!(code.matches("rj_ar_barrier<kRanks>(").count(), 0);
            assert!(code.contains("rj_st_volatile_b128(ll.p[q]"), "{name}");
        },
        |ptx| {
            // No fence, no release or acquire: the lines are stored and polled
            // volatile, 16 bytes at a time (two lines a pack for each rank of
            // the unrolled loop, the own one skipped at run time), and the spin
            // is bounded (the timer read before and inside it, the error word
            // written with a relaxed system store, once per unrolled rank).
            let counts = [
                ("st.release.sys.global.u32", 0),
                ("ld.acquire.sys.global.u32", 0),
                ("bar.red.and.pred", 0),
                ("fence", 0),
                ("membar", 0),
                ("st.volatile.global.v4.u32", 8),
                ("st.relaxed.sys.global.u32", 4),
            ];
            common::assert_instruction_counts(name, ptx, &counts);
            assert!(ptx.contains("ld.volatile.global.v4.u32"), "{name}");
            assert!(ptx.contains("%globaltimer"), "{name}");
        },
    );
}
