//! The all-reduce's table rows: which kernel a message of each size takes
//! among a world of ranks, and from which size NCCL takes over.

/// One row of a table's all-reduce section: the byte thresholds (per rank) of
/// one world size. A message runs the LL push kernel up to `ll_max`, else the
/// push kernel up to `push_max` (`push_max_copied` for inputs first copied
/// into the staging buffers, where larger), else one-shot up to
/// `one_shot_max`, else two-stage, with `cp.async` from `cp_async_min` (on at
/// most the narrow grid up to `narrow_max`); where the communicator has NCCL,
/// from `nccl_min` (`nccl_min_copied` for copied inputs) NCCL runs it. The
/// fused all-reduce + norm runs on the LL path where the plain call does, else
/// on the push path up to `fused_push_max`, else one-shot. `None`: never.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllReduceRule {
    /// Ranks in the communicator (2..=8).
    pub world: u32,
    /// Largest message of the LL push kernel.
    pub ll_max: Option<u64>,
    /// Largest message of the push kernel.
    pub push_max: Option<u64>,
    /// Largest message of the push kernel for copied inputs.
    pub push_max_copied: Option<u64>,
    /// Largest message of one-shot.
    pub one_shot_max: Option<u64>,
    /// Smallest message of two-stage with `cp.async`.
    pub cp_async_min: Option<u64>,
    /// Largest two-stage `cp.async` message run on the narrow grid.
    pub narrow_max: Option<u64>,
    /// Smallest message NCCL takes.
    pub nccl_min: Option<u64>,
    /// Smallest message NCCL takes for copied inputs.
    pub nccl_min_copied: Option<u64>,
    /// Largest message of the fused all-reduce + norm's push path.
    pub fused_push_max: Option<u64>,
    /// Why, in a line.
    pub reason: String,
    /// Where the measurement that decided it is committed.
    pub result: Option<String>,
    /// The line of the table it came from.
    pub line: usize,
}

impl AllReduceRule {
    /// The thresholds by name, in table order (what the parser and writer
    /// go through).
    pub fn sizes(&self) -> [(&'static str, Option<u64>); 9] {
        [
            ("ll_max", self.ll_max),
            ("push_max", self.push_max),
            ("push_max_copied", self.push_max_copied),
            ("one_shot_max", self.one_shot_max),
            ("cp_async_min", self.cp_async_min),
            ("narrow_max", self.narrow_max),
            ("nccl_min", self.nccl_min),
            ("nccl_min_copied", self.nccl_min_copied),
            ("fused_push_max", self.fused_push_max),
        ]
    }
}

/// `"256K"`, `"8M"`, `"1G"`, a byte count, or `"any"` (no bound) -> bytes.
pub(super) fn parse_bytes(field: &str, text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t == "any" {
        return Ok(u64::MAX);
    }
    let (num, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let shift = match unit {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => {
            return Err(format!(
                "{field} = {text:?}: expected bytes with an optional K, M or G (binary), e.g. \"256K\", or \"any\""
            ));
        }
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{field} = {text:?}: expected bytes such as \"256K\" or \"8M\""))
}

/// Bytes as the tables write them: the largest binary unit that divides them
/// (`"any"`: no bound).
pub(super) fn fmt_bytes(b: u64) -> String {
    if b == u64::MAX {
        return "any".into();
    }
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if b != 0 && b.is_multiple_of(1 << shift) {
            return format!("{}{unit}", b >> shift);
        }
    }
    b.to_string()
}
