//! `reduce_copy`: 1..N sources reduced in the accumulation type and written to
//! 1..M destinations, each buffer independently Accum- or Transport-typed
//! (seed 000, NCCLX `reduceCopyMixed`).
//!
//! ```
//! use redjit_codegen::{KernelSpec, Op, ReduceCopySpec, Role, Rounding, Src};
//!
//! // A received bf16 buffer + the local, read-only f32 input -> bf16, stochastically rounded.
//! let spec = ReduceCopySpec {
//!     srcs: vec![Role::Transport.into(), Src::read_only(Role::Accum)],
//!     dsts: vec![Role::Transport],
//!     op: Op::Sum,
//!     rounding: Rounding::Stochastic,
//!     ..ReduceCopySpec::default()
//! };
//! assert_eq!(spec.name(), "reduce_copy_u4_f32_bf16_Ta_T_sum_sr");
//! assert_eq!(spec.name().parse::<ReduceCopySpec>().unwrap(), spec);
//! assert_eq!(spec.seed_config(), Some(2));
//! assert!(spec.render().unwrap().code.contains(&spec.name()));
//! ```

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::params::Param;
use crate::registry::{Arch, DType, Family, Op, Role, Rounding, Src};
use crate::spec::{KernelSpec, NameParse};

/// Unroll factors the kernel is generated for.
pub const UNROLLS: &[u32] = &[1, 2, 4, 8];
/// Most sources one kernel reduces.
pub const MAX_SRCS: usize = 8;
/// Most destinations one kernel writes.
pub const MAX_DSTS: usize = 2;
/// Bytes of the widest vector access; a pack holds this many bytes of accumulator.
pub const PACK_BYTES: u32 = 16;
/// Lanes per warp; a hunk is `unroll * WARP_SIZE` packs.
pub const WARP_SIZE: u32 = 32;
/// Misaligned twins load every source's blocks before the first shuffle while they
/// total at most this many 32-bit words per thread (two sources, bf16 and f32, at
/// unroll 8 are 48); past it, one source at a time, so 8-source kernels do not spill.
const MISALIGNED_LOAD_WORDS: u32 = 48;

/// One reduce+copy kernel configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReduceCopySpec {
    /// Packs each lane keeps in flight per source (1, 2, 4 or 8).
    pub unroll: u32,
    /// The type the reduction is computed in.
    pub accum: DType,
    /// The narrower type of transport buffers.
    pub transport: DType,
    /// Role and load kind of each source, in order.
    pub srcs: Vec<Src>,
    /// Role of each destination, in order.
    pub dsts: Vec<Role>,
    /// How the sources are combined.
    pub op: Op,
    /// How the accumulator is rounded when stored to a transport-typed destination.
    pub rounding: Rounding,
    /// `Some`: the twin kernel for buffers that sit off a pack boundary, compiled
    /// for exactly this placement (full-width accesses through shuffles and
    /// funnel shifts, with every offset a constant; also stochastic rounding from
    /// a base offset that is not a multiple of 4) instead of the aligned loop.
    /// The launcher picks it from the buffers' addresses and compiles it on first
    /// use: most programs never need one. Named with a trailing `_m` and one
    /// digit per buffer, e.g. `_m100`.
    pub misalignment: Option<Misalignment>,
}

/// How many elements each buffer (sources, then destinations) starts past a pack
/// boundary: `0 ..pack_elts`. As constants, the offsets of a twin fold its byte
/// selects and shifts away and leave its aligned buffers on the plain vector
/// path; read at run time, they cost misaligned stochastic rounding a third of
/// its throughput (H100; commit 67b31a4).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Misalignment(pub Vec<u8>);

impl fmt::Display for Misalignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("m")?;
        self.0.iter().try_for_each(|d| write!(f, "{d}"))
    }
}

