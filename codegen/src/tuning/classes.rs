//! The shape classes a tuned row serves, shared by `redjit tune` (which
//! writes one row a class) and the runtime's autotune (which keeps one pick a
//! class).

/// Row-count classes: latency-bound calls, a few waves, and many.
pub const ROW_CLASSES: &[(u64, u64)] = &[(1, 32), (33, 256), (257, 2048), (2049, u64::MAX)];

/// The index in [`ROW_CLASSES`] of the class holding `rows` (0 rows: the first).
pub fn row_class(rows: u64) -> usize {
    ROW_CLASSES
        .iter()
        .position(|&(lo, hi)| (lo..=hi).contains(&rows))
        .unwrap_or(0)
}

/// The row-length class of `cols`: `(hi / 2 + 1)..=hi`, `hi` the next power of two.
pub fn cols_class(cols: u64) -> (u64, u64) {
    let hi = cols.max(1).next_power_of_two();
    (hi / 2 + 1, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_every_row_count() {
        assert_eq!(ROW_CLASSES[0].0, 1);
        assert_eq!(ROW_CLASSES.last().unwrap().1, u64::MAX);
        for w in ROW_CLASSES.windows(2) {
            assert_eq!(w[0].1 + 1, w[1].0);
        }
        assert_eq!(row_class(0), 0);
        assert_eq!(row_class(32), 0);
        assert_eq!(row_class(33), 1);
        assert_eq!(row_class(u64::MAX), ROW_CLASSES.len() - 1);
        assert_eq!(cols_class(4096), (2049, 4096));
        assert_eq!(cols_class(4097), (4097, 8192));
        assert_eq!(cols_class(1), (1, 1));
    }
}
