//! The one registry of dtypes, ops, roundings, buffer roles and kernel families.
//!
//! Every fact about an entry lives in its row below; kernel names, validation, the
//! templates' context, the CLI's flags and the test matrix are derived from these
//! tables, never kept in sync by hand. Adding a dtype or an op is one row here (plus
//! its device code in the prelude, which the row names).
//!
//! ```
//! use redjit_codegen::{DType, Op};
//!
//! assert_eq!(DType::BF16.info().bytes, 2);
//! assert_eq!("premulsum".parse::<Op>().unwrap(), Op::PreMulSum);
//! let err = "mean".parse::<Op>().unwrap_err().to_string();
//! assert!(err.contains("expected one of: sum, prod, min, max, premulsum, avg"), "{err}");
//! ```

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

pub use crate::arch::Arch;

use crate::error::SpecError;

/// Defines a registry enum from a table: the variants, `ALL`, `slug()`, `Display`,
/// `FromStr` (by slug, with the allowed slugs in the error) and `info()`.
macro_rules! registry_enum {
    (
        $(#[$meta:meta])*
        $name:ident: $info:ident, what = $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident => $row:expr ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every entry of the registry, in table order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The entry's row in the registry.
            pub const fn info(self) -> &'static $info {
                match self {
                    $( $name::$variant => { const ROW: $info = $row; &ROW } ),+
                }
            }

            /// The short lowercase name used in kernel names and flags.
            pub const fn slug(self) -> &'static str {
                self.info().slug
            }

            /// The slugs of every entry, for error messages.
            pub fn allowed() -> String {
                Self::ALL.iter().map(|e| e.slug()).collect::<Vec<_>>().join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.slug())
            }
        }

        impl FromStr for $name {
            type Err = SpecError;
            fn from_str(s: &str) -> Result<Self, SpecError> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|e| e.slug().eq_ignore_ascii_case(s))
                    .ok_or_else(|| SpecError::Parse {
                        what: $what,
                        input: crate::error::echo(s),
                        rule: format!("expected one of: {}", Self::allowed()),
                    })
            }
        }
    };
}

impl FromStr for Arch {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let digits = s
            .strip_prefix("sm_")
            .or_else(|| s.strip_prefix("compute_"))
            .unwrap_or(s);
        match digits.parse::<u32>() {
            Ok(n) if (50..=200).contains(&n) => Ok(Arch(n)),
            _ => Err(SpecError::Parse {
                what: "arch",
                input: crate::error::echo(s),
                rule:
                    "expected sm_XY with a compute capability between sm_50 and sm_200, e.g. sm_90"
                        .into(),
            }),
        }
    }
}

/// Facts about one element type.
#[derive(Debug)]
pub struct DTypeInfo {
    /// Short name in kernel names and flags (`f32`, `bf16`, `f16`, `e4m3`, ...).
    pub slug: &'static str,
    /// Size of one element.
    pub bytes: u32,
    /// The storage type's name in the generated CUDA.
    pub c_type: &'static str,
    /// May be the accumulation type of a reduction.
    pub accum: bool,
    /// May be the (narrower) transport type of a reduce+copy.
    pub transport: bool,
    /// Oldest GPU whose PTX has the conversions this dtype uses.
    pub min_arch: Arch,
    /// Prelude file with this dtype's device code: for an element type its
    /// struct `rj_dtype_<slug>` (loads and widening, and for `store` types the
    /// stores; see the end of `prelude/packs.cuh`); for the integer
    /// accumulator its accumulation policy and functors.
    pub prelude: &'static str,
    /// Prelude files `prelude` builds on that not every family includes (the
    /// byte loads of the 1-byte types), in order, before it.
    pub needs: &'static [&'static str],
    /// May be the input of a `reduce` kernel.
    pub reduce_input: bool,
    /// Elements of one load of a `reduce` kernel's full-array and row walks:
    /// 16 bytes of f32 and of the 16-bit types (the 16-bit ones ran ahead of
    /// 8-byte loads of 4 on the H200: commit f1cf50c), 4 bytes of the 1-byte
    /// types.
    pub reduce_pack: u32,
    /// The accumulation policy when this dtype may be a `reduce` kernel's
    /// accumulator: in `prelude/reduce.cuh` for the float ones (the 16-bit ones
    /// are lossy: every add is rounded to the type), in `prelude/reduce_int.cuh`
    /// for i64 (exact).
    pub reduce_accum: Option<&'static str>,
    /// Its dtype file stores as well as loads (`st1`, `pack4`, `pack4_sr`): it
    /// may be a buffer type of the families that write or move elements
    /// (reduce_copy, norm, all_reduce). The load-only types (fp8, i8) are
    /// `reduce` inputs only, and those families refuse them.
    pub store: bool,
    /// Holds integers: a `reduce` kernel accumulates it exactly (in i64) for
    /// every op that has an integer form (`ReduceOpInfo::int_functor`).
    pub integer: bool,
}