impl Default for ReduceCopySpec {
    /// The canonical PAT ReduceScatterQuantize step: bf16 + f32 -> bf16.
    fn default() -> Self {
        ReduceCopySpec {
            unroll: 4,
            accum: DType::F32,
            transport: DType::BF16,
            srcs: vec![Role::Transport.into(), Role::Accum.into()],
            dsts: vec![Role::Transport],
            op: Op::Sum,
            rounding: Rounding::Nearest,
            misalignment: None,
        }
    }
}

impl ReduceCopySpec {
    /// The element type of a buffer with `role`.
    pub fn dtype_of(&self, role: Role) -> DType {
        match role {
            Role::Accum => self.accum,
            Role::Transport => self.transport,
        }
    }

    /// Accumulator elements per pack (`16 / sizeof(accum)`).
    pub fn pack_elts(&self) -> u32 {
        PACK_BYTES / self.accum.info().bytes
    }

    /// Most threads per block the kernel is compiled for (`__launch_bounds__`),
    /// from the values it keeps live: unroll 8, unroll 4 with stochastic rounding
    /// or with 8 sources spilled at the 64 registers a 1024-thread bound allows,
    /// so they are bound to 512 threads (128 registers); unroll 8 with 8 sources
    /// or stochastic rounding spilled at 128, so it is bound to 256.
    pub fn max_threads(&self) -> u32 {
        // Registers live across the loads: accumulators and one source's loads,
        // Philox's state when rounding stochastically, a 64-bit address per
        // buffer. The thresholds are where ptxas stopped spilling (compile grid).
        let philox = if self.rounding == Rounding::Stochastic {
            16
        } else {
            0
        };
        let addresses = 2 * (self.srcs.len() + self.dsts.len()) as u32;
        // A misaligned twin stores through the previous lane's words and a funnelled
        // block: two packs of words per misaligned destination (an unroll-4 bf16 + f32 pair of
        // destinations spilled at 64 registers without this term). Bounding every
        // twin to 512 instead measured slower on misaligned buffers: more registers,
        // one block of 512 per SM instead of two.
        let shuffled: u32 = match &self.misalignment {
            Some(m) => self
                .dsts
                .iter()
                .zip(m.0.get(self.srcs.len()..).unwrap_or(&[]))
                .filter(|&(_, &offset)| offset != 0)
                .map(|(&r, _)| self.pack_elts() * self.dtype_of(r).info().bytes / 2)
                .sum(),
            None => 0,
        };
        match self.unroll * self.pack_elts() * 2 + philox + addresses + shuffled {
            0..=48 => 1024,
            49..=80 => 512,
            _ => 256,
        }
    }

    /// Most threads per block a launch of this spec may use: its own bound and
    /// that of any misaligned twin, which the launcher picks by the buffers'
    /// addresses (every buffer off its boundary bounds them all).
    pub fn max_launch_threads(&self) -> u32 {
        let all_off = Misalignment(vec![1; self.srcs.len() + self.dsts.len()]);
        self.max_threads()
            .min(self.for_misalignment(all_off).max_threads())
    }

    /// Elements one warp handles per iteration (`unroll * 32 * pack_elts`).
    pub fn elems_per_hunk(&self) -> u32 {
        self.unroll * WARP_SIZE * self.pack_elts()
    }

    /// The misaligned twin a launch with buffers at these device addresses
    /// (sources, then destinations, in spec order) and this stochastic-rounding
    /// base needs, or `None` for this (aligned) kernel, which assumes every buffer
    /// starts on a pack boundary (`pack_elts` elements of its own type) and,
    /// rounding stochastically, that each pack takes one Philox counter
    /// (base % 4 == 0). Addresses are whole elements of each buffer's type.
    pub fn misalignment_for(
        &self,
        src_addresses: &[u64],
        dst_addresses: &[u64],
        sr_base: Option<u64>,
    ) -> Option<Misalignment> {
        let offset = |address: u64, role: Role| {
            let bytes = u64::from(self.dtype_of(role).info().bytes);
            ((address / bytes) % u64::from(self.pack_elts())) as u8
        };
        let offsets: Vec<u8> = src_addresses
            .iter()
            .zip(&self.srcs)
            .map(|(&a, s)| offset(a, s.role))
            .chain(
                dst_addresses
                    .iter()
                    .zip(&self.dsts)
                    .map(|(&a, &r)| offset(a, r)),
            )
            .collect();
        let sr_off =
            self.rounding == Rounding::Stochastic && sr_base.is_some_and(|b| !b.is_multiple_of(4));
        (sr_off || offsets.iter().any(|&o| o != 0)).then_some(Misalignment(offsets))
    }

