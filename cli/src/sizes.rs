//! Element counts as users write them: `1000`, `1K` (2^10), `16M` (2^24), `1G`
//! (2^30), `2^28`, comma-separated for a sweep (`1K,1M,2^28`).

/// One size: a plain number, a binary suffix K/M/G, or a power of two `2^P`.
pub fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let bad = |why: &str| {
        format!("{s:?} is not a size ({why}; expected N, NK, NM, NG or 2^P, e.g. 1K,1M,2^28)")
    };
    if t.is_empty() {
        return Err(bad("empty"));
    }
    let value: Option<u128> = if let Some(p) = t.strip_prefix("2^") {
        let p: u32 = p.parse().map_err(|_| bad("the power is not a number"))?;
        if p > 62 {
            return Err(bad("the power is above 62"));
        }
        Some(1u128 << p)
    } else {
        let (digits, scale) = match t.char_indices().last() {
            Some((i, c)) if c.eq_ignore_ascii_case(&'k') => (&t[..i], 1u128 << 10),
            Some((i, c)) if c.eq_ignore_ascii_case(&'m') => (&t[..i], 1 << 20),
            Some((i, c)) if c.eq_ignore_ascii_case(&'g') => (&t[..i], 1 << 30),
            _ => (t, 1),
        };
        let n: u128 = digits
            .trim()
            .replace('_', "")
            .parse()
            .map_err(|_| bad("not a number"))?;
        n.checked_mul(scale)
    };
    match value {
        Some(0) => Err(bad("it must be at least 1")),
        Some(v) if v <= usize::MAX as u128 && v < (1 << 62) => Ok(v as usize),
        _ => Err(bad("too large")),
    }
}

/// A comma-separated list of sizes, in the order given, without repeats.
pub fn parse_sizes(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for item in s.split(',') {
        let n = parse_size(item).map_err(|e| format!("bad size list {s:?}: {e}"))?;
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

/// Powers of two from 1024 as `2^P` (as the user may write them), else the number.
pub fn fmt_size(n: u64) -> String {
    if n.is_power_of_two() && n >= 1024 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_every_form() {
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("1K").unwrap(), 1024);
        assert_eq!(parse_size("16m").unwrap(), 16 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("2^28").unwrap(), 1 << 28);
        assert_eq!(parse_size(" 100_003 ").unwrap(), 100_003);
        assert_eq!(
            parse_sizes("1K,1M,2^28,1K").unwrap(),
            vec![1024, 1 << 20, 1 << 28]
        );
    }

    #[test]
    fn bad_sizes_say_why_on_one_line() {
        for bad in ["", "x", "1T", "2^x", "2^63", "0", "-5", "1.5M", "1K,,2"] {
            let e = parse_sizes(bad).unwrap_err();
            assert!(e.starts_with("bad size list"), "{e}");
            assert!(e.contains("e.g. 1K,1M,2^28"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn sizes_print_as_powers_of_two() {
        assert_eq!(fmt_size(1 << 28), "2^28");
        assert_eq!(fmt_size(100_003), "100003");
        assert_eq!(fmt_size(512), "512");
    }
}