registry_enum! {
    /// An element type.
    DType: DTypeInfo, what = "dtype" {
        /// IEEE single precision: the accumulator.
        F32 => DTypeInfo { slug: "f32", bytes: 4, c_type: "float", accum: true, transport: false, min_arch: Arch(50), prelude: "prelude/dtype_f32.cuh", needs: &[], reduce_input: true, reduce_pack: 4, reduce_accum: Some("rj_acc_f32"), store: true, integer: false },
        /// bfloat16 (8 exponent bits, 7 mantissa bits): a transport type.
        // cvt.rn.bf16x2.f32 is sm_80+.
        BF16 => DTypeInfo { slug: "bf16", bytes: 2, c_type: "rj_bf16", accum: false, transport: true, min_arch: Arch::SM80, prelude: "prelude/dtype_bf16.cuh", needs: &[], reduce_input: true, reduce_pack: 8, reduce_accum: Some("rj_acc_bf16"), store: true, integer: false },
        /// IEEE half precision: a transport type.
        // cvt.rn.f16x2.f32 is sm_80+.
        F16 => DTypeInfo { slug: "f16", bytes: 2, c_type: "rj_f16", accum: false, transport: true, min_arch: Arch::SM80, prelude: "prelude/dtype_f16.cuh", needs: &[], reduce_input: true, reduce_pack: 8, reduce_accum: Some("rj_acc_f16"), store: true, integer: false },
        /// OCP FP8 E4M3 (bias 7, no infinities, NaN = S.1111.111, largest 448):
        /// a `reduce` input, widened exactly through f16.
        // cvt.rn.f16x2.e4m3x2 is sm_89+ (Ada, Hopper).
        E4M3 => DTypeInfo { slug: "e4m3", bytes: 1, c_type: "rj_u8", accum: false, transport: false, min_arch: Arch::SM89, prelude: "prelude/dtype_e4m3.cuh", needs: &["prelude/packs8.cuh"], reduce_input: true, reduce_pack: 4, reduce_accum: None, store: false, integer: false },
        /// OCP FP8 E5M2 (bias 15, IEEE-like with infinities and NaNs, largest
        /// 57344): a `reduce` input, widened exactly through f16.
        // cvt.rn.f16x2.e5m2x2 is sm_89+.
        E5M2 => DTypeInfo { slug: "e5m2", bytes: 1, c_type: "rj_u8", accum: false, transport: false, min_arch: Arch::SM89, prelude: "prelude/dtype_e5m2.cuh", needs: &["prelude/packs8.cuh"], reduce_input: true, reduce_pack: 4, reduce_accum: None, store: false, integer: false },
        /// Signed 8-bit integers: a `reduce` input, summed exactly in integers.
        I8 => DTypeInfo { slug: "i8", bytes: 1, c_type: "signed char", accum: false, transport: false, min_arch: Arch(50), prelude: "prelude/dtype_i8.cuh", needs: &["prelude/packs8.cuh"], reduce_input: true, reduce_pack: 4, reduce_accum: None, store: false, integer: true },
        /// Signed 64-bit integers: the exact accumulator of integer inputs (32-bit
        /// sums within a thread's group of elements, 64-bit across groups,
        /// threads and blocks) and the type of their integer results.
        I64 => DTypeInfo { slug: "i64", bytes: 8, c_type: "rj_i64", accum: false, transport: false, min_arch: Arch(50), prelude: "prelude/reduce_int.cuh", needs: &[], reduce_input: false, reduce_pack: 4, reduce_accum: Some("rj_acc_i64"), store: false, integer: true },
    }
}

