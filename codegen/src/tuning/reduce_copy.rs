//! The reduce_copy family's table row: the threads a block of its launch
//! takes where the caller names none, and how many such blocks an SM holds
//! at once when the kernel writes at least the bytes it reads. It chooses no
//! code (the kernel's source is the spec's), only the launch: one hunk a warp,
//! in blocks of `threads`.

use std::collections::BTreeMap;

use crate::spec::norm::SM_SHARED_BYTES;
use crate::spec::reduce_copy::{ReduceCopySpec, UNROLLS};

/// A table's reduce_copy row (at most one a table; a base table's applies
/// where this one has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReduceCopyRule {
    /// Threads per block: a multiple of 32 from 32 to 1024 (a kernel whose
    /// launch bound is lower takes its bound).
    pub threads: u32,
    /// (unroll, blocks): at most `blocks` of those blocks an SM at once for a
    /// kernel of that unroll that writes at least as many bytes an element as
    /// it reads (`ReduceCopySpec::writes_at_least_reads`); an unroll not
    /// named, as many as fit. The launcher holds the rest off with shared
    /// memory the kernel does not use. In the table:
    /// `write_heavy_blocks_per_sm = { u4 = 9, u8 = 9 }`.
    pub write_heavy_blocks_per_sm: Vec<(u32, u32)>,
    /// Why, in a line.
    pub reason: String,
    /// Where the measurement that decided it is committed.
    pub result: Option<String>,
    /// The line of the table it came from.
    pub line: usize,
}

impl ReduceCopyRule {
    /// Blocks an SM the row holds a launch of `spec` to, if it holds it.
    pub fn held_blocks(&self, spec: &ReduceCopySpec) -> Option<u32> {
        if !spec.writes_at_least_reads() {
            return None;
        }
        self.write_heavy_blocks_per_sm
            .iter()
            .find(|&&(unroll, _)| unroll == spec.unroll)
            .map(|&(_, blocks)| blocks)
    }
}

/// Dynamic shared memory a launch takes without asking for more (CUDA's
/// default limit): the most the launcher asks for to hold blocks off an SM.
pub const HOLDING_SMEM_MAX: u32 = 48 * 1024;
/// Fewest blocks an SM `write_heavy_blocks_per_sm` may name: fewer would each
/// need more than `HOLDING_SMEM_MAX` to hold the others off an SM's shared
/// memory (5 on sm_90).
pub const MIN_HELD_BLOCKS: u32 = (SM_SHARED_BYTES as u32).div_ceil(HOLDING_SMEM_MAX);
/// Most blocks an SM holds (sm_80 and sm_90).
pub const MAX_BLOCKS_PER_SM: u32 = 32;

/// `write_heavy_blocks_per_sm` as a row may name it (`u<unroll>` keys, in
/// unroll order), else the rule it breaks.
pub(super) fn check_held_blocks(held: &BTreeMap<String, u32>) -> Result<Vec<(u32, u32)>, String> {
    let mut out = Vec::new();
    for (key, &blocks) in held {
        let unroll = key
            .strip_prefix('u')
            .and_then(|u| u.parse::<u32>().ok())
            .filter(|u| UNROLLS.contains(u))
            .ok_or_else(|| {
                format!(
                    "write_heavy_blocks_per_sm: key {key:?}: keys are u<unroll>, the unroll one of {UNROLLS:?}"
                )
            })?;
        if !(MIN_HELD_BLOCKS..=MAX_BLOCKS_PER_SM).contains(&blocks) {
            return Err(format!(
                "write_heavy_blocks_per_sm: {key} = {blocks}: blocks an SM from {MIN_HELD_BLOCKS} to {MAX_BLOCKS_PER_SM}"
            ));
        }
        out.push((unroll, blocks));
    }
    out.sort_unstable();
    Ok(out)
}

/// `threads` as a row may name it, else the rule it breaks.
pub(super) fn check_threads(threads: u32) -> Result<u32, String> {
    if (32..=1024).contains(&threads) && threads.is_multiple_of(32) {
        Ok(threads)
    } else {
        Err(format!(
            "threads = {threads}: a reduce_copy block is a multiple of 32 threads from 32 to 1024"
        ))
    }
}