    /// This spec's twin for buffers placed as `misalignment` says.
    pub fn for_misalignment(&self, misalignment: Misalignment) -> ReduceCopySpec {
        ReduceCopySpec {
            misalignment: Some(misalignment),
            ..self.clone()
        }
    }

    /// The seed's type-configuration number for the two-source, one-destination
    /// forms (`src0 * 4 | src1 * 2 | dst0`, Accum = 1); `None` for other shapes.
    pub fn seed_config(&self) -> Option<u32> {
        let bit = |r: Role| u32::from(r == Role::Accum);
        match (self.srcs.as_slice(), self.dsts.as_slice()) {
            ([s0, s1], [d0]) => Some((bit(s0.role) << 2) | (bit(s1.role) << 1) | bit(*d0)),
            _ => None,
        }
    }

    /// Every two-source seed configuration (0..8) and every one-source form, for
    /// one unroll and transport: the test and benchmark matrix.
    pub fn matrix(unroll: u32, transport: DType) -> Vec<ReduceCopySpec> {
        let roles = Role::ALL;
        let mut out = Vec::new();
        for config in 0..8u32 {
            let role = |bit: u32| {
                if config & bit != 0 {
                    Role::Accum
                } else {
                    Role::Transport
                }
            };
            out.push(ReduceCopySpec {
                unroll,
                transport,
                srcs: vec![role(4).into(), role(2).into()],
                dsts: vec![role(1)],
                ..ReduceCopySpec::default()
            });
        }
        for &s in roles {
            for &d in roles {
                out.push(ReduceCopySpec {
                    unroll,
                    transport,
                    srcs: vec![s.into()],
                    dsts: vec![d],
                    ..ReduceCopySpec::default()
                });
            }
        }
        out
    }

    /// Whether the kernel writes at least as many bytes an element as it reads
    /// (`T_A`, `A_A`, `T_T`, `TT_A`): a table may hold fewer of its blocks on an
    /// SM at once (`ReduceCopyRule::write_heavy_blocks_per_sm`).
    pub fn writes_at_least_reads(&self) -> bool {
        let bytes = |role: Role| self.dtype_of(role).info().bytes;
        let read: u32 = self.srcs.iter().map(|s| bytes(s.role)).sum();
        let written: u32 = self.dsts.iter().map(|&r| bytes(r)).sum();
        written >= read
    }