impl DType {
    /// The element types with loads and stores (`DTypeInfo::store`): the ones
    /// reduce_copy, norm and all_reduce take, in table order.
    ///
    /// ```
    /// use redjit_codegen::DType;
    ///
    /// assert_eq!(DType::stores().collect::<Vec<_>>(), [DType::F32, DType::BF16, DType::F16]);
    /// ```
    pub fn stores() -> impl Iterator<Item = DType> + Clone {
        DType::ALL.iter().copied().filter(|d| d.info().store)
    }

    /// The slugs of `stores()`, for error messages.
    pub fn store_types() -> String {
        DType::stores()
            .map(|d| d.slug())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Facts about one reduction operator.
#[derive(Debug)]
pub struct OpInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
    /// The device functor in `prelude/ops.cuh`. Every functor has the same
    /// contract: `pre(x)` applied to each source element, `apply(acc, x)` to
    /// combine, `post(acc)` once before the store; `arg` is the host scalar.
    pub functor: &'static str,
    /// What the host scalar means, if the op takes one.
    pub scalar: Option<&'static str>,
}

registry_enum! {
    /// A reduction operator (NCCL's set).
    Op: OpInfo, what = "op" {
        /// The sum of the sources.
        Sum => OpInfo { slug: "sum", functor: "rj_op_sum", scalar: None },
        /// The product of the sources.
        Prod => OpInfo { slug: "prod", functor: "rj_op_prod", scalar: None },
        /// NaN if any input is NaN (PTX min.NaN).
        Min => OpInfo { slug: "min", functor: "rj_op_min", scalar: None },
        /// NaN if any input is NaN (PTX max.NaN).
        Max => OpInfo { slug: "max", functor: "rj_op_max", scalar: None },
        /// Each source times the scalar, then summed.
        PreMulSum => OpInfo { slug: "premulsum", functor: "rj_op_premulsum", scalar: Some("the factor each source is multiplied by") },
        /// The sum divided by the scalar (the number of contributors).
        Avg => OpInfo { slug: "avg", functor: "rj_op_avg", scalar: Some("the count the sum is divided by") },
    }
}

impl Op {
    /// Oldest GPU with the op's PTX (min.NaN / max.NaN are sm_80+).
    pub fn min_arch(self) -> Arch {
        match self {
            Op::Min | Op::Max => Arch::SM80,
            _ => Arch(50),
        }
    }
}

/// Facts about one reduction of the `reduce` family (full-array, row-wise and
/// column-wise kernels share them).
#[derive(Debug)]
pub struct ReduceOpInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
    /// The device functor template in `prelude/reduce.cuh`, instantiated with the
    /// accumulation policy (`rj_red_sum<rj_acc_f32>`). Every functor has the same
    /// contract: `identity`, `value`, `feed`, `merge`, `finalize` (see the file).
    pub functor: &'static str,
    /// Input buffers the reduction reads (dot: 2).
    pub inputs: usize,
    /// The result is an element index (i64), not a value (f32).
    pub index: bool,
    /// May accumulate in the input's own 16-bit type (lossy, the seed's
    /// f16_f16 / bf16_bf16 kernels); the others accumulate in f32 only.
    pub lossy_accum: bool,
    /// Oldest GPU with the op's PTX.
    pub min_arch: Arch,
    /// The functor template in `prelude/reduce_int.cuh` that accumulates
    /// integer inputs exactly in the i64 accumulator; `None`: integer inputs
    /// go through the float functor (max, min, argmax, argmin are exact there,
    /// logsumexp is float math), accumulated in f32.
    pub int_functor: Option<&'static str>,
    /// With the i64 accumulator, the result is the exact integer (i64), not an
    /// f32 value (sum, sum of squares, dot; mean and the variances are f32).
    pub int_result: bool,
}

