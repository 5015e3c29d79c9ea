//! Setting a communicator up: runtimes, buffers, peer access or the IPC join, NCCL.

use super::*;

impl Communicator {
    /// Sets up every rank of `placement`: a runtime per GPU (peer access enabled
    /// and proven for [`Placement::Devices`]), its buffers allocated and zeroed.
    pub fn new(placement: Placement, opts: CommOptions) -> Result<Communicator> {
        // A bad override fails before any GPU work.
        let forced = opts.algos.clone().map(AlgoTable::with_env).transpose()?;
        if forced.is_none() {
            AlgoTable::ladder().with_env()?;
        }
        let (ordinals, world, local): (Vec<usize>, u32, Vec<u32>) = match &placement {
            Placement::Devices { ordinals } => {
                let w = ordinals.len() as u32;
                (ordinals.clone(), w, (0..w).collect())
            }
            Placement::SameGpu { ordinal, world } => {
                (vec![*ordinal], *world, (0..*world).collect())
            }
            Placement::Process {
                ordinal,
                rank,
                world,
                gpu_share,
                ..
            } => {
                if *rank >= *world || *gpu_share == 0 || *gpu_share > *world {
                    return Err(comm_err(
                        "placement",
                        format!(
                            "rank {rank} of world {world} sharing its GPU with {gpu_share}: rank below world, 1 <= gpu_share <= world"
                        ),
                    ));
                }
                (vec![*ordinal], *world, vec![*rank])
            }
        };
        let spec = AllReduceSpec {
            world,
            ..AllReduceSpec::default()
        };
        spec.validate()?;
        let max_blocks = opts.max_blocks.unwrap_or(DEFAULT_MAX_BLOCKS);
        let ll_cap = opts.ll_blocks.unwrap_or(MAX_BLOCKS);
        for (what, blocks) in [("max_blocks", max_blocks), ("ll_blocks", ll_cap)] {
            if !(1..=MAX_BLOCKS).contains(&blocks) {
                return Err(comm_err(
                    what,
                    format!(
                        "{blocks}: a launch uses 1 to {MAX_BLOCKS} blocks per rank (the signal buffer's slots)"
                    ),
                ));
            }
        }
        if opts.max_bytes == 0 || opts.timeout.is_zero() || opts.join_timeout.is_zero() {
            return Err(comm_err(
                "options",
                format!(
                    "max_bytes {}, timeout {:?} and join_timeout {:?} must be positive",
                    opts.max_bytes, opts.timeout, opts.join_timeout
                ),
            ));
        }
        let runtimes = ordinals
            .iter()
            .map(|&ordinal| {
                Runtime::with_options(crate::RuntimeOptions {
                    ordinal,
                    no_event_tracking: opts.no_event_tracking,
                    ..crate::RuntimeOptions::default()
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let algos = match forced {
            Some(t) => t,
            None => AlgoTable::for_tuning(&runtimes[0].tuning().tuning).with_env()?,
        };
        // Without proven peer access the kernels cannot run; with NCCL asked for
        // (and found, below) every call goes through NCCL instead.
        let mut peer_missing: Option<String> = None;
        'pairs: for i in 0..runtimes.len() {
            for j in i + 1..runtimes.len() {
                if let Err(e) =
                    crate::peer::enable_and_prove(runtimes[i].context(), runtimes[j].context())
                {
                    if opts.nccl == NcclUse::Off {
                        return Err(e);
                    }
                    peer_missing = Some(format!("GPUs {} and {}: {e}", ordinals[i], ordinals[j]));
                    break 'pairs;
                }
            }
        }
        let staging_bytes = opts.max_bytes.next_multiple_of(PACK_BYTES as usize);
        // Scratch: the two-stage slices, then the push buffer (its own bytes:
        // a push call may start while a peer still gathers from the slices).
        let push_window = opts
            .push_bytes
            .unwrap_or((32 << 20) / world as usize)
            .min(opts.max_bytes)
            .next_multiple_of(PACK_BYTES as usize);
        let push_offset = ((staging_bytes / world as usize).next_multiple_of(PACK_BYTES as usize)
            + PACK_BYTES as usize)
            .next_multiple_of(256);
        // Whole groups of 32 packs: the LL kernel lays a group's lines out
        // together (ll_line in the template).
        let ll_max = opts
            .ll_bytes
            .unwrap_or(512 << 10)
            .min(opts.max_bytes)
            .next_multiple_of(32 * PACK_BYTES as usize);
        let ll_offset = push_offset + 2 * world as usize * push_window;
        // The fused all-reduce + norm's LL buffer, as large: its lines' flags
        // are its own call counts, which the plain LL kernel's lines must
        // never be mistaken for.
        let fused_ll_offset = ll_offset + 2 * world as usize * 2 * ll_max;
        // The fused all-reduce + norm's push buffer: the push kernel's
        // window of x, then a flag word a row (a row is at least a pack).
        let fused_push_region =
            (push_window + push_window / PACK_BYTES as usize * 4).next_multiple_of(256);
        let fused_push_offset = fused_ll_offset + 2 * world as usize * 2 * ll_max;
        // The fused two-stage kernel's slices: two sets (by its call count's
        // parity), each a rank's slice of ceil(rows / world) whole rows: at
        // most max_bytes / world and a row, more than the two-stage kernel's
        // slices hold.
        let fused_slices_offset = fused_push_offset + 2 * world as usize * fused_push_region;
        let fused_slices_set =
            (staging_bytes / world as usize + MAX_ROW_BYTES).next_multiple_of(256);
        let scratch_bytes = fused_slices_offset + 2 * fused_slices_set;
        let per_gpu = match &placement {
            Placement::Devices { .. } => 1,
            Placement::SameGpu { world, .. } => *world,
            Placement::Process { gpu_share, .. } => *gpu_share,
        };
        // One block per SM is always resident (the kernels' launch bound).
        let sms = runtimes[0].device().sm_count / per_gpu;
        let push_blocks = sms.clamp(1, max_blocks);
        let ll_blocks = sms.clamp(1, ll_cap);
        let mut ranks = Vec::new();
        for &id in &local {
            let r = id as usize;
            let rt = if runtimes.len() == 1 { 0 } else { r };
            let ctx = runtimes[rt].context();
            // The first local rank issues on the main stream itself: one
            // cross-stream hop less each way per call, and none at all with
            // one rank per process.
            let stream = if ranks.is_empty() {
                runtimes[rt].stream().clone()
            } else {
                ctx.new_stream()
                    .during(|| format!("rank {r}: creating its stream"))?
            };
            let alloc = |bytes: usize| LegacyAlloc::zeroed(ctx, bytes);
            let error = stream
                .alloc_zeros::<u32>(1)
                .during(|| format!("rank {r}: error word"))?;
            let rank = Rank {
                id,
                rt,
                error_ptr: addr(&error, &stream),
                error,
                staging: alloc(staging_bytes)?,
                scratch: alloc(scratch_bytes)?,
                // Zeroed (synchronously) before any peer learns its address.
                signal: alloc(signal::BYTES)?,
                in_tables: alloc((1 + opts.graph_slots as usize) * TABLE_BYTES as usize)?,
                stream,
            };
            ranks.push(rank);
        }
        for r in &ranks {
            r.stream
                .synchronize()
                .during(|| "zeroing the signal buffers".into())?;
        }
        let mut tables = [PtrTable::default(); 3];
        let mut mappings = Vec::new();
        if let Placement::Process {
            rank, rendezvous, ..
        } = &placement
        {
            let mut own = CudaRank {
                rank: &mut ranks[0],
                ctx: runtimes[0].context().clone(),
                grids: [push_blocks, ll_blocks],
            };
            let joined =
                crate::all_reduce::ipc::join(&mut own, *rank, world, std::process::id(), |card| {
                    crate::all_reduce::bootstrap::exchange(
                        rendezvous,
                        *rank,
                        world,
                        card,
                        opts.join_timeout,
                    )
                })?;
            for (t, j) in tables.iter_mut().zip(joined.tables) {
                t.0 = j;
            }
            mappings = joined.mappings;
        } else {
            for rank in &ranks {
                let r = rank.id as usize;
                tables[0].0[r] = rank.staging.ptr();
                tables[1].0[r] = rank.signal.ptr();
                tables[2].0[r] = rank.scratch.ptr();
            }
        }
        for rank in &ranks {
            runtimes[rank.rt]
                .context()
                .bind_to_thread()
                .during(|| "binding the context".into())?;
            write_table(
                &rank.in_tables,
                crate::all_reduce::graph::EAGER_SLOT,
                &tables[0].0,
            )?;
        }
        let graph_slots = opts.graph_slots;
        let nccl = nccl_for(&placement, &runtimes, opts.nccl, opts.join_timeout)?;
        if let (Some(why), None) = (&peer_missing, &nccl) {
            return Err(comm_err(
                "peer access",
                format!("{why}; the kernels need peer access and NCCL is not available either"),
            ));
        }
        let fork = StreamFork::new(runtimes[0].stream(), ranks.iter().map(|r| &r.stream))?;
        Ok(Communicator {
            fork,
            kernels: KernelCache::default(),
            placement,
            world,
            tables,
            _mappings: mappings,
            runtimes,
            ranks,
            opts,
            algos,
            broken: Mutex::new(None),
            issuing: Mutex::new(()),
            graph: Mutex::new(GraphBuffers::new(graph_slots)),
            graph_mappings: Mutex::new(PeerMappings::default()),
            nccl,
            peer_missing,
            push_window: push_window as u64,
            push_offset: push_offset as u64,
            ll_max: ll_max as u64,
            ll_offset: ll_offset as u64,
            fused_ll_offset: fused_ll_offset as u64,
            fused_push_offset: fused_push_offset as u64,
            fused_push_region: fused_push_region as u64,
            fused_slices_offset: fused_slices_offset as u64,
            fused_slices_set: fused_slices_set as u64,
            push_blocks,
            ll_blocks,
            max_blocks,
        })
    }
}

/// This process's rank as [`crate::all_reduce::ipc::join`] sees it.
struct CudaRank<'a> {
    rank: &'a mut Rank,
    ctx: Arc<cudarc::driver::CudaContext>,
    /// The push kernels' grids (push, LL push).
    grids: [u32; 2],
}

impl crate::all_reduce::ipc::RankBuffers for CudaRank<'_> {
    type Mapping = OpenedIpc;

    fn zero_signals(&mut self) -> Result<()> {
        let rank = &mut *self.rank;
        let r = rank.id;
        rank.signal.zero_async(&rank.stream)?;
        rank.stream
            .memset_zeros(&mut rank.error)
            .during(|| format!("rank {r}: zeroing its error word"))?;
        rank.stream
            .synchronize()
            .during(|| format!("rank {r}: waiting for the zeroes"))
    }

    fn sizes(&self) -> [u64; 3] {
        let r = &self.rank;
        [r.staging.bytes(), r.signal.bytes(), r.scratch.bytes()].map(|b| b as u64)
    }

    fn grids(&self) -> [u32; 2] {
        self.grids
    }

    fn addresses(&self) -> [u64; 3] {
        let r = &self.rank;
        [r.staging.ptr(), r.signal.ptr(), r.scratch.ptr()]
    }

    fn handles(&mut self) -> Result<[IpcHandle; 3]> {
        self.ctx
            .bind_to_thread()
            .during(|| "binding the context to take IPC handles".into())?;
        let [a, b, c] = self.addresses();
        Ok([
            crate::peer::get_mem_handle(a)?,
            crate::peer::get_mem_handle(b)?,
            crate::peer::get_mem_handle(c)?,
        ])
    }

    fn open(
        &mut self,
        peer: &crate::all_reduce::ipc::RankCard,
        handle: &IpcHandle,
    ) -> Result<(u64, OpenedIpc)> {
        let m = OpenedIpc::open(&self.ctx, handle).map_err(|e| {
            comm_err(
                "IPC join",
                format!(
                    "rank {}: opening a buffer of rank {} (process {}) failed: {e}",
                    self.rank.id, peer.rank, peer.pid
                ),
            )
        })?;
        Ok((m.ptr(), m))
    }
}

/// The NCCL communicator `use_` asks for over `placement`'s ranks, on the
/// communicator's contexts and main stream.
pub(super) fn nccl_for(
    placement: &Placement,
    runtimes: &[Runtime],
    use_: NcclUse,
    join_timeout: Duration,
) -> Result<Option<NcclComm>> {
    if use_ == NcclUse::Off {
        return Ok(None);
    }
    let lib = match (NcclLib::get(), use_) {
        (Ok(lib), _) => lib,
        (Err(Error::NcclUnavailable { .. }), NcclUse::IfAvailable) => return Ok(None),
        (Err(e), _) => return Err(e),
    };
    let nccl_placement = match placement {
        Placement::Devices { ordinals } => NcclPlacement::Devices {
            ordinals: ordinals.clone(),
        },
        Placement::Process {
            ordinal,
            rank,
            world,
            rendezvous,
            gpu_share: 1,
        } => NcclPlacement::Process {
            ordinal: *ordinal,
            rank: *rank,
            world: *world,
            rendezvous: rendezvous.clone(),
            join_timeout,
        },
        _ if use_ == NcclUse::IfAvailable => return Ok(None),
        other => {
            return Err(comm_err(
                "NCCL",
                format!(
                    "{other:?}: NCCL allows one rank per GPU in a communicator, and these ranks share one"
                ),
            ));
        }
    };
    let ctxs = runtimes.iter().map(|rt| rt.context().clone()).collect();
    NcclComm::with_contexts(lib, nccl_placement, ctxs, runtimes[0].stream().clone()).map(Some)
}