    /// The roles of every buffer, sources then destinations.
    pub fn roles(&self) -> impl Iterator<Item = Role> + '_ {
        self.srcs
            .iter()
            .map(|s| s.role)
            .chain(self.dsts.iter().copied())
    }

    /// The dtype prelude files of the buffers' types, in registry order.
    fn dtype_preludes(&self) -> Vec<&'static str> {
        DType::ALL
            .iter()
            .filter(|d| self.roles().any(|r| self.dtype_of(r) == **d))
            .map(|d| d.info().prelude)
            .collect()
    }

    /// Whether a misaligned twin can hold every source's blocks at once: at most
    /// `MISALIGNED_LOAD_WORDS` 32-bit words of loads per thread.
    fn misaligned_loads_fit(&self) -> bool {
        let words: u32 = self
            .srcs
            .iter()
            .map(|s| self.unroll * self.pack_elts() * self.dtype_of(s.role).info().bytes / 4)
            .sum();
        words <= MISALIGNED_LOAD_WORDS
    }

    fn context(&self) -> ReduceCopyContext {
        // `offset`: where this buffer's digit sits in the misalignment (sources
        // first, then destinations).
        let buffer = |index: usize, offset: usize, role: Role, load: &'static str| {
            let dtype = self.dtype_of(role);
            BufferContext {
                index,
                role: role.slug(),
                dtype: dtype.slug(),
                c_type: dtype.info().c_type,
                pack_bytes: self.pack_elts() * dtype.info().bytes,
                m_bytes: self
                    .misalignment
                    .as_ref()
                    .map_or(0, |m| u32::from(m.0[offset + index]) * dtype.info().bytes),
                load,
            }
        };
        ReduceCopyContext {
            name: self.name(),
            spec: self.to_string(),
            max_threads: self.max_threads(),
            unroll: self.unroll,
            pack_elts: self.pack_elts(),
            elems_per_hunk: self.elems_per_hunk(),
            accum: self.accum.info().c_type,
            op_functor: self.op.info().functor,
            stochastic: self.rounding == Rounding::Stochastic,
            any_alignment: self.misalignment.is_some(),
            load_all_first: self.misaligned_loads_fit(),
            store_suffix: self.rounding.info().store_suffix,
            srcs: self
                .srcs
                .iter()
                .enumerate()
                .map(|(i, s)| buffer(i, 0, s.role, s.load.info().device))
                .collect(),
            dsts: self
                .dsts
                .iter()
                .enumerate()
                .map(|(i, &r)| buffer(i, self.srcs.len(), r, ""))
                .collect(),
        }
    }
}

/// What the `reduce_copy.cu` template is rendered from.
#[derive(Serialize)]
struct ReduceCopyContext {
    name: String,
    spec: String,
    max_threads: u32,
    unroll: u32,
    pack_elts: u32,
    elems_per_hunk: u32,
    accum: &'static str,
    op_functor: &'static str,
    stochastic: bool,
    any_alignment: bool,
    /// Misaligned twin: every source's blocks are loaded before the first shuffle.
    load_all_first: bool,
    store_suffix: &'static str,
    srcs: Vec<BufferContext>,
    dsts: Vec<BufferContext>,
}

#[derive(Serialize)]
struct BufferContext {
    index: usize,
    role: &'static str,
    dtype: &'static str,
    c_type: &'static str,
    pack_bytes: u32,
    /// Bytes past the pack boundary (misaligned twins; 0 otherwise).
    m_bytes: u32,
    /// The load struct (sources only).
    load: &'static str,
}

fn roles_letters(roles: &[Role]) -> String {
    roles.iter().map(|r| r.info().letter).collect()
}

fn srcs_letters(srcs: &[Src]) -> String {
    srcs.iter().map(|s| s.letter()).collect()
}

impl KernelSpec for ReduceCopySpec {
    fn family(&self) -> Family {
        Family::ReduceCopy
    }

    fn params(&self) -> Vec<Param> {
        const SRC: [&str; 8] = [
            "src0_ptr", "src1_ptr", "src2_ptr", "src3_ptr", "src4_ptr", "src5_ptr", "src6_ptr",
            "src7_ptr",
        ];
        const DST: [&str; 2] = ["dst0_ptr", "dst1_ptr"];
        let mut p: Vec<Param> = SRC[..self.srcs.len().min(8)]
            .iter()
            .chain(&DST[..self.dsts.len().min(2)])
            .map(|&n| Param::ptr(n))
            .collect();
        p.extend([
            Param::u64("n"),
            Param::f32("op_arg"),
            Param::u64("sr_seed"),
            Param::u64("sr_base"),
        ]);
        p
    }