registry_enum! {
    /// A reduction (issue 5): what a `reduce` kernel computes over each range.
    ReduceOp: ReduceOpInfo, what = "reduction" {
        /// NaN if any element is NaN.
        Sum => ReduceOpInfo { slug: "sum", functor: "rj_red_sum", inputs: 1, index: false, lossy_accum: true, min_arch: Arch(70), int_functor: Some("rj_red_isum"), int_result: true },
        /// The sum divided by the element count.
        Mean => ReduceOpInfo { slug: "mean", functor: "rj_red_mean", inputs: 1, index: false, lossy_accum: true, min_arch: Arch(70), int_functor: Some("rj_red_imean"), int_result: false },
        /// NaN if any element is NaN (PTX max.NaN is sm_80+).
        Max => ReduceOpInfo { slug: "max", functor: "rj_red_max", inputs: 1, index: false, lossy_accum: false, min_arch: Arch::SM80 , int_functor: None, int_result: false },
        /// NaN if any element is NaN (PTX min.NaN is sm_80+).
        Min => ReduceOpInfo { slug: "min", functor: "rj_red_min", inputs: 1, index: false, lossy_accum: false, min_arch: Arch::SM80 , int_functor: None, int_result: false },
        /// Population variance, sum((x - mean)^2) / n (Welford, Chan's merge).
        VarPop => ReduceOpInfo { slug: "varpop", functor: "rj_red_varpop", inputs: 1, index: false, lossy_accum: false, min_arch: Arch(70), int_functor: Some("rj_red_ivarpop"), int_result: false },
        /// Sample variance, sum((x - mean)^2) / (n - 1); NaN for one element.
        VarSamp => ReduceOpInfo { slug: "varsamp", functor: "rj_red_varsamp", inputs: 1, index: false, lossy_accum: false, min_arch: Arch(70), int_functor: Some("rj_red_ivarsamp"), int_result: false },
        /// Index of the largest element; ties and NaNs: the lowest index, a NaN first.
        ArgMax => ReduceOpInfo { slug: "argmax", functor: "rj_red_argmax", inputs: 1, index: true, lossy_accum: false, min_arch: Arch(70), int_functor: None, int_result: false },
        /// Index of the smallest element; ties and NaNs as argmax.
        ArgMin => ReduceOpInfo { slug: "argmin", functor: "rj_red_argmin", inputs: 1, index: true, lossy_accum: false, min_arch: Arch(70), int_functor: None, int_result: false },
        /// sum(x * y) of two inputs.
        Dot => ReduceOpInfo { slug: "dot", functor: "rj_red_dot", inputs: 2, index: false, lossy_accum: true, min_arch: Arch(70), int_functor: Some("rj_red_idot"), int_result: true },
        /// sum(x * x).
        SumSq => ReduceOpInfo { slug: "sumsq", functor: "rj_red_sumsq", inputs: 1, index: false, lossy_accum: true, min_arch: Arch(70), int_functor: Some("rj_red_isumsq"), int_result: true },
        /// log(sum(exp(x))), through the online-softmax (max, scaled sum) merge.
        LogSumExp => ReduceOpInfo { slug: "lse", functor: "rj_red_lse", inputs: 1, index: false, lossy_accum: false, min_arch: Arch::SM80 , int_functor: None, int_result: false },
    }
}

/// Facts about one reduction axis.
#[derive(Debug)]
pub struct ReduceAxisInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
}

registry_enum! {
    /// What a `reduce` kernel reduces over.
    ReduceAxis: ReduceAxisInfo, what = "reduction axis" {
        /// The whole array to one value.
        All => ReduceAxisInfo { slug: "all" },
        /// Each row of a rows x cols matrix (leading dimension ld) to one value.
        Rows => ReduceAxisInfo { slug: "rows" },
        /// Each column of a rows x cols matrix to one value.
        Cols => ReduceAxisInfo { slug: "cols" },
    }
}

/// Facts about one load kind of a source buffer.
#[derive(Debug)]
pub struct LoadInfo {
    /// Short name in flags (`volatile`, `nc`).
    pub slug: &'static str,
    /// The load struct in `prelude/packs.cuh`.
    pub device: &'static str,
}

registry_enum! {
    /// How a source buffer is read.
    Load: LoadInfo, what = "load kind" {
        /// `ld.volatile.global`: a buffer a peer GPU may write while the kernel runs
        /// (NCCL's transport buffers); never served from a stale L1 line.
        Volatile => LoadInfo { slug: "volatile", device: "rj_load_volatile" },
        /// `ld.global.nc`: a local buffer nobody writes during the kernel (the
        /// user's input); the read-only, non-coherent path.
        ReadOnly => LoadInfo { slug: "nc", device: "rj_load_nc" },
    }
}

/// Facts about one rounding mode of a narrowing store.
#[derive(Debug)]
pub struct RoundingInfo {
    /// Short name in kernel names and flags (`rn`, `sr`).
    pub slug: &'static str,
    /// Suffix of the dtype files' store functions (`rj_st4_bf16<suffix>`).
    pub store_suffix: &'static str,
}

