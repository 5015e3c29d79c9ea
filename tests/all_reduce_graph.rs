//! CUDA-graph bookkeeping without a GPU: captured calls take consecutive table
//! slots after the eager slot 0, a call on a capturing stream outside a session
//! or with a misaligned input is a typed error, slots are bounded, ranks that
//! captured different numbers of calls are refused, records round-trip, and the
//! tables after capture hold local inputs and peers' opened addresses in rank
//! order. Pure CPU.

use redjit::Error;
use redjit::all_reduce::graph::{EAGER_SLOT, GraphBuffers, GraphRecord, Pending, agree, tables};
use redjit::peer::IpcHandle;

fn rule(e: Error) -> String {
    match e {
        Error::Comm { what, rule } => {
            assert_eq!(what, "graph capture");
            rule
        }
        other => panic!("not a graph capture error: {other}"),
    }
}

#[test]
fn captured_calls_take_consecutive_slots_across_captures() {
    let mut g = GraphBuffers::new(16);
    assert_eq!(EAGER_SLOT, 0);
    g.begin().unwrap();
    for k in 0..10u64 {
        assert_eq!(g.record(&[0x1000 * (k + 1), 0x9000]).unwrap(), 1 + k as u32);
    }
    let p = g.finish().unwrap();
    assert_eq!(p.first_slot, 1);
    assert_eq!(p.inputs.len(), 10);
    assert_eq!(p.inputs[3], vec![0x4000, 0x9000]);
    g.commit(10);
    assert_eq!(g.registered(), 10);
    // A second graph continues after the first one's slots.
    g.begin().unwrap();
    assert_eq!(g.record(&[0x10, 0x20]).unwrap(), 11);
    let p = g.finish().unwrap();
    assert_eq!(p.first_slot, 11);
    g.commit(1);
    // A failed capture leaves no trace.
    g.begin().unwrap();
    g.record(&[0x30, 0x40]).unwrap();
    g.cancel();
    assert!(!g.in_session());
    g.begin().unwrap();
    assert_eq!(g.record(&[0x30, 0x40]).unwrap(), 12);
}

#[test]
fn unregistered_misaligned_and_excess_captures_are_typed_errors() {
    let mut g = GraphBuffers::new(2);
    let e = rule(g.record(&[0x1000, 0x2000]).unwrap_err());
    assert!(
        e.contains("reads unregistered inputs (0x1000, 0x2000)"),
        "{e}"
    );
    assert!(
        e.contains("call Communicator::begin_capture before capturing"),
        "{e}"
    );
    g.begin().unwrap();
    assert!(rule(g.begin().unwrap_err()).contains("while a capture session is open"));
    let e = rule(g.record(&[0x1000, 0x2004]).unwrap_err());
    assert!(e.contains("local rank 1's input starts at 0x2004"), "{e}");
    g.record(&[0x1000, 0x2000]).unwrap();
    g.record(&[0x1000, 0x2000]).unwrap();
    let e = rule(g.record(&[0x1000, 0x2000]).unwrap_err());
    assert!(
        e.contains("3 captured calls would exceed CommOptions::graph_slots = 2"),
        "{e}"
    );
    g.finish().unwrap();
    assert!(rule(g.finish().unwrap_err()).contains("end_capture without begin_capture"));
}

#[test]
fn ranks_must_agree_on_the_count() {
    assert_eq!(agree(&[16, 16, 16, 16]).unwrap(), 16);
    let e = rule(agree(&[16, 16, 15, 16]).unwrap_err());
    assert!(
        e.contains("rank 2 captured 15 all-reduces, rank 0 16"),
        "{e}"
    );
    assert!(agree(&[]).is_err());
}

#[test]
fn records_round_trip_and_bad_lengths_are_refused() {
    let recs: Vec<GraphRecord> = (0..5u8)
        .map(|k| GraphRecord {
            handle: IpcHandle([k; 64]),
            offset: 4096 * k as u64 + 16,
            base: 0x7f00_0000_0000 + ((k as u64) << 21),
            size: 3 << 20,
        })
        .collect();
    let b = GraphRecord::encode_all(&recs);
    assert_eq!(b.len(), 5 * GraphRecord::BYTES);
    assert_eq!(GraphRecord::decode_all(1, &b).unwrap(), recs);
    let e = rule(GraphRecord::decode_all(3, &b[..100]).unwrap_err());
    assert!(e.contains("rank 3 sent 100 bytes of graph records"), "{e}");
}

