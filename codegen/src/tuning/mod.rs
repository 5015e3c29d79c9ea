//! Tuning as data: which kernel strategy a family takes for a shape, per
//! device, read from tables shipped beside this crate (`codegen/tuning/*.toml`)
//! or written by `redjit tune`.
//!
//! A table's rows are tried in order, then its base table's; the first row
//! that serves the call decides, and a call no row serves takes the family's
//! heuristic ladder.
//!
//! ```
//! use redjit_codegen::tuning::{DeviceKey, Tuning};
//! use redjit_codegen::{Arch, NormSpec};
//!
//! let h200 = DeviceKey { name: "NVIDIA H200".into(), arch: Arch::SM90, sms: 132, l2_bytes: 60 << 20 };
//! let pick = Tuning::for_device(&h200);
//! assert_eq!(pick.tuning.name(), "h200");
//! let spec: NormSpec = "norm_rmsnorm_bf16_bf16_w32x1".parse().unwrap();
//! let laid_out = spec.for_shape(Some(4096), 8192, &pick.tuning);
//! assert!(laid_out.capacity().is_none_or(|c| c >= 8192));
//! ```

mod all_reduce;
mod candidates;
mod reduce_copy;
pub use candidates::{bound_candidates, candidates, closest_candidates};
mod classes;
mod device;
mod layout;
mod parse;
mod reduce;
mod write;

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::OnceLock;

use crate::registry::{Arch, NormLayout, NormOp, SoftmaxAlgo};
use crate::spec::norm::NormSpec;
pub use crate::spec::norm::TypePair;
use crate::spec::reduce::{ReduceSpec, Shape as ReduceShape};

pub use all_reduce::AllReduceRule;
pub use classes::{ROW_CLASSES, cols_class, row_class};
pub use device::{DeviceKey, Selection, device_slug};
pub use parse::parse_table;
pub use reduce::ReduceRule;
pub use reduce_copy::{HOLDING_SMEM_MAX, ReduceCopyRule};
pub use write::write_table;

/// Which form of a layout's kernel a norm strategy takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Form {
    /// The kernel as the layout gives it.
    Plain,
    /// The prefetching block or deferred split kernel (`_p`).
    Prefetch,
    /// Row loads that allocate no L1 line (`_n`).
    NoL1,
    /// `_n` and, where the row fills the layout, exact (`_n_x`).
    NoL1Exact,
    /// The exact-length kernel (`_x`) where the row fills the layout; the
    /// plain kernel for other rows.
    Exact,
    /// The deferred split kernel's exact form (`_p_x`) for rows of a whole
    /// number of its chunks; other rows take `_p`.
    PrefetchExact,
    /// `_p_x` for rows of a whole number of its chunks; the row serves no
    /// other rows (the layout's ragged `_p` spills).
    PrefetchExactOnly,
    /// The row's chunks in one thread-block cluster, staged a row ahead
    /// (`_c<n>_p`).
    Cluster,
}

impl Form {
    /// Every form, in table order.
    pub const ALL: &[Form] = &[
        Form::Plain,
        Form::Prefetch,
        Form::NoL1,
        Form::NoL1Exact,
        Form::Exact,
        Form::PrefetchExact,
        Form::PrefetchExactOnly,
        Form::Cluster,
    ];

    /// The name in tables.
    pub fn slug(self) -> &'static str {
        match self {
            Form::Plain => "plain",
            Form::Prefetch => "prefetch",
            Form::NoL1 => "no-l1",
            Form::NoL1Exact => "no-l1-exact",
            Form::Exact => "exact",
            Form::PrefetchExact => "prefetch-exact",
            Form::PrefetchExactOnly => "prefetch-exact-only",
            Form::Cluster => "cluster",
        }
    }

    /// The deferred or prefetching kernel (`_p`).
    pub fn prefetches(self) -> bool {
        matches!(
            self,
            Form::Prefetch | Form::PrefetchExact | Form::PrefetchExactOnly | Form::Cluster
        )
    }

    /// The exact-length kernel (`_x`) where the row fills the layout.
    pub fn exact(self) -> bool {
        matches!(
            self,
            Form::Exact | Form::NoL1Exact | Form::PrefetchExact | Form::PrefetchExactOnly
        )
    }

    /// Row loads that allocate no L1 line (`_n`).
    pub fn no_l1(self) -> bool {
        matches!(self, Form::NoL1 | Form::NoL1Exact)
    }
}

/// How a norm kernel lays out a row: a layout, its threads a row and packs a
/// thread, and the kernel's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NormStrategy {
    /// How a row is spread over threads.
    pub layout: NormLayout,
    /// Lanes (warp layout) or threads (block, split, loop) a row.
    pub lanes: u32,
    /// Packs of 4 elements a thread holds.
    pub packs: u32,
    /// Which kernel of the layout.
    pub form: Form,
    /// Packs of the weight and bias the kernel loads once and holds in
    /// registers (`_h<n>`; `None`: the layout's rule).
    pub held: Option<u32>,
    /// Packs in adjacent pairs, 16-byte accesses (`_v`, `NormSpec::pairs`).
    pub pairs: bool,
    /// The row held as raw 16-bit words (`_r`, `NormSpec::raw`).
    pub raw: bool,
    /// The kernel's launch bound, blocks an SM (`_o<n>`, `NormSpec::bound`;
    /// `None`: the most at which it compiles without a spill).
    pub bound: Option<u32>,
}

