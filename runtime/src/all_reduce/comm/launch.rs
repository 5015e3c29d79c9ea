//! Issuing one call: its inputs staged or read in place, its kernels launched on every rank.

use super::*;
use crate::extent::Extent;
use crate::launch_args::CheckedArgs;

impl Communicator {
    pub(super) fn issue_call(
        &self,
        issue: &Issue<'_>,
        inputs: &CallInputs<'_>,
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
        quant: Option<Quantize>,
    ) -> Result<()> {
        self.check_peer_access()?;
        let main = self.stream();
        let (outs, dtype, n) = self.check_outputs(inputs.bufs, outputs, call)?;
        if n == 0 {
            return Ok(());
        }
        let spec = self.spec_of(dtype, call, quant.map(|q| q.transport));
        let kernel = self.kernel(&spec)?;
        if let Some(q) = quant.filter(|q| !q.fits(self.world(), n)) {
            return Err(comm_err(
                "quantize base",
                format!(
                    "base {} + {} positions (R + 1 times n rounded up to 4) must fit in 64 bits",
                    q.base,
                    Quantize::span(self.world(), n)
                ),
            ));
        }
        let launch = Launch {
            spec: &spec,
            kernel: &kernel,
            n,
            call,
            out_addresses: &outs.addresses,
            quant,
        };
        if self.in_place(call.algo).is_some() {
            // Read in place, eager or captured: nothing staged, no table slot.
            let push_in = self.push_inputs(call.algo, inputs, n * dtype.info().bytes as usize)?;
            self.fork.fan_out(main, self.rank_streams())?;
            return self.launch_ranks(&launch, InputsAt::InPlace(push_in));
        }
        let slot = self.table_slot(issue, inputs, n, dtype, quant)?;
        self.launch_ranks(&launch, InputsAt::Table(slot))
    }

    /// The kernels need peer access: an error naming the NCCL route where it
    /// is missing.
    pub(super) fn check_peer_access(&self) -> Result<()> {
        match &self.peer_missing {
            Some(why) => Err(comm_err(
                "peer access",
                format!(
                    "{why}: the kernels need peer access; this communicator runs its calls through NCCL (all_reduce_routed)"
                ),
            )),
            None => Ok(()),
        }
    }

    /// The input table slot a table-reading kernel takes: captured calls read
    /// their inputs in place through a slot filled at end_capture; eager calls
    /// stage them (here) and use slot 0. A quantized call always stages
    /// (quantizing is the staging).
    pub(super) fn table_slot(
        &self,
        issue: &Issue<'_>,
        inputs: &CallInputs<'_>,
        n: usize,
        dtype: DType,
        quant: Option<Quantize>,
    ) -> Result<u32> {
        let slot = if issue.capturing && quant.is_none() {
            self.graph
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(inputs.addresses())?
        } else {
            crate::all_reduce::graph::EAGER_SLOT
        };
        self.stage_inputs(self.stream(), inputs, n, dtype, issue.capturing, quant)?;
        Ok(slot)
    }

    /// Where a kernel that reads its inputs in place (the push kernels) finds
    /// its buffers; `None` for the others.
    pub(super) fn in_place(&self, algo: AllReduceAlgo) -> Option<InPlace> {
        match algo {
            AllReduceAlgo::Push => Some(InPlace {
                grid: self.push_blocks,
                offset: self.push_offset,
                region: self.push_window,
                max_bytes: self.push_window,
                option: "push_bytes",
            }),
            AllReduceAlgo::PushLl => Some(InPlace {
                grid: self.ll_blocks,
                offset: self.ll_offset,
                region: 2 * self.ll_max,
                max_bytes: self.ll_max,
                option: "ll_bytes",
            }),
            AllReduceAlgo::OneShot | AllReduceAlgo::TwoStage => None,
        }
    }

