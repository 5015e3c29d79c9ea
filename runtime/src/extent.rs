//! The bytes a buffer covers, and whether two such ranges share a byte: the
//! one overlap test of the launchers' aliasing checks.

/// `bytes` bytes from `address` (device addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Extent {
    pub(crate) address: u64,
    pub(crate) bytes: u64,
}

impl Extent {
    /// Whether the two ranges overlap: each starts before the other ends (an
    /// empty range strictly inside another counts).
    pub(crate) fn overlaps(&self, other: &Extent) -> bool {
        self.address < other.address.saturating_add(other.bytes)
            && other.address < self.address.saturating_add(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::Extent;

    #[test]
    fn ranges_overlap_when_they_share_a_byte() {
        let e = |address, bytes| Extent { address, bytes };
        assert!(e(0, 16).overlaps(&e(15, 1)));
        assert!(!e(0, 16).overlaps(&e(16, 1)));
        assert!(e(8, 0).overlaps(&e(0, 16)));
        assert!(!e(16, 0).overlaps(&e(0, 16)));
        assert!(e(u64::MAX - 4, 8).overlaps(&e(u64::MAX - 1, 1)));
    }
}