    fn validate(&self) -> Result<(), SpecError> {
        if !UNROLLS.contains(&self.unroll) {
            return Err(SpecError::invalid(
                "unroll",
                self.unroll,
                "must be one of 1, 2, 4, 8",
            ));
        }
        if !self.accum.info().accum {
            let allowed: Vec<_> = DType::ALL
                .iter()
                .filter(|d| d.info().accum)
                .map(|d| d.slug())
                .collect();
            return Err(SpecError::invalid(
                "accum",
                self.accum,
                format!(
                    "the accumulation type must be one of: {}",
                    allowed.join(", ")
                ),
            ));
        }
        if !self.transport.info().transport {
            let allowed: Vec<_> = DType::ALL
                .iter()
                .filter(|d| d.info().transport)
                .map(|d| d.slug())
                .collect();
            return Err(SpecError::invalid(
                "transport",
                self.transport,
                format!("the transport type must be one of: {}", allowed.join(", ")),
            ));
        }
        if self.srcs.is_empty() || self.srcs.len() > MAX_SRCS {
            return Err(SpecError::invalid(
                "srcs",
                format!("{} sources", self.srcs.len()),
                format!("a reduce_copy has at least 1 and at most {MAX_SRCS} source(s)"),
            ));
        }
        if self.dsts.is_empty() || self.dsts.len() > MAX_DSTS {
            return Err(SpecError::invalid(
                "dsts",
                format!("{} destinations", self.dsts.len()),
                format!("a reduce_copy has at least 1 and at most {MAX_DSTS} destination(s)"),
            ));
        }
        if let Some(m) = &self.misalignment {
            let buffers = self.srcs.len() + self.dsts.len();
            if m.0.len() != buffers {
                return Err(SpecError::invalid(
                    "misalignment",
                    m,
                    format!("one offset per buffer: {buffers} (sources, then destinations)"),
                ));
            }
            if let Some(o) = m.0.iter().find(|&&o| u32::from(o) >= self.pack_elts()) {
                return Err(SpecError::invalid(
                    "misalignment",
                    m,
                    format!(
                        "offset {o}: each is in elements past a pack boundary, below {}",
                        self.pack_elts()
                    ),
                ));
            }
            if m.0.iter().all(|&o| o == 0) && self.rounding != Rounding::Stochastic {
                return Err(SpecError::invalid(
                    "misalignment",
                    m,
                    "every buffer on its pack boundary: that is the aligned kernel (an all-zero twin exists only for a stochastic-rounding base that is not a multiple of 4)",
                ));
            }
        }
        if self.rounding == Rounding::Stochastic && !self.dsts.contains(&Role::Transport) {
            return Err(SpecError::invalid(
                "rounding",
                self.rounding,
                "stochastic rounding needs a transport-typed destination to round to",
            ));
        }
        if !PACK_BYTES.is_multiple_of(self.accum.info().bytes) {
            return Err(SpecError::invalid(
                "accum",
                self.accum,
                "its size must divide 16 bytes",
            ));
        }
        Ok(())
    }

    fn name(&self) -> String {
        format!(
            "{}_u{}_{}_{}_{}_{}_{}_{}",
            Family::ReduceCopy.slug(),
            self.unroll,
            self.accum,
            self.transport,
            srcs_letters(&self.srcs),
            roles_letters(&self.dsts),
            self.op,
            self.rounding,
        ) + &self
            .misalignment
            .as_ref()
            .map_or(String::new(), |m| format!("_{m}"))
    }

    fn min_arch(&self) -> Arch {
        self.roles()
            .map(|r| self.dtype_of(r).info().min_arch)
            .chain([self.op.min_arch()])
            .max()
            .unwrap_or(Arch(50))
    }

    fn preludes(&self) -> Vec<&'static str> {
        let mut out = Family::ReduceCopy.info().preludes.to_vec();
        out.extend(self.dtype_preludes());
        out
    }

    fn render_body(&self) -> Result<String, SpecError> {
        crate::spec::render_body(self, &self.context())
    }
}

impl FromStr for ReduceCopySpec {
    type Err = SpecError;

