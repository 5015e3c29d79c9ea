//! Snapshots of generated norm code, reviewed like code: the CUDA source and
//! the sm_90 PTX (pinned NVRTC) of the online softmax and the RMS norm over bf16
//! rows of 4096 (issue 11's pair, block layout), and the sources of a split-row
//! layer norm with the fused residual and of the deferred split-row softmax
//! (`_p`), the long rows' default, and the loop layout's layer norm with
//! the residual (source and PTX). Invariants are checked before each
//! snapshot so a snapshot never records broken output.
//!
//! Update after an intended change: `INSTA_UPDATE=always cargo test --test
//! norm_snapshots`, then read the diff.

#[macro_use]
mod common;

use redjit::{KernelSpec, NormSpec};

fn source_of(name: &str, must: &[&str]) -> NormSpec {
    let spec: NormSpec = name.parse().unwrap();
    let code = common::checked_source(
        &spec,
        &format!(
            "extern \"C\" __global__ void __launch_bounds__({}, {}) {name}(",
            spec.threads(),
            spec.min_blocks()
        ),
    );
    // No float atomics: the split layout's only atomics are u32 tickets.
    assert!(
        !code.contains("atomicAdd") && !code.contains(".add.f32"),
        "{name}"
    );
    for m in must {
        assert!(code.contains(m), "{name}: lacks {m:?}");
    }
    snapshot!(format!("{name}.cu"), code.as_str());
    spec
}

fn ptx_of(spec: &NormSpec, counts: &[(&str, usize)]) {
    let Some(nvrtc) = common::nvrtc_or_skip() else {
        return;
    };
    let name = spec.name();
    let ptx = common::sm90_ptx(spec);
    // A block per row: no atomics, no local memory.
    assert_eq!(ptx.matches("atom.").count(), 0, "{name}: atomics");
    assert!(!ptx.contains(".local"), "{name}: local memory");
    common::assert_instruction_counts(&name, &ptx, counts);
    snapshot!(
        format!("{name}.sm_90.ptx"),
        common::ptx_snapshot_text(&name, &nvrtc.version_string(), &ptx)
    );
}

#[test]
fn online_softmax_bf16_source_and_ptx() {
    let spec = source_of(
        "norm_softmax_online_bf16_bf16_b256x4",
        &[
            "typedef rj_norm_softmax<true, false> Op;",
            "rj_red_row_block<kThreads, true>(r == blockIdx.x)",
        ],
    );
    ptx_of(
        &spec,
        &[
            // 4 packs of 8 bytes a thread, read-only path, one load each; stores
            // likewise (the element path is the rest).
            ("ld.global.nc.v2.u32", 4),
            ("st.global.v2.u32", 4),
            // One reduction of (max, sum) pairs: 5 warp levels + 3 over 8 warps,
            // two words each.
            ("shfl.sync.bfly.b32", 2 * (5 + 3)),
        ],
    );
}

#[test]
fn rmsnorm_bf16_source_and_ptx() {
    let spec = source_of(
        "norm_rmsnorm_bf16_bf16_b256x4",
        &["typedef rj_norm_rms_t<T> Op;", "rj_rsqrt_rn"],
    );
    ptx_of(
        &spec,
        &[
            // The row's 4 packs and the weight's 4.
            ("ld.global.nc.v2.u32", 8),
            ("st.global.v2.u32", 4),
            ("shfl.sync.bfly.b32", 5 + 3),
            ("sqrt.rn.f32", 1),
        ],
    );
}

#[test]
fn split_layernorm_residual_source() {
    source_of(
        "norm_layernorm_res_bf16_bf16_s512x8",
        &[
            "rj_red_split_counted<kThreads> red{counters + 4 + r * 8",
            "rj_acc_bf16::round",
            "rj_atom_add_acq_rel(counters, 1u)",
        ],
    );
}

#[test]
fn one_pass_flagged_split_twin_source() {
    // 4x1000003's RMS norm + residual: one pass, each block's state published
    // with the launch's flag and the row's read over the warps; the epoch
    // loaded beside the first ticket, advanced by the last; the row held as
    // raw 16-bit words in 16-byte pairs, h stored before the exchange.
    source_of(
        "norm_rmsnorm_res_bf16_bf16_s512x8_o2_g",
        &[
            "const rj_red_split<kThreads, false> red{row_slots + (rj_u64)split * slot_bytes, {row_slots, splits, slot_bytes, flag}};",
            "if (threadIdx.x == 0 && item == items + gridDim.x - 1) rj_launch_done(counters, flag);",
            "rj_row_ld_raw<T, kPacks, RowLoad>(resr, c, vec, res);",
            "rj_row_st_raw<T, kPacks>(rout, c, vec, h);",
            "op.row_raw(h, c, red, leader, rj_out_stored<TO, decltype(c)>{outr, c, vec});",
            // Paired packs: 16-byte accesses, chunks on the 8-element grid.
            "rj_chunk<kLanes, kWhole, true, false, false, 2>",
            "% 8 == shift",
        ],
    );
}

