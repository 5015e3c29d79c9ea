//! The one-process-per-GPU join up to the CUDA calls: ranks (threads here, with
//! fake buffers standing in for device memory, and the real Unix-socket
//! bootstrap) zero their signals before any handle leaves them, exchange rank
//! cards, agree on the world and the buffer sizes, refuse a card from their own
//! process, and fill the pointer tables with their own addresses and the
//! peers' opened ones. Pure CPU.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redjit::Error;
use redjit::all_reduce::bootstrap;
use redjit::all_reduce::ipc::{BUFFERS, RankBuffers, RankCard, join};
use redjit::peer::IpcHandle;

/// A global clock so events of different ranks can be ordered.
static CLOCK: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Zeroed,
    Handles,
    Opened { peer: u32 },
}

/// (clock, rank, event)
type Log = Vec<(u64, u32, Event)>;

struct Fake<'a> {
    rank: u32,
    staging: u64,
    log: &'a Mutex<Log>,
}

fn base(rank: u32) -> u64 {
    0x7f00_0000_0000 + rank as u64 * 0x1_0000_0000
}

fn handle(rank: u32, k: usize) -> IpcHandle {
    let mut h = [0u8; 64];
    h[0] = rank as u8;
    h[1] = k as u8;
    h[63] = 0xa5;
    IpcHandle(h)
}

/// Where rank `me` maps buffer `k` of `peer` (distinct from every own address).
fn mapped(me: u32, peer: u32, k: usize) -> u64 {
    0x5500_0000_0000 + me as u64 * 0x1_0000_0000 + peer as u64 * 0x100_0000 + k as u64 * 0x1000
}

impl Fake<'_> {
    fn event(&self, e: Event) {
        let t = CLOCK.fetch_add(1, Ordering::SeqCst);
        self.log.lock().unwrap().push((t, self.rank, e));
    }
}

impl RankBuffers for Fake<'_> {
    type Mapping = (u32, u32, usize);
    fn zero_signals(&mut self) -> redjit::Result<()> {
        // A little late, so a missing ordering would show.
        std::thread::sleep(Duration::from_millis(5 * self.rank as u64));
        self.event(Event::Zeroed);
        Ok(())
    }
    fn sizes(&self) -> [u64; 3] {
        [self.staging, 8192, self.staging / 2 + 16]
    }
    fn grids(&self) -> [u32; 2] {
        GRIDS
    }
    fn addresses(&self) -> [u64; 3] {
        [0, 1, 2].map(|k| base(self.rank) + k * 0x1000_0000)
    }
    fn handles(&mut self) -> redjit::Result<[IpcHandle; 3]> {
        self.event(Event::Handles);
        Ok([0, 1, 2].map(|k| handle(self.rank, k)))
    }
    fn open(&mut self, peer: &RankCard, h: &IpcHandle) -> redjit::Result<(u64, (u32, u32, usize))> {
        let (r, k) = (h.0[0] as u32, h.0[1] as usize);
        assert_eq!(r, peer.rank, "a handle opened as another rank's");
        assert_eq!(*h, handle(r, k));
        self.event(Event::Opened { peer: r });
        Ok((mapped(self.rank, r, k), (self.rank, r, k)))
    }
}

fn sock(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!("redjit-ipc-{test}-{}.sock", std::process::id()))
}

