//! Rendering through tera: Rust fills a serde context, the template owns the text.

use std::sync::OnceLock;

use serde::Serialize;

use crate::error::SpecError;
use crate::registry::Family;

/// Generated CUDA C++ source of one kernel: deterministic text, header-free.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// The `extern "C"` symbol, equal to the spec's name.
    pub name: String,
    pub code: String,
}

/// Every template, embedded so a binary needs no files at run time.
pub(crate) const TEMPLATES: &[(&str, &str)] = &[
    (
        "prelude/types.cuh",
        include_str!("../../templates/prelude/types.cuh"),
    ),
    (
        "prelude/packs.cuh",
        include_str!("../../templates/prelude/packs.cuh"),
    ),
    (
        "prelude/ops.cuh",
        include_str!("../../templates/prelude/ops.cuh"),
    ),
    (
        "prelude/warp.cuh",
        include_str!("../../templates/prelude/warp.cuh"),
    ),
    (
        "prelude/dtype_f32.cuh",
        include_str!("../../templates/prelude/dtype_f32.cuh"),
    ),
    (
        "prelude/dtype_bf16.cuh",
        include_str!("../../templates/prelude/dtype_bf16.cuh"),
    ),
    (
        "prelude/dtype_f16.cuh",
        include_str!("../../templates/prelude/dtype_f16.cuh"),
    ),
    (
        "reduce_copy.cu",
        include_str!("../../templates/reduce_copy.cu"),
    ),
];

fn engine() -> Result<&'static tera::Tera, SpecError> {
    static ENGINE: OnceLock<Result<tera::Tera, SpecError>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut t = tera::Tera::new();
            // CUDA is not HTML: never escape.
            t.autoescape_on(Vec::<&str>::new());
            t.add_raw_templates(TEMPLATES.iter().copied())
                .map_err(|e| SpecError::Render {
                    template: "(all)".into(),
                    message: format!("{e:?}"),
                })?;
            Ok(t)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Renders the family's preludes, then `extra_preludes` (e.g. the dtype files the
/// spec uses, so a kernel carries only the device code it needs), then the family
/// template, all from one context, into one translation unit.
pub(crate) fn render(
    family: Family,
    name: String,
    extra_preludes: &[&'static str],
    ctx: &impl Serialize,
) -> Result<KernelSource, SpecError> {
    let err = |template: &str, e: tera::Error| SpecError::Render {
        template: template.to_string(),
        message: format!("{e:?}"),
    };
    let info = family.info();
    let ctx = tera::Context::from_serialize(ctx).map_err(|e| err(info.template, e))?;
    let engine = engine()?;
    let mut code = String::new();
    for template in info
        .preludes
        .iter()
        .chain(extra_preludes)
        .chain([&info.template])
    {
        code.push_str(
            &engine
                .render(template, &ctx)
                .map_err(|e| err(template, e))?,
        );
        if !code.ends_with('\n') {
            code.push('\n');
        }
    }
    Ok(KernelSource { name, code })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::DType;

    #[test]
    fn every_template_the_registry_names_is_embedded() {
        let has = |name: &str| TEMPLATES.iter().any(|(n, _)| *n == name);
        for f in Family::ALL {
            assert!(has(f.info().template), "{}", f.info().template);
            for p in f.info().preludes {
                assert!(has(p), "{p}");
            }
        }
        for d in DType::ALL {
            assert!(has(d.info().prelude), "{}", d.info().prelude);
        }
    }

    #[test]
    fn no_template_includes_a_toolkit_header() {
        for (name, text) in TEMPLATES {
            assert!(!text.contains("#include"), "{name} has an #include");
        }
    }
}
