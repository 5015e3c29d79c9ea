//! A stable 128-bit content hash (FNV-1a) for cache keys and entry checksums.
//!
//! Stable across runs, platforms and Rust versions (std's hashers promise none of
//! that), and small enough not to need a dependency. It guards against accidents
//! (truncation, bit rot, stale entries), not against an adversary who can write
//! the cache directory.

const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
const PRIME: u128 = 0x0000000001000000000000000000013B;

#[derive(Clone, Copy)]
pub struct Fnv128(u128);

impl Default for Fnv128 {
    fn default() -> Self {
        Fnv128(OFFSET)
    }
}

impl Fnv128 {
    pub fn update(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
        self
    }

    /// Hashes a length-prefixed field, so ("ab","c") and ("a","bc") differ.
    pub fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.update(&(bytes.len() as u64).to_le_bytes())
            .update(bytes)
    }

    pub fn finish(&self) -> u128 {
        self.0
    }
}

pub fn fnv128(bytes: &[u8]) -> u128 {
    Fnv128::default().update(bytes).finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // FNV-1a 128 of "" is the offset basis; of "a" it is the published value.
        assert_eq!(fnv128(b""), OFFSET);
        assert_eq!(fnv128(b"a"), 0xd228cb696f1a8caf78912b704e4a8964);
    }

    #[test]
    fn fields_are_delimited() {
        let a = Fnv128::default().field(b"ab").field(b"c").finish();
        let b = Fnv128::default().field(b"a").field(b"bc").finish();
        assert_ne!(a, b);
    }
}
