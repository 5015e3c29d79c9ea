//! Kernel specs: plain Rust values that describe one kernel configuration.

pub mod all_reduce;
pub mod nms;
pub mod norm;
pub mod reduce;
pub mod reduce_copy;
pub mod softmax_all;

use crate::error::SpecError;
use crate::params::{Param, ParamKind};
use crate::registry::{Arch, Family};
use crate::source::KernelSource;
use serde::Serialize;

/// What every kernel family's spec offers the runtime, the macro and the CLI.
pub trait KernelSpec {
    /// The family this spec belongs to.
    fn family(&self) -> Family;

    /// The single place where a configuration is accepted or rejected.
    fn validate(&self) -> Result<(), SpecError>;

    /// The deterministic, readable kernel name (also the CUDA symbol).
    fn name(&self) -> String;

    /// Oldest GPU the generated code runs on.
    fn min_arch(&self) -> Arch;

    /// The kernel's parameters in order: what its launcher pushes (checked
    /// before a launch) and what its rendered signature declares (a test).
    fn params(&self) -> Vec<Param>;

    /// Shared device code the kernel needs (family preludes, then the dtype files
    /// of its buffers), in the order it must appear. By default the family's.
    fn preludes(&self) -> Vec<&'static str> {
        self.family().info().preludes.to_vec()
    }

    /// Validates, then renders the family template alone: the kernel and its
    /// helpers (in a namespace of the kernel's own), without the preludes, so
    /// that several kernels can share one translation unit.
    fn render_body(&self) -> Result<String, SpecError>;

    /// Validates, then renders the whole CUDA source of this one kernel.
    fn render(&self) -> Result<KernelSource, SpecError> {
        render_batch(&[&self])
    }

    /// Validates, then checks that `arch` can run this kernel; a typed error before
    /// NVRTC ever sees the source, never a missing symbol at load.
    fn check_arch(&self, arch: Arch) -> Result<(), SpecError> {
        self.validate()?;
        let needs = self.min_arch();
        if arch < needs {
            return Err(SpecError::Unsupported {
                what: self.name(),
                arch,
                needs,
            });
        }
        Ok(())
    }
}

/// A reference to a spec is a spec (so `prepare(&[&spec])` works).
impl<S: KernelSpec + ?Sized> KernelSpec for &S {
    fn family(&self) -> Family {
        (**self).family()
    }
    fn validate(&self) -> Result<(), SpecError> {
        (**self).validate()
    }
    fn name(&self) -> String {
        (**self).name()
    }
    fn min_arch(&self) -> Arch {
        (**self).min_arch()
    }
    fn params(&self) -> Vec<Param> {
        (**self).params()
    }
    fn preludes(&self) -> Vec<&'static str> {
        (**self).preludes()
    }
    fn render_body(&self) -> Result<String, SpecError> {
        (**self).render_body()
    }
    fn render(&self) -> Result<KernelSource, SpecError> {
        (**self).render()
    }
    fn check_arch(&self, arch: Arch) -> Result<(), SpecError> {
        (**self).check_arch(arch)
    }
}

/// Each family's kernel name is its `Display`: it parses back with `FromStr`.
macro_rules! display_as_kernel_name {
    ($($spec:ty),+ $(,)?) => {$(
        impl std::fmt::Display for $spec {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&KernelSpec::name(self))
            }
        }
    )+};
}
display_as_kernel_name!(
    all_reduce::AllReduceSpec,
    nms::NmsSpec,
    norm::NormSpec,
    reduce::ReduceSpec,
    reduce_copy::ReduceCopySpec,
    softmax_all::SoftmaxAllSpec,
);

/// A kernel name that does not parse: `what` says whose names (e.g. "norm
/// kernel name"), `rule` the form expected or the part that broke it.
pub(crate) fn parse_error(what: &'static str, input: &str, rule: &str) -> SpecError {
    SpecError::Parse {
        what,
        input: crate::error::echo(input),
        rule: rule.to_string(),
    }
}

/// A kernel name being parsed as one of a family's: its errors name the
/// input, whose names it was read as, and the rule it broke.
pub(crate) struct NameParse<'a> {
    input: &'a str,
    family: Family,
}

impl<'a> NameParse<'a> {
    /// `input` read as a name of `family`, and its part after the family's
    /// `<slug>_`; else the error naming the form the family's names take.
    pub(crate) fn of(input: &'a str, family: Family) -> Result<(Self, &'a str), SpecError> {
        let name = NameParse { input, family };
        let rest = input
            .strip_prefix(family.slug())
            .and_then(|r| r.strip_prefix('_'))
            .ok_or_else(|| name.bad())?;
        Ok((name, rest))
    }

    /// The error naming `rule`, the part that broke the name.
    pub(crate) fn err(&self, rule: &str) -> SpecError {
        parse_error(self.family.info().name, self.input, rule)
    }

    /// The error naming the form the family's names take.
    pub(crate) fn bad(&self) -> SpecError {
        self.err(&format!("expected {}", name_format(self.family)))
    }

