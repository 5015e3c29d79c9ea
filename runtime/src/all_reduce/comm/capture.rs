//! CUDA graph capture of all-reduces, synchronisation and rebuilding.

use super::*;

impl Communicator {
    /// Opens a capture session: until [`Self::end_capture`], calls issued while
    /// the main stream captures read their inputs in place (16-byte aligned,
    /// kept alive by the caller while the graph is replayed) through table
    /// slots registered at `end_capture` (see [`crate::all_reduce::graph`]). Without a
    /// session, a call on a capturing stream is an error.
    pub fn begin_capture(&self) -> Result<()> {
        self.graph.lock().unwrap_or_else(|p| p.into_inner()).begin()
    }

    /// Drops an open session's records (after a capture that failed).
    pub fn cancel_capture(&self) {
        self.graph
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cancel();
    }

    /// Registers what the session captured, after the stream's capture ended
    /// and before the graph is replayed: the ranks agree on the number of
    /// captured calls, exchange their inputs' addresses (IPC handles and
    /// offsets in [`Placement::Process`], where every process must call this)
    /// and write the table slots the graph's kernels read. Returns the number
    /// of calls registered.
    pub fn end_capture(&self) -> Result<u32> {
        let status = self
            .stream()
            .capture_status()
            .during(|| "querying the main stream's capture status".into())?;
        if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
            return Err(comm_err(
                "graph capture",
                format!(
                    "end_capture while the main stream is still capturing ({status:?}): end the stream's capture first, then register"
                ),
            ));
        }
        let pending = self
            .graph
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finish()?;
        let count = pending.inputs.len() as u32;
        let local = self.local_ranks();
        let written = match &self.placement {
            Placement::Process {
                rank, rendezvous, ..
            } => {
                let exchange = |payload: &[u8]| {
                    crate::all_reduce::bootstrap::exchange(
                        rendezvous,
                        *rank,
                        self.world,
                        payload,
                        self.opts.join_timeout,
                    )
                };
                let ctx = self.runtimes[0].context();
                ctx.bind_to_thread()
                    .during(|| "binding the context".into())?;
                let records = pending
                    .inputs
                    .iter()
                    .map(|ins| {
                        let a = ins[0];
                        let (mut base, mut size) = (0, 0);
                        // SAFETY: out-pointers to live locals; `a` is a device
                        // address the caller passed as an input.
                        unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, a) }
                            .result()
                            .during(|| format!("the allocation of captured input {a:#x}"))?;
                        Ok(GraphRecord {
                            handle: crate::peer::get_mem_handle(base)?,
                            offset: a - base,
                            base,
                            size: size as u64,
                        })
                    })
                    .collect::<Result<Vec<_>>>();
                let mut opened = self
                    .graph_mappings
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                crate::all_reduce::graph::register_across_processes(
                    *rank,
                    self.world,
                    &pending,
                    records,
                    exchange,
                    |r, rec| {
                        Ok(opened
                            .get_or_open(r, rec, |h| OpenedIpc::open(ctx, h))?
                            .ptr())
                    },
                )?
            }
            placement => {
                if let Placement::Devices { .. } = placement {
                    // Peer access covers cuMemAlloc memory only.
                    for ins in &pending.inputs {
                        for (k, &a) in ins.iter().enumerate() {
                            self.runtimes[self.ranks[k].rt]
                                .context()
                                .bind_to_thread()
                                .during(|| "binding the context".into())?;
                            if !crate::peer::is_legacy_ipc_capable(a)? {
                                return Err(comm_err(
                                    "graph capture",
                                    format!(
                                        "rank {k}'s captured input {a:#x} is pool or virtual-memory memory, which peer access does not cover: allocate captured inputs with cuMemAlloc (peer::LegacyAlloc)"
                                    ),
                                ));
                            }
                        }
                    }
                }
                crate::all_reduce::graph::tables(self.world, &local, &pending, |r, i| {
                    Err(comm_err(
                        "graph capture",
                        format!("rank {r} of call {i} is not driven by this process"),
                    ))
                })?
            }
        };
        for rank in &self.ranks {
            self.runtimes[rank.rt]
                .context()
                .bind_to_thread()
                .during(|| "binding the context".into())?;
            for (slot, t) in &written {
                write_table(&rank.in_tables, *slot, t)?;
            }
        }
        self.graph
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .commit(count);
        Ok(count)
    }

    /// Waits for every rank and reads the error words: a barrier that timed out
    /// breaks the communicator (this and every later call is an `Err` until
    /// `rebuild`).
    pub fn synchronize(&self) -> Result<()> {
        let mut reasons = Vec::new();
        for rank in &self.ranks {
            let r = rank.id;
            rank.stream
                .synchronize()
                .during(|| format!("rank {r}: synchronising"))?;
            let word = rank
                .stream
                .clone_dtoh(&rank.error)
                .during(|| format!("rank {r}: error word"))?[0];
            if word != 0 {
                reasons.push(match BarrierTimeout::decode(word) {
                    Some(t) => format!("rank {r}: {t} ({:?})", self.opts.timeout),
                    None => format!("rank {r}: error word {word:#x}"),
                });
            }
        }
        self.stream()
            .synchronize()
            .during(|| "synchronising the main stream".into())?;
        if !reasons.is_empty() {
            let reason = reasons.join("; ");
            *self.broken.lock().unwrap_or_else(|p| p.into_inner()) = Some(reason.clone());
            return Err(Error::Broken { reason });
        }
        if let Some(reason) = self.broken() {
            return Err(Error::Broken { reason });
        }
        Ok(())
    }

    /// Waits for every rank, zeroes signals, counters and error words, and clears
    /// the broken state. In [`Placement::Process`] every process must call it:
    /// after zeroing, the ranks meet at the rendezvous again, so no peer launches
    /// (and signals) before every rank's zeroes are complete (TVM PR #16797).
    pub fn rebuild(&mut self) -> Result<()> {
        for rank in self.ranks.iter_mut() {
            let r = rank.id;
            rank.stream
                .synchronize()
                .during(|| format!("rank {r}: synchronising"))?;
            rank.signal.zero_async(&rank.stream)?;
            rank.stream
                .memset_zeros(&mut rank.error)
                .during(|| format!("rank {r}: zeroing"))?;
            rank.stream
                .synchronize()
                .during(|| format!("rank {r}: synchronising"))?;
        }
        if let Placement::Process {
            rank, rendezvous, ..
        } = &self.placement
        {
            crate::all_reduce::bootstrap::exchange(
                rendezvous,
                *rank,
                self.world,
                b"rebuilt",
                self.opts.join_timeout,
            )?;
        }
        *self.broken.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}