#[test]
fn every_rank_zeroes_before_any_handle_is_sent_and_fills_the_tables() {
    for world in [2u32, 4, 8] {
        let path = sock(&format!("ok{world}"));
        let log = Mutex::new(Vec::new());
        let joined: Vec<_> = std::thread::scope(|s| {
            let joins: Vec<_> = (0..world)
                .map(|r| {
                    let (path, log) = (path.clone(), &log);
                    s.spawn(move || {
                        let mut f = Fake {
                            rank: r,
                            staging: 1 << 20,
                            log,
                        };
                        // Distinct fake pids: in a real job every rank is its own process.
                        join(&mut f, r, world, 1000 + r, |card| {
                            bootstrap::exchange(&path, r, world, card, Duration::from_secs(10))
                        })
                    })
                })
                .collect();
            joins
                .into_iter()
                .map(|j| j.join().unwrap().unwrap())
                .collect()
        });
        let log = log.into_inner().unwrap();
        let when = |r: u32, e: Event| log.iter().find(|x| x.1 == r && x.2 == e).unwrap().0;
        let last_zero = (0..world).map(|r| when(r, Event::Zeroed)).max().unwrap();
        for r in 0..world {
            // Each rank: zero, then take handles (only then can they leave it).
            assert!(when(r, Event::Zeroed) < when(r, Event::Handles), "rank {r}");
        }
        let opens: Vec<_> = log
            .iter()
            .filter(|x| matches!(x.2, Event::Opened { .. }))
            .collect();
        assert_eq!(opens.len(), (world * (world - 1) * 3) as usize);
        for o in &opens {
            // No rank opens (and so can signal) a peer before every rank zeroed.
            assert!(
                o.0 > last_zero,
                "{o:?} before the last zeroing at {last_zero}"
            );
        }
        for (me, j) in joined.iter().enumerate() {
            let me = me as u32;
            for (k, name) in BUFFERS.iter().enumerate() {
                for r in 0..8u32 {
                    let want = if r >= world {
                        0
                    } else if r == me {
                        base(me) + k as u64 * 0x1000_0000
                    } else {
                        mapped(me, r, k)
                    };
                    assert_eq!(
                        j.tables[k][r as usize], want,
                        "rank {me}'s {name} table, slot {r}"
                    );
                }
            }
            assert_eq!(j.mappings.len(), 3 * (world as usize - 1));
        }
    }
}

/// The push kernels' grids every fake rank launches.
const GRIDS: [u32; 2] = [64, 128];

fn card(rank: u32, world: u32, pid: u32, staging: u64) -> Vec<u8> {
    card_with(rank, world, pid, staging, GRIDS)
}

fn card_with(rank: u32, world: u32, pid: u32, staging: u64, grids: [u32; 2]) -> Vec<u8> {
    RankCard {
        rank,
        world,
        pid,
        grids,
        sizes: [staging, 8192, staging / 2 + 16],
        handles: [0, 1, 2].map(|k| handle(rank, k)),
    }
    .encode()
}

fn comm_rule(e: Error) -> String {
    match e {
        Error::Comm { what, rule } => {
            assert_eq!(what, "IPC join");
            rule
        }
        other => panic!("not an IPC join error: {other}"),
    }
}

/// Rank 0 joins a world of 2 whose exchange answers `peer` as rank 1's card.
fn join_with(peer: Vec<u8>) -> (Result<(), Error>, Log) {
    let log = Mutex::new(Vec::new());
    let mut f = Fake {
        rank: 0,
        staging: 1 << 20,
        log: &log,
    };
    let r = join(&mut f, 0, 2, 7, |mine| Ok(vec![mine.to_vec(), peer])).map(|_| ());
    (r, log.into_inner().unwrap())
}

#[test]
fn disagreeing_cards_are_refused_before_any_handle_is_opened() {
    let cases = [
        (
            card(1, 3, 8, 1 << 20),
            "rank 1 says the world has 3 ranks, rank 0 says 2",
        ),
        (
            card(1, 2, 8, 1 << 19),
            "rank 1's staging buffer has 524288 bytes, rank 0's 1048576",
        ),
        (card(0, 2, 8, 1 << 20), "slot 1 holds the card of rank 0"),
        (
            card_with(1, 2, 8, 1 << 20, [64, 114]),
            "rank 1 launches the push and LL kernels on 64 and 114 blocks, rank 0 on 64 and 128",
        ),
        (
            card(1, 2, 7, 1 << 20),
            "ranks 0 and 1 are both in process 7: the driver does not open IPC handles",
        ),
        (
            card(1, 2, 8, 1 << 20)[..100].to_vec(),
            "rank 1's card has 100 bytes, a card has 240",
        ),
        (
            {
                let mut c = card(1, 2, 8, 1 << 20);
                c[0] ^= 1;
                c
            },
            "not a redjit rank card",
        ),
    ];
    for (peer, want) in cases {
        let (r, log) = join_with(peer);
        let rule = comm_rule(r.unwrap_err());
        assert!(rule.contains(want), "{rule}\n  wanted: {want}");
        assert!(
            !log.iter().any(|x| matches!(x.2, Event::Opened { .. })),
            "{want}: a handle was opened"
        );
        assert_eq!(log[0].2, Event::Zeroed);
    }
    let (ok, _) = join_with(card(1, 2, 8, 1 << 20));
    ok.unwrap();
}