#[test]
fn tables_hold_local_inputs_and_peers_in_rank_order() {
    // One process driving every rank: all addresses are local.
    let p = Pending {
        first_slot: 5,
        inputs: vec![vec![0x100, 0x200, 0x300], vec![0x400, 0x500, 0x600]],
    };
    let t = tables(3, &[0, 1, 2], &p, |_, _| panic!("no peers here")).unwrap();
    assert_eq!(t[0], (5, [0x100, 0x200, 0x300, 0, 0, 0, 0, 0]));
    assert_eq!(t[1], (6, [0x400, 0x500, 0x600, 0, 0, 0, 0, 0]));
    // One process per GPU: rank 1 of 4; peers come from their opened records.
    let p = Pending {
        first_slot: 1,
        inputs: vec![vec![0xa0], vec![0xb0]],
    };
    let t = tables(4, &[1], &p, |r, i| Ok(0x1_0000 * r as u64 + i as u64 * 16)).unwrap();
    assert_eq!(t[0], (1, [0x0, 0xa0, 0x2_0000, 0x3_0000, 0, 0, 0, 0]));
    assert_eq!(t[1], (2, [0x10, 0xb0, 0x2_0010, 0x3_0010, 0, 0, 0, 0]));
    // A peer that cannot be opened fails the registration.
    let e = tables(2, &[0], &p, |_, _| {
        Err(Error::Comm {
            what: "graph capture".into(),
            rule: "open failed".into(),
        })
    })
    .unwrap_err();
    assert!(rule(e).contains("open failed"));
}

fn sock(test: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("redjit-graph-{test}-{}.sock", std::process::id()))
}

/// Rank `r`'s captured input `i`: allocation handle (r, i / 2), offset by i.
fn record(r: u32, i: usize) -> GraphRecord {
    let mut h = [0u8; 64];
    h[0] = r as u8;
    h[1] = (i / 2) as u8;
    GraphRecord {
        handle: IpcHandle(h),
        offset: 256 * i as u64,
        base: 0x1000_0000 * (r as u64 + 1) + 0x10_0000 * (i / 2) as u64,
        size: 0x10_0000,
    }
}

/// Runs the registration of `counts[r]` captured calls on every rank (threads,
/// real bootstrap); returns each rank's result and the handles it opened.
#[allow(clippy::type_complexity)]
fn register_all(
    test: &str,
    counts: &[usize],
    fail: Option<u32>,
) -> Vec<(Result<Vec<(u32, [u64; 8])>, Error>, Vec<(u32, u8, u8)>)> {
    use redjit::all_reduce::bootstrap;
    use redjit::all_reduce::graph::register_across_processes;
    use std::time::Duration;
    let world = counts.len() as u32;
    let path = sock(test);
    std::thread::scope(|s| {
        let joins: Vec<_> = (0..world)
            .map(|r| {
                let path = path.clone();
                let n = counts[r as usize];
                s.spawn(move || {
                    let pending = Pending {
                        first_slot: 3,
                        inputs: (0..n).map(|i| vec![0x7000 + 0x100 * i as u64]).collect(),
                    };
                    let records = if fail == Some(r) {
                        Err(Error::Comm {
                            what: "IPC handle".into(),
                            rule: "not legacy-IPC capable".into(),
                        })
                    } else {
                        Ok((0..n).map(|i| record(r, i)).collect())
                    };
                    let mut opened = Vec::new();
                    let t = register_across_processes(
                        r,
                        world,
                        &pending,
                        records,
                        |p| bootstrap::exchange(&path, r, world, p, Duration::from_secs(10)),
                        |peer, rec| {
                            let h = &rec.handle;
                            assert_ne!(peer, r, "opened its own input");
                            opened.push((peer, h.0[0], h.0[1]));
                            Ok(0x5_0000_0000 * (h.0[0] as u64 + 1) + 0x1000 * h.0[1] as u64)
                        },
                    );
                    (t, opened)
                })
            })
            .collect();
        joins.into_iter().map(|j| j.join().unwrap()).collect()
    })
}

