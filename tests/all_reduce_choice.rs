//! The algorithm-choice table: boundaries of the default table (its 2-rank
//! row measured, the rest marked unmeasured), the NCCL hand-over for copied
//! inputs, forced tables, the REDJIT_AR_ALGO override and its
//! typed error, worlds outside 2..=8. Pure CPU.

use redjit::AllReduceAlgo;
use redjit::all_reduce::choice::{AlgoTable, Choice, NARROW_BLOCKS, Thresholds, parse_forced};

#[test]
fn the_default_table_has_the_documented_shape() {
    let t = AlgoTable::placeholder();
    // 2 ranks measured, 3..8 not: the table as a whole is not.
    assert!(!t.measured);
    assert!(t.source.contains("2 ranks measured"), "{}", t.source);
    assert!(t.source.contains("4 ranks on 4 x H200"), "{}", t.source);
    assert!(t.source.contains("UNMEASURED"), "{}", t.source);
    assert_eq!(AlgoTable::default(), t);
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
    let t = AlgoTable::placeholder();
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
fn worlds_outside_the_table_are_errors() {
    let t = AlgoTable::placeholder();
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
    let mut t = AlgoTable::placeholder();
    t.rows[6] = Thresholds {
        ll_max: None,
        push_max: None,
        push_max_copied: None,
        one_shot_max: Some(1024),
        cp_async_min: None,
        narrow_max: None,
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
        assert_eq!(
            AlgoTable::placeholder().with_env().unwrap(),
            AlgoTable::placeholder()
        );
    }
}
