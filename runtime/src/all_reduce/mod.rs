//! The intra-node all-reduce (issue 12, seeds 003 and 004).

pub mod bootstrap;
pub mod comm;
pub mod protocol;

pub use comm::{Call, CommOptions, Communicator, Placement, check_call};
