//! The hierarchical all-reduce: within groups, across them, back.

use super::*;

impl Communicator {
    /// The hierarchical all-reduce (see the module docs): this host's ranks
    /// reduce-scatter through peer memory (the two-stage kernel's first stage,
    /// `call.cp_async` as asked), local rank i all-reduces its slice across hosts
    /// in place with `inter[i]` (an NCCL communicator of the ranks of index i on
    /// every host, driving that one rank here), and the ranks all-gather. sum,
    /// premulsum and avg go across hosts as sums (the node step applies the
    /// factor, or divides by `call.scalar`: pass the count of every rank of
    /// every host for avg); max, min and prod as themselves. `call.algo` must
    /// be two-stage, the message whole 16-byte packs, the call eager (not
    /// captured).
    pub fn all_reduce_hierarchical(
        &self,
        inputs: &[&dyn KernelInput],
        outputs: &mut [&mut dyn KernelOutput],
        call: Call,
        inter: &[&NcclComm],
    ) -> Result<()> {
        if let Some(why) = &self.peer_missing {
            return Err(comm_err(
                "peer access",
                format!("{why}: the hierarchical mode's node steps need peer access"),
            ));
        }
        let issue = self.start_issue()?;
        if issue.capturing {
            return Err(comm_err(
                "graph capture",
                "the hierarchical mode is not graph-capturable yet: issue it eagerly".into(),
            ));
        }
        if call.algo != AllReduceAlgo::TwoStage {
            return Err(comm_err(
                "algorithm",
                format!(
                    "the hierarchical mode runs the {} kernel's stages; the call asks for {}",
                    AllReduceAlgo::TwoStage,
                    call.algo
                ),
            ));
        }
        if inter.len() != self.ranks.len() {
            return Err(comm_err(
                "inter-host communicators",
                format!(
                    "{} given for {} local rank(s): one NCCL communicator per local rank",
                    inter.len(),
                    self.ranks.len()
                ),
            ));
        }
        let main = self.stream();
        let (outs, dtype, n) = self.check_outputs(inputs, outputs, call)?;
        if n == 0 {
            return Ok(());
        }
        let rs = AllReduceSpec {
            stage: ArStage::ReduceScatter,
            ..self.spec_of(dtype, call, None)
        };
        let rs_kernel = self.kernel(&rs)?;
        let pack = rs.pack_elts() as usize;
        if !n.is_multiple_of(pack) {
            return Err(comm_err(
                "message",
                format!(
                    "{n} elements of {dtype}: the hierarchical mode takes whole 16-byte packs ({pack} elements)"
                ),
            ));
        }
        let ag = AllReduceSpec {
            cp_async: false,
            stage: ArStage::AllGather,
            ..rs.clone()
        };
        let ag_kernel = self.kernel(&ag)?;
        let across = match call.op {
            Op::Max | Op::Min | Op::Prod => call.op,
            _ => Op::Sum,
        };
        let stage = |spec, kernel| Launch {
            spec,
            kernel,
            n,
            call,
            out_addresses: &outs.addresses,
            quant: None,
        };
        let ins = CallInputs::new(inputs, &self.ranks);
        self.stage_inputs(main, &ins, n, dtype, false, None)?;
        self.launch_ranks(
            &stage(&rs, &rs_kernel),
            InputsAt::Table(crate::all_reduce::graph::EAGER_SLOT),
        )?;
        // Slice r of rank r's scratch: packs [r * part, ...) of the message,
        // stored from the scratch's start (as the kernels place it).
        let packs = n / pack;
        let part = packs.div_ceil(self.world() as usize);
        for (rank, comm) in self.ranks.iter().zip(inter) {
            let r = rank.id as usize;
            let len = packs.saturating_sub(r * part).min(part);
            let op = crate::all_reduce::nccl::nccl_op(across, None, comm.world())?;
            comm.issue_in_place(&rank.stream, self.tables[2].0[r], len * pack, dtype, op)?;
        }
        self.launch_ranks(
            &stage(&ag, &ag_kernel),
            InputsAt::Table(crate::all_reduce::graph::EAGER_SLOT),
        )
    }
}
