//! The all-reduce signal barrier (prelude/peer.cuh), modelled on the CPU: 2, 4
//! and 8 ranks, one-shot, two-stage, hierarchical (one host's kernels with
//! the in-place NCCL step between), push and LL calls, and the fused
//! two-stage all-reduce + norm with its per-rank call count (each alone, and
//! mixed with the others), thousands of random interleavings
//! each (deterministic seeds), counters crossing 2^32, a rank that never
//! arrives, blocks sitting calls out (grids that follow the message's size);
//! and four broken variants the model must catch, so a pass means something.
//! Pure CPU.

use redjit::all_reduce::protocol::{
    BarrierKind, Grid, ModelConfig, Outcome, Shape, run, takes_part,
};

const SEEDS: u64 = 400;

/// Every call shape the kernels have, and the mixed push, LL and fused
/// sequences.
const SHAPES: [Shape; 9] = [
    Shape::OneShot,
    Shape::TwoStage,
    Shape::Hierarchical,
    Shape::Push,
    Shape::PushMixed,
    Shape::PushLl,
    Shape::LlMixed,
    Shape::FusedTwoStage,
    Shape::FusedMixed,
];

fn completes(cfg: &ModelConfig, seeds: std::ops::Range<u64>) {
    for seed in seeds {
        match run(cfg, seed) {
            Outcome::Completed { .. } => {}
            other => panic!("{cfg:?} seed {seed}: {other:?}"),
        }
    }
}

#[test]
fn every_interleaving_tried_completes_with_correct_data() {
    for ranks in [2, 4, 8] {
        for shape in SHAPES {
            let cfg = ModelConfig::new(ranks, 2, 6, shape);
            completes(&cfg, 0..SEEDS);
        }
    }
}

#[test]
fn blocks_sitting_out_calls_alike_on_every_rank_are_harmless() {
    for ranks in [2, 4, 8] {
        for shape in SHAPES {
            let cfg = ModelConfig {
                grid: Grid::Varying,
                ..ModelConfig::new(ranks, 3, 8, shape)
            };
            completes(&cfg, 0..SEEDS);
            // Some block did sit a call out, and some call had more than one.
            let parts: Vec<bool> = (0..cfg.calls)
                .flat_map(|call| (1..cfg.blocks).map(move |b| (call, b)))
                .map(|(call, b)| takes_part(&cfg, 0, call, b))
                .collect();
            assert!(parts.contains(&true) && parts.contains(&false), "{parts:?}");
        }
    }
}

#[test]
fn ranks_disagreeing_on_a_calls_grid_are_caught() {
    for shape in SHAPES {
        let caught = (0..SEEDS / 4)
            .filter(|&seed| {
                let cfg = ModelConfig {
                    grid: Grid::VaryingPerRank,
                    timeout_polls: 2000,
                    ..ModelConfig::new(2, 3, 8, shape)
                };
                !matches!(run(&cfg, seed), Outcome::Completed { .. })
            })
            .count();
        assert!(caught > 0, "{shape:?} with per-rank grids: went unnoticed");
    }
}

#[test]
fn counters_crossing_the_wrap_around_are_harmless() {
    for ranks in [2, 4, 8] {
        for shape in SHAPES {
            for initial in [u32::MAX - 3, u32::MAX - 2, u32::MAX] {
                let cfg = ModelConfig {
                    initial_counter: initial,
                    ..ModelConfig::new(ranks, 2, 4, shape)
                };
                completes(&cfg, 0..SEEDS / 4);
            }
        }
    }
}

#[test]
fn a_rank_that_never_arrives_gives_timeouts_not_a_hang() {
    for ranks in [2, 4, 8] {
        for shape in SHAPES {
            for absent in [0, ranks - 1] {
                let cfg = ModelConfig {
                    absent: Some(absent),
                    timeout_polls: 200,
                    ..ModelConfig::new(ranks, 2, 3, shape)
                };
                for seed in 0..SEEDS / 8 {
                    match run(&cfg, seed) {
                        Outcome::TimedOut { errors, .. } => {
                            // Every present rank reports, each for the absent rank at
                            // the start barrier (nobody got past it), or waiting
                            // for its lines in a first LL call.
                            let kind = match shape {
                                Shape::PushLl | Shape::LlMixed => BarrierKind::Data,
                                _ => BarrierKind::Start,
                            };
                            assert_eq!(errors.len(), ranks as usize - 1, "{errors:?}");
                            for (rank, e) in errors {
                                assert_ne!(rank, absent);
                                assert_eq!(e.kind, kind, "{e}");
                                assert_eq!(e.peer, absent, "{e}");
                            }
                        }
                        other => panic!("{cfg:?} seed {seed}: {other:?}"),
                    }
                }
            }
        }
    }
}

