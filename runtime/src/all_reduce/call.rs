//! One all-reduce call and its checks, before any GPU work: what the
//! communicator and the NCCL backend both take.

use redjit_codegen::spec::all_reduce::PACK_BYTES;
use redjit_codegen::{AllReduceAlgo, DType, Op};

use crate::elem::{KernelInput, KernelOutput};
use crate::error::{Error, Result};

/// One call's reduction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Call {
    /// One-shot or two-stage.
    pub algo: AllReduceAlgo,
    /// Double-buffer the two-stage reduce-scatter through shared memory with
    /// `cp.async` (two-stage only).
    pub cp_async: bool,
    /// How the ranks' inputs are combined.
    pub op: Op,
    /// premulsum's factor, avg's count; `None` for other ops.
    pub scalar: Option<f32>,
    /// Test hook: this rank's kernel is not launched (the others must time out).
    #[doc(hidden)]
    pub skip_rank: Option<u32>,
}

impl Call {
    /// A sum with `algo`, no `cp.async`.
    pub fn sum(algo: AllReduceAlgo) -> Call {
        Call {
            algo,
            cp_async: false,
            op: Op::Sum,
            scalar: None,
            skip_rank: None,
        }
    }
}

/// A communicator error: what was wrong and the rule.
pub(super) fn comm_err(what: &str, rule: String) -> Error {
    Error::Comm {
        what: what.into(),
        rule,
    }
}

/// Validates one call without a GPU (`out_addresses`: each output's device
/// address); returns the dtype and element count.
pub fn check_call(
    world: u32,
    max_bytes: usize,
    inputs: &[&dyn KernelInput],
    outputs: &[&mut dyn KernelOutput],
    out_addresses: &[u64],
    call: Call,
) -> Result<(DType, usize)> {
    check_call_for(
        world,
        world,
        max_bytes,
        inputs,
        outputs,
        out_addresses,
        call,
    )
}

/// [`check_call`] for a process that launches `local` of the `world` ranks
/// (one in [`super::Placement::Process`]): one input and output per local rank.
pub fn check_call_for(
    local: u32,
    world: u32,
    max_bytes: usize,
    inputs: &[&dyn KernelInput],
    outputs: &[&mut dyn KernelOutput],
    out_addresses: &[u64],
    call: Call,
) -> Result<(DType, usize)> {
    let w = local as usize;
    if inputs.len() != w || outputs.len() != w {
        return Err(comm_err(
            "rank count",
            format!(
                "{} inputs and {} outputs for {local} ranks: one of each per rank this process drives",
                inputs.len(),
                outputs.len()
            ),
        ));
    }
    let dtype = inputs[0].dtype();
    let n = inputs[0].len();
    for (r, i) in inputs.iter().enumerate() {
        if i.dtype() != dtype || i.len() != n {
            return Err(comm_err(
                "sizes",
                format!(
                    "rank {r}'s input is {} x {}, rank 0's {dtype} x {n}: every rank passes the same",
                    i.dtype(),
                    i.len()
                ),
            ));
        }
    }
    for (r, o) in outputs.iter().enumerate() {
        if o.dtype() != dtype || o.len() != n {
            return Err(comm_err(
                "sizes",
                format!(
                    "rank {r}'s output is {} x {}, the inputs {dtype} x {n}",
                    o.dtype(),
                    o.len()
                ),
            ));
        }
    }
    check_output_alignment(out_addresses, n)?;
    let bytes = n * dtype.info().bytes as usize;
    if bytes > max_bytes {
        return Err(comm_err(
            "size",
            format!(
                "{bytes} bytes per rank: this communicator's buffers hold {max_bytes} (CommOptions::max_bytes)"
            ),
        ));
    }
    match (call.op.info().scalar, call.scalar) {
        (Some(meaning), None) => {
            return Err(comm_err(
                "scalar",
                format!("op {} needs {meaning}", call.op),
            ));
        }
        (None, Some(x)) => {
            return Err(comm_err(
                "scalar",
                format!("op {} takes no scalar, got {x}", call.op),
            ));
        }
        _ => {}
    }
    check_skip_rank(call.skip_rank, world)?;
    Ok((dtype, n))
}

/// The test hook's rank (`Call::skip_rank`, `AddRmsNorm::skip_rank`) is one
/// of the `world` ranks.
pub(super) fn check_skip_rank(skip: Option<u32>, world: u32) -> Result<()> {
    match skip.filter(|&s| s >= world) {
        Some(s) => Err(comm_err("skip_rank", format!("rank {s} of {world}"))),
        None => Ok(()),
    }
}

/// The kernels store whole 16-byte packs: each output (`out_addresses[r]` for
/// local rank r) starts on 16 bytes when the message is not empty.
pub(super) fn check_output_alignment(out_addresses: &[u64], n: usize) -> Result<()> {
    let misaligned = out_addresses
        .iter()
        .enumerate()
        .find(|(_, a)| n > 0 && !a.is_multiple_of(u64::from(PACK_BYTES)));
    match misaligned {
        Some((r, a)) => Err(comm_err(
            "alignment",
            format!(
                "rank {r}'s output starts at {a:#x}: outputs must start on 16 bytes (inputs may not: they are staged)"
            ),
        )),
        None => Ok(()),
    }
}