    /// Parses a kernel name as the runtime prints it, e.g.
    /// `reduce_copy_u4_f32_bf16_TA_T_sum_rn`, and validates it.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let (name, rest) = NameParse::of(s, Family::ReduceCopy)?;
        let mut parts: Vec<&str> = rest.split('_').collect();
        let misalignment = match parts.last().and_then(|p| p.strip_prefix('m')) {
            Some(digits) if parts.len() == 8 => {
                parts.pop();
                let offsets = digits
                    .chars()
                    .map(|c| c.to_digit(10).map(|d| d as u8))
                    .collect::<Option<Vec<u8>>>()
                    .filter(|d| !d.is_empty())
                    .ok_or_else(|| {
                        name.err("the misalignment part is m and one digit per buffer, e.g. m100")
                    })?;
                Some(Misalignment(offsets))
            }
            _ => None,
        };
        let [unroll, accum, transport, srcs, dsts, op, rounding] = parts.as_slice() else {
            return Err(name.bad());
        };
        let unroll = unroll
            .strip_prefix('u')
            .and_then(|u| u.parse::<u32>().ok())
            .ok_or_else(|| name.err("the unroll part is u<number>, e.g. u4"))?;
        let roles = |letters: &str| -> Result<Vec<Role>, SpecError> {
            letters
                .chars()
                .map(|c| {
                    Role::from_letter(c).ok_or_else(|| {
                        name.err("destination roles are letters A (accum) and T (transport)")
                    })
                })
                .collect()
        };
        let sources = |letters: &str| -> Result<Vec<Src>, SpecError> {
            letters
                .chars()
                .map(|c| {
                    Src::from_letter(c).ok_or_else(|| {
                        name.err("source roles are letters A (accum) and T (transport); lower case (a, t) for a read-only source")
                    })
                })
                .collect()
        };
        let spec = ReduceCopySpec {
            unroll,
            accum: accum.parse()?,
            transport: transport.parse()?,
            srcs: sources(srcs)?,
            dsts: roles(dsts)?,
            op: op.parse()?,
            rounding: rounding.parse()?,
            misalignment,
        };
        spec.validate()?;
        name.canonical(&spec)?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_round_trips() {
        for unroll in UNROLLS {
            for &t in [DType::BF16, DType::F16].iter() {
                for spec in ReduceCopySpec::matrix(*unroll, t) {
                    let parsed: ReduceCopySpec = spec.name().parse().unwrap();
                    assert_eq!(parsed, spec);
                }
            }
        }
    }

    #[test]
    fn write_heavy_kernels_write_at_least_the_bytes_they_read() {
        let heavy: Vec<String> = ReduceCopySpec::matrix(4, DType::BF16)
            .into_iter()
            .filter(ReduceCopySpec::writes_at_least_reads)
            .map(|s| s.name())
            .collect();
        assert_eq!(
            heavy,
            [
                "reduce_copy_u4_f32_bf16_TT_A_sum_rn",
                "reduce_copy_u4_f32_bf16_A_A_sum_rn",
                "reduce_copy_u4_f32_bf16_T_A_sum_rn",
                "reduce_copy_u4_f32_bf16_T_T_sum_rn",
            ]
        );
    }

