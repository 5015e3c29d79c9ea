//! The reduce family's table rows: which block and loads in flight a
//! reduction takes for a shape class.

use std::ops::RangeInclusive;

use crate::registry::{DType, ReduceAxis, ReduceOp};
use crate::spec::reduce::{ReduceSpec, ReduceStrategy, Shape};

/// One row of a table's reduce section: the calls it serves and the strategy
/// they take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReduceRule {
    /// What is reduced.
    pub axis: ReduceAxis,
    /// The ops served (empty: every op).
    pub ops: Vec<ReduceOp>,
    /// The input's element type.
    pub input: DType,
    /// Full array: the element counts served; rows and columns: the row
    /// lengths.
    pub size: RangeInclusive<u64>,
    /// Rows and columns: the row counts served (`None`: any).
    pub rows: Option<RangeInclusive<u64>>,
    /// What the calls take.
    pub strategy: ReduceStrategy,
    /// Why, in a line.
    pub reason: String,
    /// Where the measurement that decided it is committed.
    pub result: Option<String>,
    /// The line of the table it came from.
    pub line: usize,
}

impl ReduceRule {
    /// Whether the row serves `spec` (its layout aside) at `shape`.
    pub fn serves(&self, spec: &ReduceSpec, shape: Shape) -> bool {
        let shape_ok = match shape {
            Shape::All { n } => self.axis == ReduceAxis::All && self.size.contains(&n),
            Shape::Matrix { rows, cols, .. } => {
                self.axis != ReduceAxis::All
                    && self.size.contains(&cols)
                    && self.rows.as_ref().is_none_or(|r| r.contains(&rows))
            }
        };
        shape_ok
            && self.axis == spec.axis
            && self.input == spec.input
            && (self.ops.is_empty() || self.ops.contains(&spec.op))
    }

    /// The spec this row lays out for `op` (the row's first op, else a sum),
    /// to check the strategy against.
    pub fn example(&self) -> ReduceSpec {
        let op = self.ops.first().copied().unwrap_or(ReduceOp::Sum);
        ReduceSpec {
            axis: self.axis,
            op,
            input: self.input,
            accum: ReduceSpec::default_accum(op, self.input),
            strategy: Some(self.strategy),
            ..ReduceSpec::default()
        }
    }
}