impl NormStrategy {
    /// The strategy `spec` was laid out with (its form read back from its
    /// flags), so that a tuner can write down what it timed.
    pub fn of(spec: &NormSpec) -> NormStrategy {
        let form = if spec.cluster.is_some() {
            Form::Cluster
        } else if spec.prefetch && spec.exact {
            Form::PrefetchExact
        } else if spec.prefetch {
            Form::Prefetch
        } else if spec.no_l1 && spec.exact {
            Form::NoL1Exact
        } else if spec.no_l1 {
            Form::NoL1
        } else if spec.exact {
            Form::Exact
        } else {
            Form::Plain
        };
        NormStrategy {
            layout: spec.layout,
            lanes: spec.lanes,
            packs: spec.packs,
            form,
            held: spec.held,
            pairs: spec.pairs,
            raw: spec.raw,
            bound: spec.bound,
        }
    }

    /// `s256x8`: the layout's letter, lanes and packs, as in kernel names.
    pub fn layout_name(&self) -> String {
        format!("{}{}x{}", self.layout.info().letter, self.lanes, self.packs)
    }
}

impl fmt::Display for NormStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.layout_name(), self.form.slug())?;
        if let Some(h) = self.held {
            write!(f, " held {h}")?;
        }
        if self.pairs {
            write!(f, " pairs")?;
        }
        if self.raw {
            write!(f, " raw")?;
        }
        if let Some(b) = self.bound {
            write!(f, " bound {b}")?;
        }
        Ok(())
    }
}

/// One row of a table's norm section: the calls it serves and the strategy
/// they take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormRule {
    /// The row operation.
    pub op: NormOp,
    /// Softmax ops: the algorithm (`None`: either).
    pub algo: Option<SoftmaxAlgo>,
    /// The fused residual add.
    pub residual: bool,
    /// The element types.
    pub types: TypePair,
    /// Row lengths served.
    pub cols: RangeInclusive<u64>,
    /// Row counts served (`None`: any, also a call of unknown rows).
    pub rows: Option<RangeInclusive<u64>>,
    /// What the calls take.
    pub strategy: NormStrategy,
    /// Why, in a line.
    pub reason: String,
    /// Where the measurement that decided it is committed.
    pub result: Option<String>,
    /// The line of the table it came from.
    pub line: usize,
}

impl NormRule {
    /// Whether the row was written for `spec`'s op, algorithm and residual,
    /// and for `types` (its layout aside).
    pub fn serves(&self, spec: &NormSpec, types: TypePair) -> bool {
        self.op == spec.op
            && self.algo.is_none_or(|a| Some(a) == spec.algo)
            && self.residual == spec.residual
            && self.types == types
    }

    /// Whether it takes `rows` of `cols`: both in range (a row of a row range
    /// takes no call of unknown rows), and for an exact-only form a whole
    /// number of its chunks.
    pub fn takes(&self, rows: Option<u64>, cols: u64) -> bool {
        let s = &self.strategy;
        let chunk = u64::from(s.lanes * s.packs) * 4;
        let rows_ok = match (&self.rows, rows) {
            (None, _) => true,
            (Some(r), Some(n)) => r.contains(&n),
            (Some(_), None) => false,
        };
        rows_ok
            && self.cols.contains(&cols)
            && (s.form != Form::PrefetchExactOnly || cols.is_multiple_of(chunk))
    }
}

/// The device a table was measured on, as its header names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDevice {
    /// The device's name as the driver reports it.
    pub name: String,
    /// Its compute capability.
    pub arch: Arch,
    /// Its SM count.
    pub sms: u32,
    /// Its L2 cache, MiB.
    pub l2_mib: u32,
}

/// One parsed table: a device and its rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TuningTable {
    /// The table's name (a shipped table's file stem, or the file's path).
    pub name: String,
    /// The device it was measured on.
    pub device: TableDevice,
    /// A shipped table whose rows apply after this one's.
    pub base: Option<String>,
    /// The norm family's rows, in order.
    pub norm: Vec<NormRule>,
    /// The reduce family's rows, in order.
    pub reduce: Vec<ReduceRule>,
    /// The all-reduce's rows, one per world size.
    pub all_reduce: Vec<AllReduceRule>,
    /// The reduce_copy row, if any.
    pub reduce_copy: Option<ReduceCopyRule>,
}

/// A table with its bases resolved: the rows a lookup tries, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuning {
    name: String,
    chain: Vec<String>,
    norm: Vec<NormRule>,
    reduce: Vec<ReduceRule>,
    all_reduce: Vec<AllReduceRule>,
    reduce_copy: Option<ReduceCopyRule>,
}

