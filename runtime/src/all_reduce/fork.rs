//! Orders the rank streams after the main stream and the main stream after
//! them, with events made once per communicator.
//!
//! cudarc's `CudaStream::join` creates a timing event, records it, waits on it
//! and destroys it: four driver calls, one of them an allocation, per stream
//! pair. An eager all-reduce joins every rank twice, so on the test placement
//! the host spent most of a small call's ~30 µs there (back-to-back 64 KB
//! calls took 30 µs eager against 6 µs replayed from a graph; H100, commit
//! 05f9b78). Here each join is one record and one wait on an event that lives
//! as long as the communicator. Re-recording an event is safe: a wait binds to
//! the record that precedes it on the host, and later records do not move it.
//! A rank that issues on the main stream itself needs neither.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream, sys};

use crate::error::{DriverContext, Result};

fn same(a: &CudaStream, b: &CudaStream) -> bool {
    a.cu_stream() == b.cu_stream()
}

/// One event on the main stream (the fan-out) and one per rank stream (the
/// fan-in), none timing.
pub(crate) struct StreamFork {
    start: CudaEvent,
    done: Vec<CudaEvent>,
}

fn untimed(stream: &CudaStream) -> Result<CudaEvent> {
    stream
        .context()
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .during(|| "creating a stream-ordering event".into())
}

impl StreamFork {
    /// Events for `main` and for `ranks`, in the order later calls pass them.
    pub(crate) fn new<'a>(
        main: &CudaStream,
        ranks: impl Iterator<Item = &'a Arc<CudaStream>>,
    ) -> Result<StreamFork> {
        Ok(StreamFork {
            start: untimed(main)?,
            done: ranks.map(|s| untimed(s)).collect::<Result<_>>()?,
        })
    }

    /// Every rank stream waits for the work issued on `main` so far.
    pub(crate) fn fan_out<'a>(
        &self,
        main: &CudaStream,
        ranks: impl Iterator<Item = (u32, &'a Arc<CudaStream>)>,
    ) -> Result<()> {
        let mut recorded = false;
        for (r, s) in ranks.filter(|(_, s)| !same(s, main)) {
            if !recorded {
                self.start
                    .record(main)
                    .during(|| "recording the main stream's fan-out event".into())?;
                recorded = true;
            }
            s.wait(&self.start)
                .during(|| format!("rank {r}: waiting for the main stream"))?;
        }
        Ok(())
    }

    /// `main` waits for the work issued on every rank stream so far.
    pub(crate) fn fan_in<'a>(
        &self,
        main: &CudaStream,
        ranks: impl Iterator<Item = (u32, &'a Arc<CudaStream>)>,
    ) -> Result<()> {
        for ((r, s), done) in ranks.zip(&self.done).filter(|((_, s), _)| !same(s, main)) {
            done.record(s)
                .during(|| format!("rank {r}: recording its fan-in event"))?;
            main.wait(done)
                .during(|| format!("main stream waiting for rank {r}"))?;
        }
        Ok(())
    }
}
