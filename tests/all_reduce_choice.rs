//! The algorithm-choice table: boundaries of the H200 tuning table's rows (2
//! and 4 ranks measured, the rest the unmeasured ladder), the NCCL hand-over
//! for copied inputs, forced tables, the REDJIT_AR_ALGO override and its
//! typed error, worlds outside 2..=8, and tables without rows. Pure CPU.

use redjit::AllReduceAlgo;
use redjit::all_reduce::choice::{AlgoTable, Choice, NARROW_BLOCKS, Thresholds, parse_forced};
use redjit::codegen::tuning::Tuning;

/// The H200 table's choice: what a communicator on H200s takes by default.
fn h200() -> AlgoTable {
    AlgoTable::for_tuning(&Tuning::shipped("h200").unwrap())
}

#[test]
fn the_h200_table_has_the_documented_shape() {
    let t = h200();
    // 2 and 4 ranks measured, 3 and 5..8 not: the table as a whole is not.
    assert!(!t.measured);
    assert!(
        t.source
            .contains("h200 -> h100-sxm: 2, 4 rank(s) from its rows"),
        "{}",
        t.source
    );
    assert!(t.source.contains("unmeasured ladder"), "{}", t.source);
    // The other worlds take the ladder's rows.
    let ladder = AlgoTable::ladder();
    for w in [3usize, 5, 6, 7, 8] {
        assert_eq!(t.rows[w - 2], ladder.rows[w - 2], "{w}");
    }
    assert_eq!(AlgoTable::default(), ladder);
    // Two ranks (measured on 2 x H200): LL push up to 256 KB, push up to 8 MB,
    // and up to 16 MB for a copied input (the push kernel reads it in place);
    // one-shot above.
    for bytes in [0, 16, 64 << 10, 256 << 10] {
        assert_eq!(t.choose(2, bytes).unwrap(), Choice::PUSH_LL, "{bytes}");
        assert_eq!(t.choose_for(2, bytes, true).unwrap(), Choice::PUSH_LL);
    }
    for bytes in [(256 << 10) + 1, 1 << 20, 8 << 20] {
        assert_eq!(t.choose(2, bytes).unwrap(), Choice::PUSH, "{bytes}");
        assert_eq!(
            t.choose_for(2, bytes, true).unwrap(),
            Choice::PUSH,
            "{bytes}"
        );
    }
    for bytes in [(8 << 20) + 1, 16 << 20, 64 << 20, usize::MAX] {
        assert_eq!(t.choose(2, bytes).unwrap(), Choice::ONE_SHOT, "{bytes}");
    }
    assert_eq!(t.choose_for(2, 16 << 20, true).unwrap(), Choice::PUSH);
    assert_eq!(
        t.choose_for(2, (16 << 20) + 1, true).unwrap(),
        Choice::ONE_SHOT
    );
    // NCCL only where the communicator has it, and for two ranks only for
    // copied inputs from 128 MB.
    use redjit::all_reduce::choice::Route;
    assert_eq!(t.route_for(2, 128 << 20, true, true).unwrap(), Route::Nccl);
    assert_eq!(
        t.route_for(2, (128 << 20) - 1, true, true).unwrap(),
        Route::Kernel(Choice::ONE_SHOT)
    );
    assert_eq!(
        t.route_for(2, 12 << 20, true, true).unwrap(),
        Route::Kernel(Choice::PUSH)
    );
    assert_eq!(
        t.route_for(2, 12 << 20, true, false).unwrap(),
        Route::Kernel(Choice::ONE_SHOT)
    );
    assert_eq!(
        t.route_for(2, 1 << 30, true, false).unwrap(),
        Route::Kernel(Choice::ONE_SHOT)
    );
    assert_eq!(
        t.route_for(2, 1 << 30, false, true).unwrap(),
        Route::Kernel(Choice::ONE_SHOT)
    );
    assert_eq!(
        t.route(2, 1 << 30, true).unwrap(),
        Route::Kernel(Choice::ONE_SHOT)
    );
    for world in [3, 5, 6, 7, 8] {
        assert_eq!(
            t.route_for(world, 1 << 30, true, true).unwrap(),
            Route::Kernel(Choice::CP_ASYNC)
        );
    }
    // Four ranks (measured on 4 x H200): LL push up to 32 KB, push up to
    // 256 KB, two-stage above, cp.async from 4 MB; NCCL from 256 MB where the
    // communicator has it, from 16 MB for copied inputs.
    for copied in [false, true] {
        assert_eq!(t.choose_for(4, 1, copied).unwrap(), Choice::PUSH_LL);
        assert_eq!(t.choose_for(4, 32 << 10, copied).unwrap(), Choice::PUSH_LL);
        assert_eq!(
            t.choose_for(4, (32 << 10) + 1, copied).unwrap(),
            Choice::PUSH
        );
    }
    assert_eq!(t.choose(4, 256 << 10).unwrap(), Choice::PUSH);
    assert_eq!(t.choose_for(4, 256 << 10, true).unwrap(), Choice::PUSH);
    for copied in [false, true] {
        for bytes in [(256 << 10) + 1, 1 << 20, (4 << 20) - 1] {
            let c = t.choose_for(4, bytes, copied).unwrap();
            assert_eq!(c, Choice::TWO_STAGE, "{bytes} {copied}");
        }
        for bytes in [4 << 20, 16 << 20, 1 << 30] {
            let c = t.choose_for(4, bytes, copied).unwrap();
            assert_eq!(c, Choice::CP_ASYNC, "{bytes} {copied}");
        }
    }
    assert_eq!(t.route(4, 256 << 20, true).unwrap(), Route::Nccl);
    assert_eq!(
        t.route(4, (256 << 20) - 1, true).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    assert_eq!(
        t.route(4, 256 << 20, false).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    assert_eq!(t.route_for(4, 16 << 20, true, true).unwrap(), Route::Nccl);
    assert_eq!(
        t.route_for(4, (16 << 20) - 1, true, true).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    for (world, one_shot_max) in [(3, 512 << 10), (5, 256 << 10), (8, 256 << 10)] {
        assert_eq!(t.choose(world, one_shot_max).unwrap(), Choice::ONE_SHOT);
        assert_eq!(
            t.choose(world, one_shot_max + 1).unwrap(),
            Choice::TWO_STAGE
        );
        assert_eq!(t.choose(world, (8 << 20) - 1).unwrap(), Choice::TWO_STAGE);
        assert_eq!(t.choose(world, 8 << 20).unwrap(), Choice::CP_ASYNC);
        assert_eq!(
            t.choose(world, 8 << 20).unwrap().algo,
            AllReduceAlgo::TwoStage
        );
    }
}

/// 4 ranks' cp.async two-stage calls up to 16 MB run on fewer blocks; no
/// other world, size or kernel does, nor a forced table.
#[test]
fn the_table_narrows_four_ranks_cp_async_calls_to_16_mb() {
    const MB: usize = 1 << 20;
    let t = h200();
    assert_eq!(t.narrow(4, 4 * MB, Choice::CP_ASYNC), Some(NARROW_BLOCKS));
    assert_eq!(t.narrow(4, 16 * MB, Choice::CP_ASYNC), Some(NARROW_BLOCKS));
    assert_eq!(t.narrow(4, 16 * MB + 1, Choice::CP_ASYNC), None);
    assert_eq!(t.narrow(4, 16 * MB, Choice::TWO_STAGE), None);
    for world in [2, 3, 5, 8] {
        assert_eq!(t.narrow(world, 16 * MB, Choice::CP_ASYNC), None, "{world}");
    }
    assert_eq!(t.narrow(1, MB, Choice::CP_ASYNC), None);
    assert_eq!(t.narrow(9, MB, Choice::CP_ASYNC), None);
    assert_eq!(
        AlgoTable::always(Choice::CP_ASYNC).narrow(4, MB, Choice::CP_ASYNC),
        None
    );
}

#[test]
fn the_fused_norm_takes_the_push_path_to_2_mb_on_two_ranks_only() {
    const MB: usize = 1 << 20;
    let t = h200();
    assert!(t.fused_push(2, MB));
    assert!(t.fused_push(2, 2 * MB));
    assert!(!t.fused_push(2, 2 * MB + 1));
    // Not measured at 4 ranks: one-shot there.
    assert!(!t.fused_push(4, MB));
    assert!(!t.fused_push(1, MB) && !t.fused_push(9, MB));
    assert!(AlgoTable::always(Choice::PUSH).fused_push(4, 64 * MB));
    assert!(!AlgoTable::always(Choice::ONE_SHOT).fused_push(2, MB));
}

#[test]
fn worlds_outside_the_table_are_errors() {
    let t = h200();
    for world in [0, 1, 9] {
        let e = t.choose(world, 1024).unwrap_err().to_string();
        assert!(
            e.contains(&format!("world {world}: the table covers 2..=8 ranks")),
            "{e}"
        );
    }
}

#[test]
fn tables_can_be_forced_or_replaced() {
    for c in [
        Choice::ONE_SHOT,
        Choice::TWO_STAGE,
        Choice::CP_ASYNC,
        Choice::PUSH,
        Choice::PUSH_LL,
    ] {
        let t = AlgoTable::always(c);
        for world in 2..=8 {
            for bytes in [0, 1, 4096, 1 << 30] {
                assert_eq!(t.choose(world, bytes).unwrap(), c, "{c:?} {world} {bytes}");
            }
        }
    }
    let mut t = h200();
    t.rows[6] = Thresholds {
        ll_max: None,
        push_max: None,
        push_max_copied: None,
        one_shot_max: Some(1024),
        cp_async_min: None,
        narrow_max: None,
        fused_push_max: None,
    };
    assert_eq!(t.choose(8, 1025).unwrap(), Choice::TWO_STAGE);
    assert_eq!(t.choose(8, 1 << 30).unwrap(), Choice::TWO_STAGE);
}

#[test]
fn the_environment_override_parses_or_names_the_choices() {
    assert_eq!(parse_forced("oneshot").unwrap(), Choice::ONE_SHOT);
    assert_eq!(parse_forced(" TwoStage ").unwrap(), Choice::TWO_STAGE);
    assert_eq!(parse_forced("cpasync").unwrap(), Choice::CP_ASYNC);
    assert_eq!(parse_forced("push").unwrap(), Choice::PUSH);
    assert_eq!(parse_forced("PushLL").unwrap(), Choice::PUSH_LL);
    let e = parse_forced("ring").unwrap_err().to_string();
    assert!(
        e.contains(
            "REDJIT_AR_ALGO=\"ring\": expected one of: oneshot, twostage, cpasync, push, pushll"
        ),
        "{e}"
    );
    // Without the variable set, with_env keeps the table (this test never sets it:
    // tests share the process environment).
    if std::env::var_os("REDJIT_AR_ALGO").is_none() {
        assert_eq!(h200().with_env().unwrap(), h200());
    }
}

#[test]
fn a_table_without_rows_takes_the_ladder_and_a_row_replaces_its_world() {
    // A table without all-reduce rows (and no base): every world the ladder's.
    let bare = "[device]\nname = \"X\"\narch = \"sm_90\"\nsms = 132\nl2_mib = 60\n";
    let bare = redjit::codegen::tuning::parse_table("bare.toml", bare).unwrap();
    let bare = AlgoTable::for_tuning(&Tuning::resolve(bare).unwrap());
    assert_eq!(bare.rows, AlgoTable::ladder().rows);
    assert!(
        !bare.measured && bare.source.contains("no all-reduce rows"),
        "{}",
        bare.source
    );
    // The H100 table borrows the H200's measured rows (not measured on H100s).
    let h100 = AlgoTable::for_tuning(&Tuning::shipped("h100-sxm").unwrap());
    assert_eq!(
        (h100.rows[0], h100.rows[2]),
        (h200().rows[0], h200().rows[2])
    );
    // A user table's row for 8 ranks.
    let text = "base = \"h200\"\n[device]\nname = \"X\"\narch = \"sm_90\"\nsms = 132\nl2_mib = 60\n\n[[all_reduce]]\nworld = 8\none_shot_max = \"1M\"\nnccl_min = \"64M\"\nreason = \"r\"\n";
    let t = redjit::codegen::tuning::parse_table("u.toml", text).unwrap();
    let t = AlgoTable::for_tuning(&Tuning::resolve(t).unwrap());
    assert_eq!(t.choose(8, 1 << 20).unwrap(), Choice::ONE_SHOT);
    assert_eq!(t.choose(8, (1 << 20) + 1).unwrap(), Choice::TWO_STAGE);
    assert_eq!(t.nccl_min[6], Some(64 << 20));
    // Its base's rows still apply.
    assert_eq!(t.choose(2, 64 << 10).unwrap(), Choice::PUSH_LL);
}