registry_enum! {
    /// How a value is rounded when it is stored to a narrower type.
    Rounding: RoundingInfo, what = "rounding" {
        /// Round to nearest, ties to even (PTX `cvt.rn`).
        Nearest => RoundingInfo { slug: "rn", store_suffix: "" },
        /// Stochastic rounding with Philox4x32-10 random bits: output depends only
        /// on (inputs, seed, base offset, element index).
        Stochastic => RoundingInfo { slug: "sr", store_suffix: "_sr" },
    }
}

/// Facts about one buffer role of a reduce+copy.
#[derive(Debug)]
pub struct RoleInfo {
    /// Short name in flags (`accum`, `transport`).
    pub slug: &'static str,
    /// The letter in kernel names (`TA_T`: transport, accum -> transport).
    pub letter: char,
}

registry_enum! {
    /// Whether a buffer holds the accumulation type or the transport type.
    Role: RoleInfo, what = "buffer role" {
        /// The accumulation type (f32): NCCLX's user buffers.
        Accum => RoleInfo { slug: "accum", letter: 'A' },
        /// The narrower transport type (bf16, f16): what crosses the wire.
        Transport => RoleInfo { slug: "transport", letter: 'T' },
    }
}

impl Role {
    /// The role with this (upper-case) letter.
    pub fn from_letter(c: char) -> Option<Role> {
        Role::ALL.iter().copied().find(|r| r.info().letter == c)
    }
}

/// One source of a reduce+copy: its type role and how it is read.
///
/// ```
/// use redjit_codegen::{Load, Role, Src};
///
/// let input = Src::read_only(Role::Accum);
/// assert_eq!(input.letter(), 'a');
/// assert_eq!(Src::from_letter('T'), Some(Src { role: Role::Transport, load: Load::Volatile }));
/// assert_eq!(Src::from_letter('x'), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Src {
    /// Accumulator- or transport-typed.
    pub role: Role,
    /// Volatile (a peer may write it) or read-only (`ld.global.nc`).
    pub load: Load,
}

impl From<Role> for Src {
    /// A volatile source: the safe default for a buffer a peer may write.
    fn from(role: Role) -> Src {
        Src {
            role,
            load: Load::Volatile,
        }
    }
}

impl Src {
    /// A read-only (`ld.global.nc`) source.
    pub fn read_only(role: Role) -> Src {
        Src {
            role,
            load: Load::ReadOnly,
        }
    }

    /// Its letter in kernel names: the role's letter, upper case for volatile,
    /// lower case for read-only (`Ta`: a volatile transport buffer and a local,
    /// read-only, accumulator-typed input).
    pub fn letter(self) -> char {
        let c = self.role.info().letter;
        match self.load {
            Load::Volatile => c,
            Load::ReadOnly => c.to_ascii_lowercase(),
        }
    }

    /// The source a kernel-name letter stands for (the inverse of
    /// [`Src::letter`]); `None` for a letter that is no role.
    pub fn from_letter(c: char) -> Option<Src> {
        let role = Role::from_letter(c.to_ascii_uppercase())?;
        Some(if c.is_ascii_lowercase() {
            Src::read_only(role)
        } else {
            Src::from(role)
        })
    }
}

/// Facts about one kernel family.
#[derive(Debug)]
pub struct FamilyInfo {
    /// Short name, the prefix of the family's kernel names.
    pub slug: &'static str,
    /// What a parse error calls one of its kernel names (`<slug> kernel name`).
    pub name: &'static str,
    /// The family's template, one family per file.
    pub template: &'static str,
    /// Shared device code the family's kernels start with, in order.
    pub preludes: &'static [&'static str],
}

