//! The intra-node all-reduce (issue 12, seeds 003 and 004): [`Communicator`]
//! (see [`comm`] for an example), the barrier's model ([`protocol`]), the
//! rendezvous of ranks in separate processes ([`bootstrap`]) and how such a
//! rank joins its peers through CUDA IPC ([`ipc`]), CUDA-graph bookkeeping
//! ([`graph`]), the algorithm-choice table ([`choice`]) and the NCCL backend
//! ([`nccl`]); [`quant`] the quantized (bf16-transport) all-reduce.

#![warn(missing_docs)]

pub mod bootstrap;
mod call;
pub mod choice;
pub mod comm;
mod fork;
pub mod graph;
pub mod ipc;
mod kernels;
pub mod nccl;
pub mod protocol;
pub mod quant;

pub use comm::{
    AddRmsNorm, ArFp8Scales, Call, CommOptions, Communicator, DEFAULT_MAX_BLOCKS, NcclUse,
    Placement, Registered, check_call, check_call_for,
};
pub use quant::Quantize;
