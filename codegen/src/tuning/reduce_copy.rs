//! The reduce_copy family's table row: the threads a block of its launch
//! takes where the caller names none, and how many such blocks an SM holds
//! at once when the kernel writes at least the bytes it reads. It chooses no
//! code (the kernel's source is the spec's), only the launch: one hunk a warp,
//! in blocks of `threads`.

/// A table's reduce_copy row (at most one a table; a base table's applies
/// where this one has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReduceCopyRule {
    /// Threads per block: a multiple of 32 from 32 to 1024 (a kernel whose
    /// launch bound is lower takes its bound).
    pub threads: u32,
    /// At most this many of those blocks an SM at once, for a kernel that
    /// writes at least as many bytes an element as it reads
    /// (`ReduceCopySpec::writes_at_least_reads`); `None`: as many as fit.
    /// The launcher holds the rest off with shared memory the kernel does not
    /// use.
    pub write_heavy_blocks_per_sm: Option<u32>,
    /// Why, in a line.
    pub reason: String,
    /// Where the measurement that decided it is committed.
    pub result: Option<String>,
    /// The line of the table it came from.
    pub line: usize,
}

/// Fewest blocks an SM `write_heavy_blocks_per_sm` may name: below 5 the
/// shared memory that holds the others off passes the 48 KiB a launch takes
/// without asking.
pub const MIN_CAPPED_BLOCKS: u32 = 5;
/// Most blocks an SM holds (sm_80 and sm_90).
pub const MAX_BLOCKS_PER_SM: u32 = 32;

/// `write_heavy_blocks_per_sm` as a row may name it, else the rule it breaks.
pub(super) fn check_capped_blocks(blocks: u32) -> Result<u32, String> {
    if (MIN_CAPPED_BLOCKS..=MAX_BLOCKS_PER_SM).contains(&blocks) {
        Ok(blocks)
    } else {
        Err(format!(
            "write_heavy_blocks_per_sm = {blocks}: blocks an SM from {MIN_CAPPED_BLOCKS} to {MAX_BLOCKS_PER_SM}"
        ))
    }
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
