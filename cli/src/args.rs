//! Flags shared by the commands that take a kernel spec (`gen`, `ptx`, `bench jit`),
//! parsed with the registry's own `FromStr`, so the allowed values live in one place.

use std::fmt;

use clap::{Args, Subcommand};
use redjit_codegen::{
    AllReduceSpec, DType, Family, KernelSpec, Load, NmsSpec, NormSpec, Op, ReduceCopySpec,
    ReduceSpec, Role, Rounding, SoftmaxAllSpec, Src,
};

use crate::error::{CliError, CliResult};

/// A spec the commands can render, compile and prepare, whatever its family.
pub type AnySpec = Box<dyn KernelSpec + Send + Sync>;

/// `<family> [flags]` or `--spec <kernel name>`.
#[derive(Debug, Clone, Args)]
pub struct SpecSelect {
    /// A kernel name as the runtime prints it, e.g. reduce_copy_u4_f32_bf16_TA_T_sum_rn
    /// (instead of a family subcommand).
    #[arg(long, value_name = "NAME", global = true)]
    pub spec: Option<String>,

    #[command(subcommand)]
    pub family: Option<FamilyCmd>,
}

/// A kernel family and its flags.
#[derive(Debug, Clone, Subcommand)]
pub enum FamilyCmd {
    /// reduce_copy: 1 to 8 sources reduced in the accumulation type, written to 1 or 2 destinations.
    ReduceCopy(ReduceCopyArgs),
}

impl SpecSelect {
    /// The selected spec, validated.
    pub fn resolve(&self) -> CliResult<AnySpec> {
        match (&self.spec, &self.family) {
            (Some(_), Some(_)) => Err(CliError::usage(
                "give either a kernel family subcommand or --spec NAME, not both",
            )),
            (Some(name), None) => parse_spec_name(name),
            (None, Some(FamilyCmd::ReduceCopy(a))) => Ok(Box::new(a.to_spec()?)),
            (None, None) => Err(CliError::usage(format!(
                "give a kernel family subcommand ({}) or --spec NAME",
                family_commands()
            ))),
        }
    }
}