    /// A push kernel's inputs, read in place: each 16-byte aligned and the
    /// message within its window. The automatic choice falls back to one-shot
    /// where this refuses.
    pub(super) fn push_inputs<'i>(
        &self,
        algo: AllReduceAlgo,
        inputs: &'i CallInputs<'_>,
        bytes: usize,
    ) -> Result<&'i [u64]> {
        let Some(at) = self.in_place(algo) else {
            return Err(comm_err(
                "algorithm",
                format!(
                    "the {algo} kernel reads its inputs from the staging buffers, not in place"
                ),
            ));
        };
        if bytes as u64 > at.max_bytes {
            return Err(comm_err(
                "push window",
                format!(
                    "{bytes} bytes per rank: the {algo} kernel takes at most {} (CommOptions::{})",
                    at.max_bytes, at.option
                ),
            ));
        }
        let addresses = inputs.addresses();
        if let Some((i, a)) = addresses
            .iter()
            .enumerate()
            .find(|(_, a)| !a.is_multiple_of(u64::from(PACK_BYTES)))
        {
            return Err(comm_err(
                "alignment",
                format!(
                    "local rank {i}'s input starts at {a:#x}: the {algo} kernel reads inputs in place, 16-byte aligned"
                ),
            ));
        }
        Ok(addresses)
    }

    /// The call checked as every kernel call is ([`check_call_for`]: its
    /// dtype and length), then the outputs' addresses, read for writing (see
    /// [`CallOutputs`]). A buffer's address is read on its own rank's stream:
    /// cudarc orders a tracked buffer through events of the buffer's context,
    /// which a stream of another GPU cannot record (CUDA_ERROR_INVALID_CONTEXT
    /// on the next call, one GPU per rank).
    pub(super) fn check_outputs<'o>(
        &'o self,
        inputs: &[&dyn KernelInput],
        outputs: &'o mut [&mut dyn KernelOutput],
        call: Call,
    ) -> Result<(CallOutputs<'o>, DType, usize)> {
        // The alignment needs the addresses, which wait until the rest passed.
        let (dtype, n) = check_call_for(
            self.ranks.len() as u32,
            self.world(),
            self.opts.max_bytes,
            inputs,
            outputs,
            &[],
            call,
        )?;
        let (addresses, written): (Vec<u64>, Vec<SyncOnDrop<'o>>) = outputs
            .iter_mut()
            .zip(&self.ranks)
            .map(|(o, r)| o.write_address(&r.stream))
            .unzip();
        check_output_alignment(&addresses, n)?;
        let bytes = (n * dtype.info().bytes as usize) as u64;
        for ((rank, &out), i) in self.ranks.iter().zip(&addresses).zip(0..) {
            let staging = rank.staging.ptr();
            let staged = Extent {
                address: staging,
                bytes: rank.staging.bytes() as u64,
            };
            if n > 0
                && staged.overlaps(&Extent {
                    address: out,
                    bytes,
                })
            {
                return Err(comm_err(
                    "output",
                    format!(
                        "local rank {i}'s output {out:#x} (+{bytes} bytes) overlaps its registered staging buffer {staging:#x}, which peers read during the call"
                    ),
                ));
            }
        }
        let outputs = CallOutputs {
            addresses,
            _written: written,
        };
        Ok((outputs, dtype, n))
    }

    /// The whole all-reduce kernel of `call` over this communicator's ranks.
    pub(super) fn spec_of(
        &self,
        dtype: DType,
        call: Call,
        transport: Option<DType>,
    ) -> AllReduceSpec {
        AllReduceSpec {
            world: self.world(),
            dtype,
            op: call.op,
            algo: call.algo,
            cp_async: call.cp_async,
            transport,
            stage: ArStage::Whole,
            norm: None,
        }
    }

    /// Each rank's input into its registered staging buffer (quantized by a
    /// reduce_copy kernel for a quantized call; left in place for a captured
    /// call, which reads it through a table slot), after the main stream's work.
    pub(super) fn stage_inputs(
        &self,
        main: &Arc<CudaStream>,
        inputs: &CallInputs<'_>,
        n: usize,
        dtype: DType,
        capturing: bool,
        quant: Option<Quantize>,
    ) -> Result<()> {
        let bytes = n * dtype.info().bytes as usize;
        let tables = self.tables;
        self.fork.fan_out(main, self.rank_streams())?;
        for (i, rank) in self.ranks.iter().enumerate() {
            let r = rank.id as usize;
            if let Some(q) = quant {
                let kernel = self.runtimes[rank.rt].reduce_copy(&q.reduce_copy_spec())?;
                let mut staging = Registered {
                    address: tables[0].0[r],
                    dtype: q.transport,
                    len: n,
                    _comm: std::marker::PhantomData,
                };
                let args = ReduceCopyArgs {
                    scalar: None,
                    stochastic: Some(Stochastic {
                        seed: q.seed,
                        base: q.input_base(rank.id, n),
                    }),
                };
                kernel.launch_with(
                    &rank.stream,
                    &[inputs.bufs[i]],
                    &mut [&mut staging],
                    args,
                    LaunchOptions::default(),
                )?;
                continue;
            }
            if capturing {
                continue;
            }
            let src = inputs.addresses()[i];
            if src != tables[0].0[r] {
                // The raw copy runs in the thread's current context, which the
                // address reads above may have left on another rank's GPU.
                self.runtimes[rank.rt]
                    .context()
                    .bind_to_thread()
                    .during(|| format!("rank {r}: binding its context"))?;
                // SAFETY: `src` holds `bytes` bytes (checked: n elements of dtype);
                // the staging buffer holds max_bytes >= bytes; both are device
                // memory of contexts with peer access (or the same context).
                unsafe {
                    sys::cuMemcpyDtoDAsync_v2(tables[0].0[r], src, bytes, rank.stream.cu_stream())
                }
                .result()
                .during(|| format!("rank {r}: staging its input"))?;
            }
        }
        Ok(())
    }

    /// Launches the kernel of `launch` on every local rank's stream (the same
    /// grid on each), reading its inputs where `inputs` says, then orders the
    /// main stream after them.
    pub(super) fn launch_ranks(&self, launch: &Launch<'_>, inputs: InputsAt<'_>) -> Result<()> {
        let Launch {
            spec,
            kernel,
            n,
            call,
            out_addresses,
            quant,
        } = *launch;
        let push_in = match inputs {
            InputsAt::InPlace(a) => Some(a),
            InputsAt::Table(_) => None,
        };
        let main = self.stream();
        let tables = self.tables;
        let timeout_ns = self.opts.timeout.as_nanos().min(u64::MAX as u128) as u64;
        let op_arg = call.scalar.unwrap_or(0.0);
        let (seed, partial_base) =
            quant.map_or((0, 0), |q| (q.seed, q.partial_base(self.world(), n)));
        // One grid for every rank.
        let blocks = self.blocks(spec, kernel.share, n);
        // A push kernel takes its own input and its buffers where the others
        // take the input table and the scratch buffers.
        let at = self.in_place(spec.algo).filter(|_| push_in.is_some());
        let third = match at {
            Some(at) => PtrTable(tables[2].0.map(|a| if a == 0 { 0 } else { a + at.offset })),
            None => tables[2],
        };
        for ((i, rank), func) in self.ranks.iter().enumerate().zip(&kernel.funcs) {
            let r = rank.id as usize;
            if call.skip_rank == Some(r as u32) {
                continue;
            }
            let out = out_addresses[i];
            let err = rank.error_ptr;
            let in_table = match inputs {
                InputsAt::InPlace(a) => a[i],
                InputsAt::Table(slot) => rank.in_tables.ptr() + u64::from(slot) * TABLE_BYTES,
            };
            let rank_u32 = r as u32;
            let n64 = n as u64;
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (spec.threads(), 1, 1),
                shared_mem_bytes: 0,
            };
            let mut args = CheckedArgs::new(&rank.stream, func, spec, &kernel.params);
            args.ptr(&in_table)
                .ptr(&out)
                .u64(&n64)
                .u64(&timeout_ns)
                .ptr(&err);
            if let Some(at) = &at {
                args.u64(&at.region);
            }
            // The kernel declares its world's entries of each table; the
            // driver copies that many from these 8-entry tables.
            args.u32(&rank_u32)
                .f32(&op_arg)
                .peer_table(&tables[1])
                .peer_table(&third);
            if quant.is_some() {
                args.u64(&seed).u64(&partial_base);
            }
            let mut args = args.ready()?;
            // SAFETY: the kernel was generated from `spec` and takes, in this
            // order: the input table's device address (a live slot of 64
            // bytes; a captured call's slot is written at end_capture, before
            // any replay), or for a push kernel this rank's 16-byte aligned
            // input of n elements (checked by push_inputs); the output pointer,
            // n (u64), the timeout (u64) and the error word's pointer; for a
            // push kernel its region's bytes (u64), two sets of world regions
            // of which every entry of its table holds (scratch_bytes; an LL
            // region holds two lines, 32 bytes, per 16 bytes of a message
            // within ll_max); rank (u32), the op's scalar (f32); two tables
            // by value, of which the kernel declares the world's entries (the
            // driver copies that many of the 8 pushed); then for a quantized
            // spec the seed and the partials' first Philox position (u64
            // each). Every table entry is a live buffer of this
            // communicator sized for n elements (check_call), or a captured
            // input of n elements that the caller keeps alive while the graph
            // replays; the output holds n elements and is 16-byte aligned;
            // the grid is the same on every rank.
            unsafe { args.launch(cfg) }
                .during(|| format!("rank {r}: launching {}", spec.name()))?;
        }
        self.fork.fan_in(main, self.rank_streams())
    }

    /// Each local rank's number and stream, in `ranks` order.
    pub(super) fn rank_streams(&self) -> impl Iterator<Item = (u32, &Arc<CudaStream>)> {
        self.ranks.iter().map(|r| (r.id, &r.stream))
    }
}