    #[test]
    fn the_twin_is_picked_by_each_buffers_offset_past_its_pack_boundary() {
        // TA_T: bf16 packs are 8 bytes (4 elements), f32 packs 16.
        let spec = ReduceCopySpec::default();
        let base = 0x7f00_0000_0000u64;
        let m = |v: &[u8]| Some(Misalignment(v.to_vec()));
        assert_eq!(
            spec.misalignment_for(&[base, base + 256], &[base + 512], None),
            None
        );
        // One bf16 element (2 bytes) into the 8-byte pack of src0.
        assert_eq!(
            spec.misalignment_for(&[base + 2, base + 256], &[base + 512], None),
            m(&[1, 0, 0])
        );
        // 8 bytes is a bf16 pack boundary but 2 elements into an f32 pack.
        assert_eq!(
            spec.misalignment_for(&[base + 8, base + 256], &[base + 512], None),
            None
        );
        assert_eq!(
            spec.misalignment_for(&[base, base + 8], &[base + 518], None),
            m(&[0, 2, 3])
        );
        // The base offset matters only when rounding stochastically.
        assert_eq!(
            spec.misalignment_for(&[base, base + 256], &[base + 512], Some(3)),
            None
        );
        let sr = ReduceCopySpec {
            rounding: Rounding::Stochastic,
            ..spec.clone()
        };
        assert_eq!(
            sr.misalignment_for(&[base, base + 256], &[base + 512], Some(8)),
            None
        );
        assert_eq!(
            sr.misalignment_for(&[base, base + 256], &[base + 512], Some(3)),
            m(&[0, 0, 0])
        );
        // Names carry the offsets and parse back; bad offsets are errors.
        let twin = spec.for_misalignment(Misalignment(vec![1, 0, 3]));
        assert_eq!(twin.name(), "reduce_copy_u4_f32_bf16_TA_T_sum_rn_m103");
        assert_eq!(twin.name().parse::<ReduceCopySpec>().unwrap(), twin);
        let sr_twin = sr.for_misalignment(Misalignment(vec![0, 0, 0]));
        assert_eq!(sr_twin.name().parse::<ReduceCopySpec>().unwrap(), sr_twin);
        for (bad, rule) in [
            (
                "reduce_copy_u4_f32_bf16_TA_T_sum_rn_m000",
                "that is the aligned kernel",
            ),
            (
                "reduce_copy_u4_f32_bf16_TA_T_sum_rn_m10",
                "one offset per buffer: 3",
            ),
            ("reduce_copy_u4_f32_bf16_TA_T_sum_rn_m104", "offset 4"),
            (
                "reduce_copy_u4_f32_bf16_TA_T_sum_rn_mx",
                "one digit per buffer",
            ),
        ] {
            let e = bad.parse::<ReduceCopySpec>().unwrap_err().to_string();
            assert!(e.contains(rule), "{bad}: {e}");
        }
    }

    #[test]
    fn a_launch_is_bounded_by_the_kernel_and_its_twins() {
        let spec = ReduceCopySpec::default();
        assert_eq!(spec.max_threads(), 1024);
        assert_eq!(spec.max_launch_threads(), 1024);
        let two_dsts: ReduceCopySpec = "reduce_copy_u4_f32_f16_Ta_TA_sum_rn".parse().unwrap();
        assert_eq!(two_dsts.max_threads(), 1024);
        // Both destinations off their boundary: 512; only a source: 1024.
        let both = two_dsts.for_misalignment(Misalignment(vec![0, 0, 1, 1]));
        assert_eq!(both.max_threads(), 512);
        let src = two_dsts.for_misalignment(Misalignment(vec![1, 0, 0, 0]));
        assert_eq!(src.max_threads(), 1024);
        assert_eq!(two_dsts.max_launch_threads(), 512);
        let u8_sr: ReduceCopySpec = "reduce_copy_u8_f32_bf16_TA_T_sum_sr".parse().unwrap();
        assert_eq!(u8_sr.max_launch_threads(), u8_sr.max_threads());
    }

    #[test]
    fn seed_configs_are_numbered_as_in_the_seed() {
        let m = ReduceCopySpec::matrix(4, DType::BF16);
        let configs: Vec<_> = m.iter().filter_map(|s| s.seed_config()).collect();
        assert_eq!(configs, (0..8).collect::<Vec<_>>());
        assert_eq!(m[2].name(), "reduce_copy_u4_f32_bf16_TA_T_sum_rn");
        assert_eq!(m[3].name(), "reduce_copy_u4_f32_bf16_TA_A_sum_rn");
    }
}