#[test]
fn processes_agree_on_the_count_then_open_each_others_inputs() {
    let out = register_all("ok", &[4, 4, 4], None);
    for (me, (t, opened)) in out.into_iter().enumerate() {
        let t = t.unwrap();
        assert_eq!(t.len(), 4);
        for (i, (slot, table)) in t.iter().enumerate() {
            assert_eq!(*slot, 3 + i as u32);
            for r in 0..3u32 {
                let want = if r as usize == me {
                    0x7000 + 0x100 * i as u64
                } else {
                    0x5_0000_0000 * (r as u64 + 1) + 0x1000 * (i / 2) as u64 + 256 * i as u64
                };
                assert_eq!(
                    table[r as usize], want,
                    "rank {me}, call {i}, slot of rank {r}"
                );
            }
            assert_eq!(&table[3..], &[0; 5]);
        }
        // Every peer record was resolved (the caller's cache dedupes allocations).
        assert_eq!(opened.len(), 2 * 4);
    }
}

#[test]
fn a_count_mismatch_fails_every_rank_before_any_open() {
    let out = register_all("mismatch", &[16, 16, 15, 16], None);
    for (me, (t, opened)) in out.into_iter().enumerate() {
        let e = rule(t.unwrap_err());
        assert!(
            e.contains("rank 2 captured 15 all-reduces, rank 0 16"),
            "rank {me}: {e}"
        );
        assert!(opened.is_empty(), "rank {me} opened a handle");
    }
}

#[test]
fn a_rank_that_cannot_share_fails_every_rank_at_once() {
    let t0 = std::time::Instant::now();
    let out = register_all("poison", &[2, 2, 2], Some(1));
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
    for (me, (t, opened)) in out.into_iter().enumerate() {
        let e = t.unwrap_err().to_string();
        if me == 1 {
            assert!(e.contains("not legacy-IPC capable"), "{e}");
        } else {
            assert!(
                e.contains("rank 1 could not share its captured inputs"),
                "rank {me}: {e}"
            );
        }
        assert!(opened.is_empty());
    }
}

/// A peer's allocation is opened once per handle; a new handle over a range
/// that overlaps an opened one of the same rank (the peer freed it and got the
/// addresses back) closes the old mapping first; other ranks' mappings and
/// disjoint ranges stay.
#[test]
fn peer_mappings_open_each_allocation_once_and_drop_freed_ones() {
    use redjit::all_reduce::graph::PeerMappings;
    use std::cell::RefCell;
    use std::rc::Rc;
    /// A mapping that records its closing.
    struct M(u8, Rc<RefCell<Vec<u8>>>);
    impl Drop for M {
        fn drop(&mut self) {
            self.1.borrow_mut().push(self.0);
        }
    }
    let closed = Rc::new(RefCell::new(Vec::new()));
    let rec = |tag: u8, base: u64, size: u64| GraphRecord {
        handle: IpcHandle([tag; 64]),
        offset: 0,
        base,
        size,
    };
    let mut maps: PeerMappings<M> = PeerMappings::default();
    let mut opens = 0;
    let mut get = |maps: &mut PeerMappings<M>, rank: u32, r: &GraphRecord| -> u8 {
        maps.get_or_open(rank, r, |h| {
            opens += 1;
            Ok(M(h.0[0], closed.clone()))
        })
        .unwrap()
        .0
    };
    assert_eq!(get(&mut maps, 1, &rec(1, 0x1000, 0x1000)), 1);
    assert_eq!(get(&mut maps, 1, &rec(1, 0x1000, 0x1000)), 1);
    assert_eq!(get(&mut maps, 1, &rec(2, 0x2000, 0x1000)), 2);
    assert_eq!(get(&mut maps, 2, &rec(3, 0x1000, 0x1000)), 3);
    assert_eq!(maps.len(), 3);
    assert!(closed.borrow().is_empty());
    // Rank 1 reallocated over both of its earlier ranges under a new handle.
    assert_eq!(get(&mut maps, 1, &rec(4, 0x1800, 0x1000)), 4);
    assert_eq!(*closed.borrow(), vec![1, 2]);
    assert_eq!(maps.len(), 2);
    // Rank 2's mapping of the same addresses in its own process stays.
    assert_eq!(get(&mut maps, 2, &rec(3, 0x1000, 0x1000)), 3);
    assert_eq!(opens, 4);
    // A failed open is the caller's error.
    let e = maps
        .get_or_open(3, &rec(9, 0, 16), |_| {
            Err(Error::Comm {
                what: "graph capture".into(),
                rule: "open failed".into(),
            })
        })
        .map(|_| ())
        .unwrap_err();
    assert!(rule(e).contains("open failed"));
}
