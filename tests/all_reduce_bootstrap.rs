//! The IPC bootstrap on the host's loopback (a Unix-domain socket): ranks in
//! threads and in a second process exchange 64-byte handles; a rank that never
//! connects, a rank 0 that never listens, and ranks that disagree on the world
//! size or the payload length are errors within the timeout. Pure CPU.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use redjit::Error;
use redjit::all_reduce::bootstrap::exchange;

fn sock(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!("redjit-bs-{test}-{}.sock", std::process::id()))
}

fn handle(rank: u32) -> Vec<u8> {
    (0..64u32).map(|i| (rank * 37 + i * 11 + 1) as u8).collect()
}

#[test]
fn every_rank_gets_every_handle_in_rank_order() {
    for world in [2u32, 4, 8] {
        let path = sock(&format!("ok{world}"));
        let tables: Vec<_> = std::thread::scope(|s| {
            let joins: Vec<_> = (0..world)
                .map(|r| {
                    let path = path.clone();
                    s.spawn(move || exchange(&path, r, world, &handle(r), Duration::from_secs(10)))
                })
                .collect();
            joins
                .into_iter()
                .map(|j| j.join().unwrap().unwrap())
                .collect()
        });
        let want: Vec<Vec<u8>> = (0..world).map(handle).collect();
        for t in tables {
            assert_eq!(t, want, "world {world}");
        }
    }
}

#[test]
fn a_second_process_exchanges_with_this_one() {
    // The child is this test binary, running only the helper below as rank 1.
    let path = sock("proc");
    let exe = std::env::current_exe().unwrap();
    let child = std::process::Command::new(exe)
        .args(["--exact", "child_rank_1", "--ignored", "--nocapture"])
        .env("REDJIT_BS_PATH", &path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = exchange(&path, 0, 2, &handle(0), Duration::from_secs(20)).unwrap();
    assert_eq!(t, vec![handle(0), handle(1)]);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("child got 2 handles"));
}

#[test]
#[ignore = "run by a_second_process_exchanges_with_this_one as rank 1"]
fn child_rank_1() {
    // Run directly (e.g. every ignored test at once), there is no rank 0: skip.
    let Some(path) = std::env::var_os("REDJIT_BS_PATH").map(PathBuf::from) else {
        return;
    };
    let t = exchange(&path, 1, 2, &handle(1), Duration::from_secs(20)).unwrap();
    assert_eq!(t, vec![handle(0), handle(1)]);
    println!("child got {} handles", t.len());
}

fn comm_rule(e: Error) -> String {
    match e {
        Error::Comm { what, rule } => {
            assert_eq!(what, "bootstrap");
            rule
        }
        other => panic!("not a bootstrap error: {other}"),
    }
}

#[test]
fn a_rank_that_never_connects_times_out_naming_it() {
    let path = sock("absent");
    let t0 = Instant::now();
    let rules: Vec<String> = std::thread::scope(|s| {
        // Ranks 0, 1, 3 of 4; rank 2 never comes.
        let joins: Vec<_> = [0u32, 1, 3]
            .into_iter()
            .map(|r| {
                let path = path.clone();
                s.spawn(move || exchange(&path, r, 4, &handle(r), Duration::from_millis(400)))
            })
            .collect();
        joins
            .into_iter()
            .map(|j| comm_rule(j.join().unwrap().unwrap_err()))
            .collect()
    });
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert!(
        rules[0].contains("rank(s) 2 did not connect"),
        "{}",
        rules[0]
    );
    for r in &rules[1..] {
        assert!(r.contains("no table from rank 0"), "{r}");
    }
}

#[test]
fn no_rank_0_times_out() {
    let path = sock("norank0");
    let t0 = Instant::now();
    let e = comm_rule(exchange(&path, 1, 2, &handle(1), Duration::from_millis(200)).unwrap_err());
    assert!(e.contains("rank 0 did not listen"), "{e}");
    assert!(t0.elapsed() >= Duration::from_millis(200) && t0.elapsed() < Duration::from_secs(5));
}

#[test]
fn disagreements_are_errors() {
    let path = sock("world");
    let (a, b) = std::thread::scope(|s| {
        let p = path.clone();
        let a = s.spawn(move || exchange(&p, 0, 2, &handle(0), Duration::from_millis(500)));
        let p = path.clone();
        let b = s.spawn(move || exchange(&p, 1, 3, &handle(1), Duration::from_millis(500)));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert!(comm_rule(a.unwrap_err()).contains("rank 1 says the world has 3 ranks, rank 0 says 2"));
    assert!(b.is_err());

    let path = sock("len");
    let (a, _) = std::thread::scope(|s| {
        let p = path.clone();
        let a = s.spawn(move || exchange(&p, 0, 2, &handle(0), Duration::from_millis(500)));
        let p = path.clone();
        let b = s.spawn(move || exchange(&p, 1, 2, &handle(1)[..32], Duration::from_millis(500)));
        (a.join().unwrap(), b.join().unwrap())
    });
    let e = comm_rule(a.unwrap_err());
    assert!(e.contains("rank 1 exchanges 32 bytes, rank 0 64"), "{e}");
    assert!(
        comm_rule(exchange(&sock("r"), 2, 2, b"x", Duration::from_millis(10)).unwrap_err())
            .contains("rank must be below world")
    );
}