registry_enum! {
    /// A kernel family.
    Family: FamilyInfo, what = "kernel family" {
        /// 1..8 sources reduced and written to 1..2 destinations (seed 000).
        ReduceCopy => FamilyInfo {
            slug: "reduce_copy",
            name: "reduce_copy kernel name",
            template: "reduce_copy.cu",
            preludes: &["prelude/types.cuh", "prelude/packs.cuh", "prelude/ops.cuh", "prelude/philox.cuh"],
        },
        // Every dtype file comes before reduce.cuh (its 16-bit accumulation
        // policies round with their conversions), whatever the kernel's input.
        /// Full-array, row-wise and column-wise reductions (seeds 001, 002).
        Reduce => FamilyInfo {
            slug: "reduce",
            name: "reduce kernel name",
            template: "reduce.cu",
            preludes: &[
                "prelude/types.cuh", "prelude/packs.cuh", "prelude/ops.cuh",
                "prelude/dtype_f32.cuh", "prelude/dtype_bf16.cuh", "prelude/dtype_f16.cuh",
                "prelude/warp.cuh", "prelude/reduce.cuh",
            ],
        },
        // The dtype file of the spec's element type comes after these (the spec
        // adds it); peer.cuh's pack helpers are templates over the dtype struct.
        /// Intra-node all-reduce through peer memory (seeds 003, 004).
        AllReduce => FamilyInfo {
            slug: "all_reduce",
            name: "all_reduce kernel name",
            template: "all_reduce.cu",
            preludes: &["prelude/types.cuh", "prelude/packs.cuh", "prelude/ops.cuh", "prelude/peer.cuh"],
        },
        // Softmax, log-softmax, layer norm and RMS norm over rows (issue 11):
        // reduce.cuh's functors and warp/block primitives, then norm.cuh's row
        // ops and layouts.
        /// Row-wise softmax, log-softmax, layer norm and RMS norm (issue 11).
        Norm => FamilyInfo {
            slug: "norm",
            name: "norm kernel name",
            template: "norm.cu",
            preludes: &[
                "prelude/types.cuh", "prelude/packs.cuh", "prelude/ops.cuh",
                "prelude/dtype_f32.cuh", "prelude/dtype_bf16.cuh", "prelude/dtype_f16.cuh",
                "prelude/warp.cuh", "prelude/reduce.cuh", "prelude/norm.cuh",
            ],
        },
        // Every stage of the pipeline is its own kernel of this family (the
        // launcher compiles them as one program); ops.cuh gives the .rn
        // arithmetic the IoU is computed with, so no add is fused into an FMA.
        /// Non-maximum suppression with torchvision's semantics (issue 11).
        Nms => FamilyInfo {
            slug: "nms",
            name: "nms kernel name",
            template: "nms.cu",
            preludes: &["prelude/types.cuh", "prelude/ops.cuh", "prelude/nms.cuh"],
        },
        // Two kernels a call, rendered into one program (the launcher compiles
        // both): the stats stage is reduce.cuh's full-array logsumexp walk over
        // scale * x with its (max, sum) state kept whole; the normalise stage
        // reads that state from device memory. softmax_all.cuh holds both
        // stages' device code.
        /// Softmax and log-softmax over a whole array (issue 11, seed 002's
        /// "naive" softmax done correctly).
        SoftmaxAll => FamilyInfo {
            slug: "softmax_all",
            name: "softmax_all kernel name",
            template: "softmax_all.cu",
            preludes: &[
                "prelude/types.cuh", "prelude/packs.cuh", "prelude/ops.cuh",
                "prelude/dtype_f32.cuh", "prelude/dtype_bf16.cuh", "prelude/dtype_f16.cuh",
                "prelude/warp.cuh", "prelude/reduce.cuh", "prelude/softmax_all.cuh",
            ],
        },
    }
}

/// Facts about one stage of the `nms` pipeline.
#[derive(Debug)]
pub struct NmsStageInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
    /// The block sizes the stage's kernel may be generated for.
    pub threads: &'static [u32],
}

registry_enum! {
    /// One kernel of the `nms` pipeline, in launch order: sort (tiles, then
    /// the bitonic merge steps across and within tiles), mask, walk.
    NmsStage: NmsStageInfo, what = "nms stage" {
        /// Builds the sort keys from the scores (and checks the inputs) and sorts
        /// each tile of 4 x threads keys in shared memory (bitonic).
        Sort => NmsStageInfo { slug: "sort", threads: &[256, 512, 1024] },
        /// One bitonic compare-exchange step across tiles (global memory).
        Merge => NmsStageInfo { slug: "merge", threads: &[256, 512, 1024] },
        /// The steps of a bitonic stage within each tile (shared memory).
        TileMerge => NmsStageInfo { slug: "tilemerge", threads: &[256, 512, 1024] },
        /// The suppression bitmask: one thread per sorted box, one 64-bit word
        /// per 64-box column block.
        Mask => NmsStageInfo { slug: "mask", threads: &[64] },
        /// The reduction: one block walks the column blocks in score order,
        /// keeping the removed bitset, and writes the kept indices and count.
        Walk => NmsStageInfo { slug: "walk", threads: &[128, 256, 512, 1024] },
    }
}