#[test]
fn raw_layer_norm_split_twin_source() {
    // 4x1000003's bf16 layer norm: one pass over a row of raw 16-bit words in
    // 16-byte pairs, the Welford states flagged; of one wave, an item a block
    // from its index (a cooperative launch), else the ticket, taken relaxed
    // beside the epoch's load.
    source_of(
        "norm_layernorm_bf16_bf16_s512x8_o2_g",
        &[
            "rj_u32 h[kPacks][T::kWords];",
            "rj_row_ld_raw<T, kPacks, RowLoad>(xr, c, vec, h);",
            "op.row_raw(h, c, red, leader, rj_out_stored<TO, decltype(c)>{outr, c, vec});",
            "const bool one_wave = gridDim.x == items;",
            "item_s = rj_atom_add_relaxed(counters, 1u);",
            "rj_chunk<kLanes, kWhole, true, false, false, 2>",
        ],
    );
}

#[test]
fn two_pass_split_ticket_ahead_source() {
    // 4x1000003's f32 layer norm: two passes from one ticket, the next
    // ticket's add in flight through each item, the tickets in two shared
    // words by turn.
    source_of(
        "norm_layernorm_f32_f32_s512x4_o2_g",
        &[
            "__shared__ rj_u32 ticket_s[2], epoch_s;",
            "const rj_u64 ticket = ticket_s[i];",
            "if (threadIdx.x == 0) next = rj_atom_add_relaxed(counters, 1u);",
            "if (threadIdx.x == 0) ticket_s[i ^ 1u] = next;",
            "ticket == 2 * items + gridDim.x - 1",
        ],
    );
}

#[test]
fn deferred_split_softmax_source() {
    // The long-row default of 16-bit softmax: three staged rows, the row's
    // states published with the launch's flag, the row before merged from
    // them, and the epoch advanced by the last block to leave.
    source_of(
        "norm_softmax_online_bf16_bf16_s512x8_p",
        &[
            "const rj_u32 kBuffer = 1 * kSlots;",
            "typedef rj_red_fetch<kThreads, 1, 1> Fetch;",
            "rj_red_publish<kThreads>{row_slots + (rj_u64)split * slot_bytes, flag}",
            "fetch.wait(Op::Split(), early);",
            "rj_cp_async_wait<1>();",
            "== 2 * gridDim.x - 1",
        ],
    );
}

#[test]
fn two_pass_split_twin_source() {
    // A long row's 16-bit layer norm + residual of 4 packs off the pack grid
    // (the defaults hold 8 as raw words): it publishes every chunk's state,
    // then loads each chunk again and finishes it, from one ticket; the
    // residual's sum is stored by the first pass only.
    source_of(
        "norm_layernorm_res_bf16_bf16_s512x4_o2_g",
        &[
            "typedef rj_red_fetch_wide<kThreads> Fetch;",
            "const bool finish = ticket >= items;",
            "rj_red_publish<kThreads>{row_slots + (rj_u64)split * slot_bytes, flag}",
            "fetch.wait(Op::Split(), fetch.ask(Op::Split(), true));",
            "if (!Red::kApply) rj_row_st<T, kPacks>(rout, c, vec, x);",
            "ticket == 2 * items + gridDim.x - 1",
            // Paired packs (a residual norm); the tickets in turn (it spilled
            // with them ahead).
            "rj_chunk<kLanes, kWhole, true, false, false, 2>",
            "if (threadIdx.x == 0) ticket_s = rj_atom_add_relaxed(counters, 1u);",
        ],
    );
}

#[test]
fn loop_layernorm_residual_source_and_ptx() {
    // A block going over its row twice: the first pass merges each thread's
    // chunk states and stores the residual's sum, one block reduction, then
    // the chunks again from the last, loading that sum back and storing the
    // output only.
    let spec = source_of(
        "norm_layernorm_res_bf16_bf16_l512x4",
        &[
            "const rj_red_running<Op::Split> running{};",
            "rj_block_reduce<kThreads>(Op::Split(), running.total)",
            "for (rj_u32 k = chunks; k-- > 0;)",
            "rj_row_ld<T, kPacks, rj_load_plain>(rout, c, vec, 0.0f, x);",
            "if constexpr (!Red::kApply) {",
        ],
    );
    ptx_of(
        &spec,
        &[
            // x and the residual (4 packs each) in the first pass, the weight
            // and bias in the second (the read-only path); the residual's sum
            // stored in the first pass and loaded back (coherently) in the
            // second, the output stored in the second.
            ("ld.global.nc.v2.u32", 4 * 2 + 4 * 2),
            ("ld.global.v2.u32", 4),
            ("st.global.v2.u32", 4 + 4),
        ],
    );
}

#[test]
fn exact_layernorm_f32_source_and_ptx() {
    // Layer norm's exact block kernel stores each pack as it makes it, the
    // next packs' weight and bias loaded ahead; its packs are addressed from
    // one base (with a 64-bit address a pack it spilled).
    let spec = source_of(
        "norm_layernorm_f32_f32_b512x16_x",
        &[
            "typedef rj_chunk<kLanes, true, false, true, true> Chunk;",
            "op.row(x, c, red, leader, rj_out_stored<TO, Chunk>{outr, c, vec});",
        ],
    );
    assert!(spec.stores_each_pack());
    ptx_of(
        &spec,
        &[
            // x's 16 packs, then the weight's and bias's; the output's.
            ("ld.global.nc.v4.u32", 16 + 2 * 16),
            ("st.global.v4.u32", 16),
        ],
    );
    if common::nvrtc_or_skip().is_some() {
        // Stores begin before the last weight and bias loads.
        let ptx = common::sm90_ptx(&spec);
        let first_store = ptx.find("st.global.v4.u32").unwrap();
        let last_load = ptx.rfind("ld.global.nc.v4.u32").unwrap();
        assert!(first_store < last_load, "every load before the first store");
    }
}