#[test]
fn one_flag_slot_is_caught_hanging() {
    // A fast rank's next barrier overwrites the value a slow rank still waits
    // for: the slow rank spins until its timeout.
    let mut caught = 0;
    for seed in 0..SEEDS {
        let cfg = ModelConfig {
            slots: 1,
            timeout_polls: 2000,
            ..ModelConfig::new(2, 1, 6, Shape::OneShot)
        };
        match run(&cfg, seed) {
            Outcome::Completed { .. } => {}
            Outcome::TimedOut { .. } => caught += 1,
            Outcome::Violation(v) => panic!("one slot should hang, not pass early: {v}"),
        }
    }
    assert!(caught > 0, "no interleaving exposed the single-slot hang");
}

#[test]
fn every_barrier_left_out_is_caught_reading_wrong_data() {
    for (shape, omit) in [
        (Shape::OneShot, BarrierKind::Start),
        (Shape::OneShot, BarrierKind::End),
        (Shape::TwoStage, BarrierKind::Start),
        (Shape::TwoStage, BarrierKind::Middle),
        (Shape::Hierarchical, BarrierKind::Start),
        (Shape::Hierarchical, BarrierKind::Middle),
        (Shape::Push, BarrierKind::Start),
        (Shape::FusedTwoStage, BarrierKind::Start),
        (Shape::FusedTwoStage, BarrierKind::Middle),
        (Shape::FusedMixed, BarrierKind::Middle),
    ] {
        let caught = (0..SEEDS)
            .filter(|&seed| {
                let cfg = ModelConfig {
                    omit: Some(omit),
                    ..ModelConfig::new(4, 1, 6, shape)
                };
                matches!(run(&cfg, seed), Outcome::Violation(_))
            })
            .count();
        assert!(caught > 0, "{shape:?} without {omit:?}: went unnoticed");
    }
}

#[test]
fn one_push_set_is_caught_reading_the_next_call() {
    // Without the alternation, a fast rank writes its next call's input into a
    // region a slow peer has not read yet; with blocks sitting calls out too.
    for (shape, grid) in [
        (Shape::Push, Grid::Fixed),
        (Shape::PushMixed, Grid::Fixed),
        (Shape::Push, Grid::Varying),
        (Shape::PushMixed, Grid::Varying),
    ] {
        let caught = (0..SEEDS)
            .filter(|&seed| {
                let cfg = ModelConfig {
                    push_sets: 1,
                    grid,
                    ..ModelConfig::new(2, 2, 8, shape)
                };
                matches!(run(&cfg, seed), Outcome::Violation(_))
            })
            .count();
        assert!(
            caught > 0,
            "{shape:?} {grid:?} with one push set: went unnoticed"
        );
    }
}

#[test]
fn one_ll_set_is_caught() {
    // Without the alternation, a fast rank stores its next call's lines over
    // ones a slow peer has not read: the peer reads the next call's data under
    // a flag it takes for this call's (c even: c | 1 == (c + 1) | 1) or waits
    // for a flag that is gone; with blocks sitting calls out too.
    for (shape, grid) in [
        (Shape::PushLl, Grid::Fixed),
        (Shape::LlMixed, Grid::Fixed),
        (Shape::PushLl, Grid::Varying),
        (Shape::LlMixed, Grid::Varying),
    ] {
        let caught = (0..SEEDS / 4)
            .filter(|&seed| {
                let cfg = ModelConfig {
                    push_sets: 1,
                    grid,
                    timeout_polls: 2000,
                    ..ModelConfig::new(2, 2, 8, shape)
                };
                !matches!(run(&cfg, seed), Outcome::Completed { .. })
            })
            .count();
        assert!(
            caught > 0,
            "{shape:?} {grid:?} with one LL set: went unnoticed"
        );
    }
}

#[test]
fn one_fused_scratch_set_would_do() {
    // The fused two-stage kernel's scratch alternates between two sets by the
    // rank's fused call count. A rank writes its scratch only after the start
    // barrier, which block b of every peer reaches once that peer's kernel
    // before has ended (stream order), reads of the rank's scratch included:
    // one set completes as well, with grids that follow the message's size.
    for ranks in [2, 4] {
        for shape in [Shape::FusedTwoStage, Shape::FusedMixed] {
            for grid in [Grid::Fixed, Grid::Varying] {
                let cfg = ModelConfig {
                    fused_sets: 1,
                    grid,
                    ..ModelConfig::new(ranks, 3, 8, shape)
                };
                completes(&cfg, 0..SEEDS / 2);
            }
        }
    }
}

#[test]
fn a_fused_call_started_before_the_call_before_ended_is_caught() {
    // The fused call count is one word a rank, stored by the call's last
    // block at its end: a block that ran ahead into the next call (no stream
    // order) reads the count before it moved, and picks the wrong scratch set.
    for shape in [Shape::FusedTwoStage, Shape::FusedMixed] {
        let caught = (0..SEEDS)
            .filter(|&seed| {
                let cfg = ModelConfig {
                    stream_order: false,
                    ..ModelConfig::new(2, 3, 8, shape)
                };
                matches!(run(&cfg, seed), Outcome::Violation(_))
            })
            .count();
        assert!(caught > 0, "{shape:?} without stream order: went unnoticed");
    }
}
