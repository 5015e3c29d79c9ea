//! The rendezvous of the one-process-per-GPU placement: every rank sends one
//! payload (its IPC handles) and receives every rank's, through a Unix-domain
//! socket on the host, with a deadline.
//!
//! ```no_run
//! use std::time::Duration;
//! use redjit_runtime::all_reduce::bootstrap;
//! # fn main() -> Result<(), redjit_runtime::Error> {
//! // In each of 2 processes (rank from the launcher, the same path in both):
//! let rank = 0;
//! let table = bootstrap::exchange("/tmp/redjit-job42.sock".as_ref(), rank, 2, b"my handles", Duration::from_secs(30))?;
//! assert_eq!(table.len(), 2);
//! # Ok(()) }
//! ```
//!
//! Protocol: rank 0 binds the socket (removing a stale file) and accepts until
//! every other rank has connected or the deadline passes; each rank sends
//! `magic, rank, world, len` (u32 little-endian) and `len` bytes; rank 0 checks
//! that every rank agrees on the world size and the payload length (ranks must
//! agree on how many buffers they exchange before exchanging them: vLLM PR
//! #39791), then answers each with all payloads in rank order. A rank that never
//! connects, or a rank 0 that never listens, is an `Err` naming who is missing,
//! never a hang. The caller zeroes its signal buffers before it exchanges their
//! handles, never after (a fast peer's first signal would be wiped: TVM PR
//! #16797).

#![warn(missing_docs)]

use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

const MAGIC: u32 = 0x7264_6a62; // "rdjb"
/// Largest payload a rank may send (handles of a few hundred buffers).
pub const MAX_PAYLOAD: usize = 1 << 20;

fn err(rule: String) -> Error {
    Error::Comm {
        what: "bootstrap".into(),
        rule,
    }
}

fn io(during: &str, e: std::io::Error) -> Error {
    err(format!("{during}: {e}"))
}

/// Exchanges `payload` among `world` ranks; returns every rank's payload, in rank
/// order (this rank's own included).
pub fn exchange(
    path: &Path,
    rank: u32,
    world: u32,
    payload: &[u8],
    timeout: Duration,
) -> Result<Vec<Vec<u8>>> {
    if world == 0 || rank >= world {
        return Err(err(format!(
            "rank {rank} of world {world}: rank must be below world"
        )));
    }
    if payload.len() > MAX_PAYLOAD {
        return Err(err(format!(
            "payload of {} bytes: at most {MAX_PAYLOAD}",
            payload.len()
        )));
    }
    let deadline = Instant::now() + timeout;
    if rank == 0 {
        serve(path, world, payload, deadline, timeout)
    } else {
        join(path, rank, world, payload, deadline, timeout)
    }
}

fn header(rank: u32, world: u32, len: usize) -> [u8; 16] {
    let mut h = [0u8; 16];
    for (i, v) in [MAGIC, rank, world, len as u32].into_iter().enumerate() {
        h[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    h
}

fn read_exact_by(s: &mut UnixStream, buf: &mut [u8], deadline: Instant) -> std::io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    s.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
    s.read_exact(buf)
}

fn serve(
    path: &Path,
    world: u32,
    payload: &[u8],
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<Vec<u8>>> {
    let _ = std::fs::remove_file(path);
    let listener =
        UnixListener::bind(path).map_err(|e| io(&format!("binding {}", path.display()), e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| io("setting the socket non-blocking", e))?;
    let mut table: Vec<Option<Vec<u8>>> = vec![None; world as usize];
    table[0] = Some(payload.to_vec());
    let mut peers: Vec<(u32, UnixStream)> = Vec::new();
    let result = (|| {
        while peers.len() + 1 < world as usize {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).map_err(|e| io("accepting", e))?;
                    let mut h = [0u8; 16];
                    read_exact_by(&mut s, &mut h, deadline)
                        .map_err(|e| io("reading a header", e))?;
                    let word = |i: usize| {
                        u32::from_le_bytes([h[4 * i], h[4 * i + 1], h[4 * i + 2], h[4 * i + 3]])
                    };
                    let (magic, r, w, len) = (word(0), word(1), word(2), word(3) as usize);
                    if magic != MAGIC {
                        return Err(err(format!(
                            "a connection sent magic {magic:#x}, not a redjit bootstrap"
                        )));
                    }
                    if w != world {
                        return Err(err(format!(
                            "rank {r} says the world has {w} ranks, rank 0 says {world}"
                        )));
                    }
                    if r == 0 || r >= world || table[r as usize].is_some() {
                        return Err(err(format!(
                            "rank {r} connected twice or is out of range 1..{world}"
                        )));
                    }
                    if len != payload.len() {
                        return Err(err(format!(
                            "rank {r} exchanges {len} bytes, rank 0 {} (ranks must agree on how many buffers they register)",
                            payload.len()
                        )));
                    }
                    let mut p = vec![0u8; len];
                    read_exact_by(&mut s, &mut p, deadline)
                        .map_err(|e| io(&format!("reading rank {r}'s payload"), e))?;
                    table[r as usize] = Some(p);
                    peers.push((r, s));
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let missing: Vec<String> = table
                            .iter()
                            .enumerate()
                            .filter(|(_, t)| t.is_none())
                            .map(|(r, _)| r.to_string())
                            .collect();
                        return Err(err(format!(
                            "rank(s) {} did not connect within {timeout:?}",
                            missing.join(", ")
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(io("accepting", e)),
            }
        }
        // Unlinked before anyone is answered: a rank that goes straight on to
        // the next exchange (rebuild, end_capture) must not reach this listener,
        // which is about to close; it retries until rank 0 binds the next one.
        let _ = std::fs::remove_file(path);
        let all: Vec<Vec<u8>> = table.into_iter().map(|t| t.unwrap_or_default()).collect();
        let flat: Vec<u8> = all.concat();
        for (r, s) in &mut peers {
            s.write_all(&flat)
                .map_err(|e| io(&format!("answering rank {r}"), e))?;
        }
        Ok(all)
    })();
    let _ = std::fs::remove_file(path);
    result
}

fn join(
    path: &Path,
    rank: u32,
    world: u32,
    payload: &[u8],
    deadline: Instant,
    timeout: Duration,
) -> Result<Vec<Vec<u8>>> {
    let mut s = loop {
        match UnixStream::connect(path) {
            Ok(s) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Err(e) => {
                return Err(err(format!(
                    "rank {rank}: rank 0 did not listen at {} within {timeout:?} ({e})",
                    path.display()
                )));
            }
        }
    };
    s.write_all(&header(rank, world, payload.len()))
        .and_then(|_| s.write_all(payload))
        .map_err(|e| io(&format!("rank {rank} sending its payload"), e))?;
    let mut flat = vec![0u8; payload.len() * world as usize];
    read_exact_by(&mut s, &mut flat, deadline).map_err(|e| {
        err(format!(
            "rank {rank}: no table from rank 0 within {timeout:?} (another rank missing or disagreeing?): {e}"
        ))
    })?;
    Ok(flat
        .chunks(payload.len().max(1))
        .map(<[u8]>::to_vec)
        .take(world as usize)
        .collect::<Vec<_>>())
    .map(|mut v: Vec<Vec<u8>>| {
        // Empty payloads: chunks() yields nothing; every rank sent nothing.
        v.resize(world as usize, Vec::new());
        v
    })
}
