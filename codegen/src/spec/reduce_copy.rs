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

#![warn(missing_docs)]

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::error::SpecError;
use crate::registry::{Arch, DType, Family, Op, Role, Rounding, Src};
use crate::render;
use crate::spec::KernelSpec;

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
    /// Generate the loop for buffers that sit off a pack boundary (full-width
    /// accesses through shuffles and funnel shifts; also stochastic rounding
    /// from a base offset that is not a multiple of 4) instead of the aligned
    /// one. The launcher picks this variant itself, from the buffers' addresses,
    /// and compiles it on first use: most programs never need it, and it would
    /// double every kernel's NVRTC time. Named with a trailing `_any`.
    pub any_alignment: bool,
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
            any_alignment: false,
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
        // The _any twin stores through the previous lane's words and a funnelled
        // block: two packs of words per destination (an unroll-4 bf16 + f32 pair of
        // destinations spilled at 64 registers without this term). Bounding every
        // twin to 512 instead cost 3-20 % of misaligned throughput: more registers,
        // one block of 512 per SM instead of two.
        let shuffled: u32 = if self.any_alignment {
            self.dsts
                .iter()
                .map(|&r| self.pack_elts() * self.dtype_of(r).info().bytes / 2)
                .sum()
        } else {
            0
        };
        match self.unroll * self.pack_elts() * 2 + philox + addresses + shuffled {
            0..=48 => 1024,
            49..=80 => 512,
            _ => 256,
        }
    }

    /// Most threads per block a launch of this spec may use: its own bound and
    /// its `_any` twin's, which the launcher picks by the buffers' addresses.
    pub fn max_launch_threads(&self) -> u32 {
        self.max_threads()
            .min(self.for_any_alignment().max_threads())
    }

    /// Elements one warp handles per iteration (`unroll * 32 * pack_elts`).
    pub fn elems_per_hunk(&self) -> u32 {
        self.unroll * WARP_SIZE * self.pack_elts()
    }

    /// Whether a launch with buffers at these device addresses (sources, then
    /// destinations, in spec order) and this stochastic-rounding base must use the
    /// `_any` twin: the aligned kernel assumes every buffer starts on a pack
    /// boundary (`pack_elts` elements of its own type) and, rounding
    /// stochastically, that each pack takes one Philox counter (base % 4 == 0).
    pub fn needs_any_alignment(
        &self,
        src_addresses: &[u64],
        dst_addresses: &[u64],
        sr_base: Option<u64>,
    ) -> bool {
        let pack_bytes =
            |role: Role| u64::from(self.pack_elts() * self.dtype_of(role).info().bytes);
        let off = |address: &u64, role: Role| !address.is_multiple_of(pack_bytes(role));
        src_addresses
            .iter()
            .zip(&self.srcs)
            .any(|(a, s)| off(a, s.role))
            || dst_addresses
                .iter()
                .zip(&self.dsts)
                .any(|(a, &r)| off(a, r))
            || (self.rounding == Rounding::Stochastic
                && sr_base.is_some_and(|b| !b.is_multiple_of(4)))
    }

    /// This spec's kernel for buffers at any alignment.
    pub fn for_any_alignment(&self) -> ReduceCopySpec {
        ReduceCopySpec {
            any_alignment: true,
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

    fn context(&self) -> ReduceCopyContext {
        let buffer = |index: usize, role: Role, load: &'static str| {
            let dtype = self.dtype_of(role);
            BufferContext {
                index,
                role: role.slug(),
                dtype: dtype.slug(),
                c_type: dtype.info().c_type,
                pack_bytes: self.pack_elts() * dtype.info().bytes,
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
            any_alignment: self.any_alignment,
            store_suffix: self.rounding.info().store_suffix,
            srcs: self
                .srcs
                .iter()
                .enumerate()
                .map(|(i, s)| buffer(i, s.role, s.load.info().device))
                .collect(),
            dsts: self
                .dsts
                .iter()
                .enumerate()
                .map(|(i, &r)| buffer(i, r, ""))
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
        ) + if self.any_alignment { "_any" } else { "" }
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
        self.validate()?;
        render::render_template(Family::ReduceCopy.info().template, &self.context())
    }
}

impl fmt::Display for ReduceCopySpec {
    /// The kernel name; it parses back with `FromStr`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for ReduceCopySpec {
    type Err = SpecError;

    /// Parses a kernel name as the runtime prints it, e.g.
    /// `reduce_copy_u4_f32_bf16_TA_T_sum_rn`, and validates it.
    fn from_str(s: &str) -> Result<Self, SpecError> {
        let parse_err = |rule: &str| SpecError::Parse {
            what: "reduce_copy kernel name",
            input: s.to_string(),
            rule: rule.to_string(),
        };
        let format = "expected reduce_copy_u<unroll>_<accum>_<transport>_<src roles>_<dst roles>_<op>_<rounding>[_any], e.g. reduce_copy_u4_f32_bf16_TA_T_sum_rn (source letters: upper case volatile, lower case read-only)";
        let rest = s
            .strip_prefix(Family::ReduceCopy.slug())
            .and_then(|r| r.strip_prefix('_'))
            .ok_or_else(|| parse_err(format))?;
        let (rest, any_alignment) = match rest.strip_suffix("_any") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let parts: Vec<&str> = rest.split('_').collect();
        let [unroll, accum, transport, srcs, dsts, op, rounding] = parts.as_slice() else {
            return Err(parse_err(format));
        };
        let unroll = unroll
            .strip_prefix('u')
            .and_then(|u| u.parse::<u32>().ok())
            .ok_or_else(|| parse_err("the unroll part is u<number>, e.g. u4"))?;
        let roles = |letters: &str| -> Result<Vec<Role>, SpecError> {
            letters
                .chars()
                .map(|c| {
                    Role::from_letter(c).ok_or_else(|| {
                        parse_err("destination roles are letters A (accum) and T (transport)")
                    })
                })
                .collect()
        };
        let sources = |letters: &str| -> Result<Vec<Src>, SpecError> {
            letters
                .chars()
                .map(|c| {
                    Src::from_letter(c).ok_or_else(|| {
                        parse_err("source roles are letters A (accum) and T (transport); lower case (a, t) for a read-only source")
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
            any_alignment,
        };
        spec.validate()?;
        // One spelling per kernel: a name parses only if it prints back the same
        // (no "TA" vs "ta", no "u04"), so names in logs, caches and PTX agree.
        if spec.name() != s {
            return Err(parse_err(&format!(
                "not the canonical spelling; did you mean {}?",
                spec.name()
            )));
        }
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
    fn the_any_twin_is_needed_exactly_when_a_buffer_is_off_its_pack_boundary() {
        // TA_T: bf16 packs are 8 bytes, f32 packs 16.
        let spec = ReduceCopySpec::default();
        let base = 0x7f00_0000_0000u64;
        assert!(!spec.needs_any_alignment(&[base, base + 256], &[base + 512], None));
        // One bf16 element (2 bytes) into the 8-byte pack of src0.
        assert!(spec.needs_any_alignment(&[base + 2, base + 256], &[base + 512], None));
        // 8 bytes is a bf16 pack boundary but not an f32 one.
        assert!(!spec.needs_any_alignment(&[base + 8, base + 256], &[base + 512], None));
        assert!(spec.needs_any_alignment(&[base, base + 8], &[base + 512], None));
        assert!(spec.needs_any_alignment(&[base, base + 256], &[base + 514], None));
        // The base offset matters only when rounding stochastically.
        assert!(!spec.needs_any_alignment(&[base, base + 256], &[base + 512], Some(3)));
        let sr = ReduceCopySpec {
            rounding: Rounding::Stochastic,
            ..spec
        };
        assert!(!sr.needs_any_alignment(&[base, base + 256], &[base + 512], Some(8)));
        assert!(sr.needs_any_alignment(&[base, base + 256], &[base + 512], Some(3)));
    }

    #[test]
    fn a_launch_is_bounded_by_the_kernel_and_its_any_twin() {
        let spec = ReduceCopySpec::default();
        assert_eq!(spec.max_threads(), 1024);
        assert_eq!(spec.for_any_alignment().max_threads(), 1024);
        assert_eq!(spec.max_launch_threads(), 1024);
        let two_dsts: ReduceCopySpec = "reduce_copy_u4_f32_f16_Ta_TA_sum_rn".parse().unwrap();
        assert_eq!(two_dsts.max_threads(), 1024);
        assert_eq!(two_dsts.for_any_alignment().max_threads(), 512);
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
