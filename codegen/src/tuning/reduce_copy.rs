//! The reduce_copy family's table row: the threads a block of its launch
//! takes where the caller names none. It chooses no code (the kernel's source
//! is the spec's), only the grid: one hunk a warp, in blocks of `threads`.

/// A table's reduce_copy row (at most one a table; a base table's applies
/// where this one has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReduceCopyRule {
    /// Threads per block: a multiple of 32 from 32 to 1024 (a kernel whose
    /// launch bound is lower takes its bound).
    pub threads: u32,
    /// Why, in a line.
    pub reason: String,
    /// Where the measurement that decided it is committed.
    pub result: Option<String>,
    /// The line of the table it came from.
    pub line: usize,
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