fn family_commands() -> String {
    Family::ALL
        .iter()
        .map(|f| f.slug().replace('_', "-"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Parses a kernel name of any family (the family is the name's prefix) and validates it.
pub fn parse_spec_name(name: &str) -> CliResult<AnySpec> {
    let family = Family::ALL
        .iter()
        .copied()
        .filter(|f| name.starts_with(f.slug()))
        .max_by_key(|f| f.slug().len())
        .ok_or_else(|| {
            CliError::usage(format!(
                "cannot parse kernel name {:?}: it starts with no known family ({})",
                redjit_codegen::error::echo(name),
                Family::allowed()
            ))
        })?;
    match family {
        Family::ReduceCopy => Ok(Box::new(name.parse::<ReduceCopySpec>()?)),
        Family::Reduce => Ok(Box::new(name.parse::<ReduceSpec>()?)),
        Family::AllReduce => Ok(Box::new(name.parse::<AllReduceSpec>()?)),
        Family::Norm => Ok(Box::new(name.parse::<NormSpec>()?)),
        Family::Nms => Ok(Box::new(name.parse::<NmsSpec>()?)),
        Family::SoftmaxAll => Ok(Box::new(name.parse::<SoftmaxAllSpec>()?)),
    }
}

/// The flags of one reduce_copy spec; each defaults to `ReduceCopySpec::default()`.
#[derive(Debug, Clone, Args)]
pub struct ReduceCopyArgs {
    /// Packs each lane keeps in flight per source (1, 2, 4 or 8).
    #[arg(long, default_value_t = ReduceCopySpec::default().unroll)]
    pub unroll: u32,

    /// Transport (narrow) dtype: bf16 or f16.
    #[arg(long, value_name = "DTYPE", value_parser = parse_dtype, default_value_t = ReduceCopySpec::default().transport)]
    pub transport: DType,

    /// Accumulation dtype.
    #[arg(long, value_name = "DTYPE", value_parser = parse_dtype, default_value_t = ReduceCopySpec::default().accum)]
    pub accum: DType,

    /// Sources, comma-separated: transport|accum, each optionally `:nc` (read-only,
    /// ld.global.nc; default volatile), e.g. transport,accum:nc; or letters as in
    /// kernel names (T, A volatile; t, a read-only), e.g. Ta.
    #[arg(long, alias = "src", value_name = "SOURCES", value_parser = parse_sources, default_value_t = Sources(ReduceCopySpec::default().srcs))]
    pub srcs: Sources,

    /// Destination roles, comma-separated: transport|accum (or T|A).
    #[arg(long, alias = "dsts", value_name = "ROLES", value_parser = parse_roles, default_value_t = Roles(ReduceCopySpec::default().dsts))]
    pub dst: Roles,

    /// Reduction operator.
    #[arg(long, value_parser = parse_op, default_value_t = ReduceCopySpec::default().op)]
    pub op: Op,

    /// Rounding of narrowing stores: nearest (rn) or stochastic (sr).
    #[arg(long, value_parser = parse_rounding, default_value_t = ReduceCopySpec::default().rounding)]
    pub rounding: Rounding,
}

impl ReduceCopyArgs {
    /// The spec, validated (`KernelSpec::validate`, errors as the registry words them).
    pub fn to_spec(&self) -> CliResult<ReduceCopySpec> {
        let spec = ReduceCopySpec {
            unroll: self.unroll,
            accum: self.accum,
            transport: self.transport,
            srcs: self.srcs.0.clone(),
            dsts: self.dst.0.clone(),
            op: self.op,
            rounding: self.rounding,
            misalignment: None,
        };
        spec.validate()?;
        Ok(spec)
    }
}

/// A list of sources; displays as `transport,accum:nc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources(pub Vec<Src>);

impl fmt::Display for Sources {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let items: Vec<String> = self
            .0
            .iter()
            .map(|s| match s.load {
                Load::Volatile => s.role.slug().to_string(),
                other => format!("{}:{}", s.role.slug(), other.slug()),
            })
            .collect();
        f.write_str(&items.join(","))
    }
}

/// `transport,accum:nc`, or one run of kernel-name letters (`Ta`).
pub fn parse_sources(s: &str) -> Result<Sources, String> {
    let s = s.trim();
    if !s.contains(',')
        && !s.contains(':')
        && !s.is_empty()
        && s.chars().all(|c| Src::from_letter(c).is_some())
    {
        return Ok(Sources(s.chars().filter_map(Src::from_letter).collect()));
    }
    let one = |item: &str| -> Result<Src, String> {
        let (role, load) = match item.trim().split_once(':') {
            Some((r, l)) => (r, l.parse::<Load>().map_err(|e| e.to_string())?),
            None => (item.trim(), Load::Volatile),
        };
        let role = parse_roles(role)?.0;
        match role.as_slice() {
            [r] => Ok(Src { role: *r, load }),
            _ => Err(format!("expected one role in {item:?}")),
        }
    };
    s.split(',').map(one).collect::<Result<_, _>>().map(Sources)
}

/// A list of buffer roles; displays as `transport,accum`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roles(pub Vec<Role>);

impl fmt::Display for Roles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slugs: Vec<&str> = self.0.iter().map(|r| r.slug()).collect();
        f.write_str(&slugs.join(","))
    }
}

fn role_letters() -> String {
    Role::ALL
        .iter()
        .map(|r| r.info().letter.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `transport,accum`, `T,A` or `TA`: slugs or letters, comma-separated, or one run of letters.
pub fn parse_roles(s: &str) -> Result<Roles, String> {
    let one = |item: &str| -> Result<Role, String> {
        let item = item.trim();
        let mut chars = item.chars();
        if let (Some(c), None) = (chars.next(), chars.next())
            && let Some(r) = Role::from_letter(c.to_ascii_uppercase())
        {
            return Ok(r);
        }
        item.parse::<Role>().map_err(|_| {
            format!(
                "unknown buffer role {item:?}: expected one of: {} (or the letters {})",
                Role::allowed(),
                role_letters()
            )
        })
    };
    if s.trim().is_empty() {
        return Err("expected at least one buffer role".into());
    }
    if !s.contains(',') && s.len() > 1 && s.chars().all(|c| Role::from_letter(c).is_some()) {
        return Ok(Roles(s.chars().filter_map(Role::from_letter).collect()));
    }
    s.split(',').map(one).collect::<Result<_, _>>().map(Roles)
}

pub fn parse_dtype(s: &str) -> Result<DType, String> {
    s.parse()
        .map_err(|e: redjit_codegen::SpecError| e.to_string())
}

pub fn parse_op(s: &str) -> Result<Op, String> {
    s.parse()
        .map_err(|e: redjit_codegen::SpecError| e.to_string())
}

/// The registry's slug (`rn`) or the variant's name (`nearest`).
pub fn parse_rounding(s: &str) -> Result<Rounding, String> {
    if let Ok(r) = s.parse::<Rounding>() {
        return Ok(r);
    }
    Rounding::ALL
        .iter()
        .copied()
        .find(|r| format!("{r:?}").eq_ignore_ascii_case(s))
        .ok_or_else(|| {
            let allowed: Vec<String> = Rounding::ALL
                .iter()
                .map(|r| format!("{} ({})", format!("{r:?}").to_lowercase(), r.slug()))
                .collect();
            format!(
                "unknown rounding {s:?}: expected one of: {}",
                allowed.join(", ")
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_parse_in_every_form() {
        let ta = Roles(vec![Role::Transport, Role::Accum]);
        assert_eq!(parse_roles("transport,accum").unwrap(), ta);
        assert_eq!(parse_roles("T,A").unwrap(), ta);
        assert_eq!(parse_roles("TA").unwrap(), ta);
        assert_eq!(parse_roles("t, accum").unwrap(), ta);
        assert!(parse_roles("transport,x").unwrap_err().contains("accum"));
        assert!(parse_roles("").is_err());
    }

    #[test]
    fn sources_parse_with_load_kinds() {
        let ta = Sources(vec![Role::Transport.into(), Src::read_only(Role::Accum)]);
        assert_eq!(parse_sources("Ta").unwrap(), ta);
        assert_eq!(parse_sources("transport,accum:nc").unwrap(), ta);
        assert_eq!(parse_sources("T, A:nc").unwrap(), ta);
        assert_eq!(ta.to_string(), "transport,accum:nc");
        assert!(
            parse_sources("accum:fast")
                .unwrap_err()
                .contains("volatile, nc")
        );
    }

    #[test]
    fn rounding_accepts_slug_and_name() {
        assert_eq!(parse_rounding("rn").unwrap(), Rounding::Nearest);
        assert_eq!(parse_rounding("nearest").unwrap(), Rounding::Nearest);
        assert!(parse_rounding("rz").unwrap_err().contains("nearest (rn)"));
    }

    #[test]
    fn spec_names_parse() {
        let s = parse_spec_name("reduce_copy_u4_f32_bf16_TA_T_sum_rn").unwrap();
        assert_eq!(s.name(), "reduce_copy_u4_f32_bf16_TA_T_sum_rn");
        assert!(parse_spec_name("nope_u4").is_err());
        assert!(parse_spec_name("reduce_copy_u3_f32_bf16_TA_T_sum_rn").is_err());
    }
}