impl Tuning {
    /// No table: every family takes its heuristic ladder.
    pub fn ladder() -> Tuning {
        Tuning {
            name: "ladder".into(),
            chain: Vec::new(),
            norm: Vec::new(),
            reduce: Vec::new(),
            all_reduce: Vec::new(),
            reduce_copy: None,
        }
    }

    /// `table` with its base tables (shipped ones, by name) behind it.
    pub fn resolve(table: TuningTable) -> Result<Tuning, crate::SpecError> {
        let mut chain = vec![table.name.clone()];
        let mut norm = table.norm;
        let mut reduce = table.reduce;
        let mut all_reduce = table.all_reduce;
        let mut reduce_copy = table.reduce_copy;
        let mut base = table.base;
        while let Some(b) = base {
            if chain.contains(&b) {
                return Err(crate::SpecError::Table {
                    file: table.name,
                    line: 0,
                    rule: format!("base {b:?} names a table already in its chain {chain:?}"),
                });
            }
            let t = device::shipped_table(&b).ok_or_else(|| crate::SpecError::Table {
                file: table.name.clone(),
                line: 0,
                rule: format!(
                    "base {b:?} is no shipped table (expected one of: {})",
                    device::shipped_names().join(", ")
                ),
            })??;
            chain.push(b);
            norm.extend(t.norm);
            reduce.extend(t.reduce);
            all_reduce.extend(t.all_reduce);
            reduce_copy = reduce_copy.or(t.reduce_copy);
            base = t.base;
        }
        Ok(Tuning {
            name: table.name,
            chain,
            norm,
            reduce,
            all_reduce,
            reduce_copy,
        })
    }

    /// A shipped table by name (`h100-sxm`, `h200`), resolved.
    pub fn shipped(name: &str) -> Result<Tuning, crate::SpecError> {
        let table = device::shipped_table(name).ok_or_else(|| crate::SpecError::Table {
            file: name.into(),
            line: 0,
            rule: format!(
                "no shipped table of this name (expected one of: {})",
                device::shipped_names().join(", ")
            ),
        })??;
        Tuning::resolve(table)
    }

    /// The H100 table: the layouts every kernel derivation without a device
    /// (`NormSpec::for_cols`, a kernel's twins) takes.
    pub fn builtin() -> &'static Tuning {
        static BUILTIN: OnceLock<Tuning> = OnceLock::new();
        // The shipped tables are checked by tests; were one broken, the
        // ladder alone is still a valid choice.
        BUILTIN
            .get_or_init(|| Tuning::shipped(device::BUILTIN).unwrap_or_else(|_| Tuning::ladder()))
    }

    /// The table to use on `key`'s device and why (see [`Selection`]).
    pub fn for_device(key: &DeviceKey) -> Selection {
        device::select(key)
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table and its bases, in lookup order.
    pub fn chain(&self) -> &[String] {
        &self.chain
    }

    /// Every norm row, in lookup order.
    pub fn norm_rules(&self) -> &[NormRule] {
        &self.norm
    }

    /// The all-reduce row of `world` ranks, if the table or a base has one.
    pub fn all_reduce_rule(&self, world: u32) -> Option<&AllReduceRule> {
        self.all_reduce.iter().find(|r| r.world == world)
    }

    /// The reduce_copy row: the table's, else its nearest base's.
    pub fn reduce_copy_rule(&self) -> Option<&ReduceCopyRule> {
        self.reduce_copy.as_ref()
    }

    /// Every reduce row, in lookup order.
    pub fn reduce_rules(&self) -> &[ReduceRule] {
        &self.reduce
    }

    /// The first reduce row that serves `spec` at `shape`.
    pub fn reduce_rule(&self, spec: &ReduceSpec, shape: ReduceShape) -> Option<&ReduceRule> {
        self.reduce.iter().find(|r| r.serves(spec, shape))
    }

    /// The first norm row that serves `spec` at `rows` x `cols`; a cluster
    /// row only where `clusters` (a derivation that must not cluster skips
    /// them).
    ///
    /// An FP8 output's spec without a row of its own types takes its input
    /// type's rows: its row streams are that kernel's, the e4m3 store the
    /// smaller part (at 4096x8192 bf16 RMS norm + residual the 16-bit rows'
    /// b256x8 ran ahead of the ladder's b512x4 with the FP8 output too,
    /// benchmarks/h200/layouts-norm-fp8.json).
    pub fn norm_rule(
        &self,
        spec: &NormSpec,
        rows: Option<u64>,
        cols: u64,
        clusters: bool,
    ) -> Option<&NormRule> {
        let find = |types: TypePair| {
            self.norm.iter().find(|r| {
                r.serves(spec, types)
                    && r.takes(rows, cols)
                    && (clusters || r.strategy.form != Form::Cluster)
            })
        };
        find(TypePair::of_spec(spec)).or_else(|| {
            spec.fp8
                .and_then(|_| find(TypePair::of(spec.input, spec.input)))
        })
    }
}

#[cfg(test)]
mod tests;