    /// Only the spelling the family prints parses back (no upper- for
    /// lower-case roles, no leading zeros), so that names in logs, caches and
    /// PTX agree: `spec`, read from this name, must print it.
    pub(crate) fn canonical(&self, spec: &impl KernelSpec) -> Result<(), SpecError> {
        let name = spec.name();
        if name != self.input {
            return Err(self.err(&format!("not the canonical spelling; did you mean {name}?")));
        }
        Ok(())
    }
}

/// The grammar of a family's kernel names, with an example: what a name that
/// does not parse is told, and what `redjit list` prints.
pub fn name_format(family: Family) -> String {
    match family {
        Family::AllReduce => "all_reduce_r<world>_<dtype>_<op>_<algorithm>[_cpasync][_rs|_ag][_q_<transport>_sr][_addrms_t<threads>x<packs>[_qd|_qs]], e.g. all_reduce_r4_bf16_sum_twostage".into(),
        Family::Reduce => "reduce_<axis>_<op>_<input>_<accum>[_w|_c|_t<threads>u<unroll>], e.g. reduce_all_sum_bf16_f32".into(),
        Family::ReduceCopy => "reduce_copy_u<unroll>_<accum>_<transport>_<src roles>_<dst roles>_<op>_<rounding>[_m<offset per buffer>], e.g. reduce_copy_u4_f32_bf16_TA_T_sum_rn (source letters: upper case volatile, lower case read-only)".into(),
        Family::SoftmaxAll => "softmax_all_<op>_<input>_<output> or softmax_all_stats_<input>, e.g. softmax_all_softmax_bf16_bf16".into(),
        Family::Norm => "norm_<op>[_<algo>][_res]_<input>_<output>_<w|b|s|l><lanes>x<packs>[_o<blocks per SM>][_c<cluster blocks>][_p][_n][_x][_v][_r][_g][_h<packs held>][_qd|_qs], e.g. norm_softmax_online_bf16_bf16_w32x4 or norm_rmsnorm_res_bf16_e4m3_b256x4_qd".into(),
        Family::Nms => format!(
            "nms_<stage>_t<threads>, stage one of: {}, e.g. nms_walk_t256",
            crate::registry::NmsStage::allowed()
        ),
    }
}

/// Whether `spec`'s rendered signature declares exactly `spec.params()` (names
/// and kinds, in order); the first difference otherwise.
pub fn check_params(spec: &dyn KernelSpec) -> Result<(), String> {
    let name = spec.name();
    let src = spec.render().map_err(|e| format!("{name}: {e}"))?;
    let declared = crate::params::signature(&src.code, &name)
        .ok_or_else(|| format!("{name}: no extern \"C\" definition in its source"))?;
    let listed = spec.params();
    for i in 0..declared.len().max(listed.len()) {
        let d = declared
            .get(i)
            .map(|(n, t)| (n.as_str(), ParamKind::of_c_type(t)));
        let l = listed.get(i).map(|p| (p.name, Some(p.kind)));
        if d != l {
            return Err(format!(
                "{name}: parameter {i} is {d:?} in the template and {l:?} in params()"
            ));
        }
    }
    Ok(())
}

/// Validates `spec`, then renders its family's template from `ctx`: every
/// spec's `render_body`.
pub(crate) fn render_body(
    spec: &(impl KernelSpec + ?Sized),
    ctx: &impl Serialize,
) -> Result<String, SpecError> {
    spec.validate()?;
    crate::render::render_template(spec.family().info().template, ctx)
}

/// One translation unit for `specs`: each prelude any of them needs, once, in
/// first-needed order, then every kernel body. NVRTC pays its per-program cost
/// once for the batch (16 kernels in one program 35 ms, in 16 programs 161 ms,
/// and threads do not help: NVRTC serialises programs within a process; H100,
/// commit 1317614).
pub fn render_batch(specs: &[&dyn KernelSpec]) -> Result<KernelSource, SpecError> {
    let first = specs.first().ok_or_else(|| SpecError::Render {
        template: "(batch)".into(),
        message: "no kernels to render".into(),
    })?;
    let mut preludes: Vec<&'static str> = Vec::new();
    for spec in specs {
        spec.validate()?;
        for p in spec.preludes() {
            if !preludes.contains(&p) {
                preludes.push(p);
            }
        }
    }
    let mut code = String::new();
    let mut push = |text: &str| {
        code.push_str(text);
        if !code.ends_with('\n') {
            code.push('\n');
        }
    };
    for p in &preludes {
        // Preludes are static text: an empty context.
        push(&crate::render::render_template(
            p,
            &std::collections::BTreeMap::<String, String>::new(),
        )?);
    }
    let mut kernels = Vec::with_capacity(specs.len());
    for spec in specs {
        push(&spec.render_body()?);
        kernels.push(spec.name());
    }
    let name = match specs {
        [_] => first.name(),
        _ => format!("redjit_batch_{}_{}", specs.len(), first.name()),
    };
    Ok(KernelSource {
        name,
        kernels,
        code,
    })
}