/// Facts about one stage of the `softmax_all` pipeline.
#[derive(Debug)]
pub struct SoftmaxAllStageInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
}

registry_enum! {
    /// One kernel of a whole-array softmax, in launch order.
    SoftmaxAllStage: SoftmaxAllStageInfo, what = "softmax_all stage" {
        /// The array's (max, sum of e^(s x - max)) state, through the full-array
        /// walk of the `reduce` family's logsumexp (a last-block finish, no
        /// atomics on values), written to device memory.
        Stats => SoftmaxAllStageInfo { slug: "stats" },
        /// Every element from that state: softmax or log-softmax, elementwise.
        Normalize => SoftmaxAllStageInfo { slug: "normalize" },
    }
}

/// Facts about one row operation of the `norm` family.
#[derive(Debug)]
pub struct NormOpInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
    /// The device functor in `prelude/norm.cuh` (softmax ops: the safe or
    /// online one is chosen by the spec's algorithm).
    pub functor: &'static str,
    /// A softmax over the row (takes a scale and a safe/online algorithm); the
    /// others are norms (take eps, a weight, and may fuse a residual add).
    pub softmax: bool,
    /// Reads a bias vector (layer norm).
    pub bias: bool,
    /// May write per-row statistics: the mean (layer norm) and 1/std (both norms).
    pub mean: bool,
    /// 32-bit words of the state the blocks of a split row exchange: (max,
    /// sum of exps), Welford's (n, mean, m2) (a spec may take layer norm's f64
    /// sums, four: `NormSpec::f64_sums`), the sum of squares.
    pub split_state_words: u32,
}

registry_enum! {
    /// What a `norm` kernel computes over each row.
    NormOp: NormOpInfo, what = "norm op" {
        /// y = e^(s x - max) / sum e^(s x - max), s the scale (temperature).
        Softmax => NormOpInfo { slug: "softmax", functor: "rj_norm_softmax", softmax: true, bias: false, mean: false, split_state_words: 2 },
        /// y = (s x - max) - ln sum e^(s x - max).
        LogSoftmax => NormOpInfo { slug: "logsoftmax", functor: "rj_norm_softmax", softmax: true, bias: false, mean: false, split_state_words: 2 },
        /// y = (x - mean) / sqrt(var + eps) * weight + bias (population variance).
        LayerNorm => NormOpInfo { slug: "layernorm", functor: "rj_norm_layer_t", softmax: false, bias: true, mean: true, split_state_words: 3 },
        /// y = x / sqrt(mean(x^2) + eps) * weight.
        RmsNorm => NormOpInfo { slug: "rmsnorm", functor: "rj_norm_rms_t", softmax: false, bias: false, mean: false, split_state_words: 1 },
    }
}

/// Facts about one softmax algorithm.
#[derive(Debug)]
pub struct SoftmaxAlgoInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
}

registry_enum! {
    /// How a softmax finds the row's max and normaliser.
    SoftmaxAlgo: SoftmaxAlgoInfo, what = "softmax algorithm" {
        /// Two reductions: the max, then the sum of e^(x - max).
        Safe => SoftmaxAlgoInfo { slug: "safe" },
        /// One reduction of (max, sum) pairs with the online normaliser's merge
        /// (arXiv 1805.02867).
        Online => SoftmaxAlgoInfo { slug: "online" },
    }
}

/// Facts about one row layout of the `norm` family.
#[derive(Debug)]
pub struct NormLayoutInfo {
    /// Short name in flags (kernel names carry the letter instead).
    pub slug: &'static str,
    /// The letter in kernel names (`w32x4`: a group of 32 lanes, 4 packs each).
    pub letter: char,
}

