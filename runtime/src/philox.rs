//! Philox4x32-10 on the host, the CPU twin of `templates/prelude/philox.cuh`
//! (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3",
//! SC'11; constants as in Random123).
//!
//! ```
//! use redjit_runtime::philox::philox4x32_10;
//!
//! // Random123's known answer for counter 0, key 0.
//! assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]);
//! ```

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// Philox4x32 with 10 rounds on a 128-bit counter and a 64-bit key.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let [mut c0, mut c1, mut c2, mut c3] = counter;
    let [mut k0, mut k1] = key;
    for _ in 0..10 {
        let p0 = u64::from(M0) * u64::from(c0);
        let p1 = u64::from(M1) * u64::from(c2);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        (c0, c1, c2, c3) = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0);
        k0 = k0.wrapping_add(W0);
        k1 = k1.wrapping_add(W1);
    }
    [c0, c1, c2, c3]
}

/// The random word of element `i` for stochastic rounding: lane
/// `(base + i) % 4` of `philox(key = seed, counter = (base + i) / 4)`.
pub fn sr_bits(seed: u64, base: u64, i: u64) -> u32 {
    let p = base.wrapping_add(i);
    let c = p >> 2;
    philox4x32_10(
        [c as u32, (c >> 32) as u32, 0, 0],
        [seed as u32, (seed >> 32) as u32],
    )[(p & 3) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known-answer vectors of Random123's `kat_vectors` for philox4x32, 10 rounds:
    /// (counter, key, output).
    #[test]
    fn random123_known_answers() {
        let kat: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
            (
                [0; 4],
                [0; 2],
                [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8],
            ),
            (
                [u32::MAX; 4],
                [u32::MAX; 2],
                [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd],
            ),
            (
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0],
                [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1],
            ),
        ];
        for (ctr, key, want) in kat {
            assert_eq!(
                philox4x32_10(ctr, key),
                want,
                "counter {ctr:08x?} key {key:08x?}"
            );
        }
    }

    #[test]
    fn sr_bits_take_the_lane_of_the_counter() {
        let seed = 0x0123_4567_89ab_cdef;
        let words = philox4x32_10([5, 0, 0, 0], [seed as u32, (seed >> 32) as u32]);
        // base 3: elements 17..21 are positions 20..24, counter 5.
        for k in 0..4 {
            assert_eq!(sr_bits(seed, 3, 17 + k), words[k as usize]);
        }
    }
}