#[test]
fn cards_round_trip_and_bad_ranks_are_refused() {
    let c = RankCard {
        rank: 3,
        world: 8,
        pid: 4242,
        grids: [32, 96],
        sizes: [64 << 20, 8192, (8 << 20) + 16],
        handles: [0, 1, 2].map(|k| handle(3, k)),
    };
    assert_eq!(c.encode().len(), RankCard::BYTES);
    assert_eq!(RankCard::decode(3, &c.encode()).unwrap(), c);
    let log = Mutex::new(Vec::new());
    let mut f = Fake {
        rank: 2,
        staging: 16,
        log: &log,
    };
    let e = comm_rule(join(&mut f, 2, 2, 1, |_| unreachable!()).unwrap_err());
    assert!(e.contains("rank 2 of world 2"), "{e}");
    assert!(
        log.lock().unwrap().is_empty(),
        "nothing done for a bad rank"
    );
    let e = comm_rule(join(&mut f, 0, 2, 1, |m| Ok(vec![m.to_vec()])).unwrap_err());
    assert!(e.contains("returned 1 cards for 2 ranks"), "{e}");
}

#[test]
fn an_absent_peer_is_a_bootstrap_error_after_zeroing() {
    let log = Mutex::new(Vec::new());
    let mut f = Fake {
        rank: 0,
        staging: 1 << 20,
        log: &log,
    };
    let path = sock("absent");
    let e = join(&mut f, 0, 2, 1, |card| {
        bootstrap::exchange(&path, 0, 2, card, Duration::from_millis(200))
    })
    .unwrap_err();
    assert!(e.to_string().contains("rank(s) 1 did not connect"), "{e}");
    let log = log.into_inner().unwrap();
    assert_eq!(
        log.iter().map(|x| x.2).collect::<Vec<_>>(),
        vec![Event::Zeroed, Event::Handles]
    );
}

#[test]
fn a_bad_process_placement_is_refused_before_any_gpu_work() {
    use redjit::all_reduce::{CommOptions, Communicator, Placement};
    for (rank, world, gpu_share, want) in [
        (2, 2, 1, "rank 2 of world 2"),
        (0, 2, 0, "sharing its GPU with 0"),
        (0, 2, 3, "sharing its GPU with 3"),
    ] {
        let placement = Placement::Process {
            ordinal: 0,
            rank,
            world,
            rendezvous: sock("never"),
            gpu_share,
        };
        match Communicator::new(placement, CommOptions::default()) {
            Err(Error::Comm { what, rule }) => {
                assert_eq!(what, "placement");
                assert!(rule.contains(want), "{rule}");
            }
            Err(other) => panic!("{want}: {other}"),
            Ok(_) => panic!("{want}: accepted"),
        }
    }
}

#[test]
fn a_grid_cap_outside_the_signal_slots_is_refused_before_any_gpu_work() {
    use redjit::all_reduce::{CommOptions, Communicator, Placement};
    use redjit::codegen::spec::all_reduce::MAX_BLOCKS;
    for cap in [0, MAX_BLOCKS + 1, u32::MAX] {
        let placement = Placement::Process {
            ordinal: 0,
            rank: 0,
            world: 2,
            rendezvous: sock("never"),
            gpu_share: 1,
        };
        let opts = CommOptions::default().max_blocks(Some(cap));
        match Communicator::new(placement, opts) {
            Err(Error::Comm { what, rule }) => {
                assert_eq!(what, "max_blocks");
                assert!(
                    rule.starts_with(&format!("{cap}:"))
                        && rule.contains(&format!("1 to {MAX_BLOCKS}")),
                    "{rule}"
                );
            }
            Err(other) => panic!("{cap}: {other}"),
            Ok(_) => panic!("{cap}: accepted"),
        }
    }
}