registry_enum! {
    /// How a norm kernel spreads a row over threads; the row (the loop: a
    /// chunk of it at a time) is held in registers, packs of 4 elements per
    /// thread.
    NormLayout: NormLayoutInfo, what = "norm layout" {
        /// A group of 1..32 lanes per row (short rows; several rows per warp).
        Warp => NormLayoutInfo { slug: "warp", letter: 'w' },
        /// A block per row (medium rows).
        Block => NormLayoutInfo { slug: "block", letter: 'b' },
        /// Several blocks per row (long rows): each holds a chunk, the blocks of a
        /// row exchange their partial states through global memory and merge
        /// them in chunk order (deterministic), then normalise their chunks.
        Split => NormLayoutInfo { slug: "split", letter: 's' },
        /// A block per row that goes over it in chunks twice (rows of any
        /// length, in few registers): the first pass merges each thread's
        /// states of its chunks and the block reduces them once, the second
        /// loads the chunks again, last first (mostly from L2), and finishes
        /// them.
        Loop => NormLayoutInfo { slug: "loop", letter: 'l' },
    }
}

impl NormLayout {
    /// The layout a kernel-name letter stands for (the inverse of its
    /// `letter`); `None` for a letter that is no layout.
    pub fn from_letter(c: char) -> Option<NormLayout> {
        NormLayout::ALL
            .iter()
            .copied()
            .find(|l| l.info().letter == c)
    }
}

/// Facts about one all-reduce algorithm.
#[derive(Debug)]
pub struct AllReduceAlgoInfo {
    /// Short name in kernel names and flags.
    pub slug: &'static str,
    /// Signal barriers per call: one-shot start + end, two-stage start + middle
    /// (the runtime's protocol model shows why no third one is needed).
    pub barriers: u32,
    /// Reads each rank's input in place (16-byte aligned) and writes it into
    /// the peers' buffers itself: nothing is staged, no input table slot is
    /// taken, and no quantized transport exists for it.
    pub in_place: bool,
}

registry_enum! {
    /// How an all-reduce moves data between ranks (seed 003).
    AllReduceAlgo: AllReduceAlgoInfo, what = "all-reduce algorithm" {
        /// Every rank reads every peer's whole input and reduces it: one round of
        /// peer reads, latency-bound messages.
        OneShot => AllReduceAlgoInfo { slug: "oneshot", barriers: 2, in_place: false },
        /// Reduce-scatter into a per-rank slice, barrier, all-gather of the
        /// slices: each byte crosses the fabric twice, not R - 1 times.
        TwoStage => AllReduceAlgoInfo { slug: "twostage", barriers: 2, in_place: false },
        /// One-shot by writes: every rank stores its input into a buffer of
        /// each peer's, one barrier, then every rank reduces from its own
        /// memory. No peer read crosses the fabric (a write is one trip, a read
        /// two) and no end barrier: the buffers alternate by the barrier
        /// count's parity, so a rank overwrites a buffer set only after every
        /// peer has passed a later barrier, which it does after reading it.
        Push => AllReduceAlgoInfo { slug: "push", barriers: 1, in_place: true },
        /// The push kernel on NCCL's low-latency protocol: each 8 bytes of data
        /// travel with a flag (the call's count) in one 16-byte line, and a
        /// rank polls its own memory for the flags instead of meeting its
        /// peers at a barrier. Twice the bytes on the wire, no barrier: for
        /// small messages.
        PushLl => AllReduceAlgoInfo { slug: "pushll", barriers: 0, in_place: true },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_round_trip_and_are_unique() {
        for d in DType::ALL {
            assert_eq!(d.slug().parse::<DType>().unwrap(), *d);
        }
        for o in Op::ALL {
            assert_eq!(o.slug().parse::<Op>().unwrap(), *o);
        }
        let mut slugs: Vec<_> = DType::ALL.iter().map(|d| d.slug()).collect();
        slugs.sort();
        slugs.dedup();
        assert_eq!(slugs.len(), DType::ALL.len());
    }

    #[test]
    fn unknown_slug_lists_the_allowed_ones() {
        let err = "f64".parse::<DType>().unwrap_err().to_string();
        assert!(
            err.contains("\"f64\"") && err.contains("f32, bf16, f16"),
            "{err}"
        );
    }

    #[test]
    fn arch_parses() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch(90));
        assert_eq!("90".parse::<Arch>().unwrap(), Arch(90));
        assert!("sm_9".parse::<Arch>().is_err());
        assert_eq!(Arch::from_compute_capability(9, 0).to_string(), "sm_90");
    }
}
