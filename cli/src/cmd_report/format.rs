//! Cell formats the report's tables share (a leaf: it imports nothing of the
//! report, so every table module may use it).

/// A ratio cell, "-" where there is none.
pub(super) fn ratio(v: Option<f64>) -> String {
    v.map_or("-".into(), |r| format!("{r:.2}×"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_has_two_decimals_and_a_sign() {
        assert_eq!(ratio(Some(1.0 / 3.0)), "0.33×");
        assert_eq!(ratio(None), "-");
    }
}
