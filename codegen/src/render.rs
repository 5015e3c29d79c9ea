//! Rendering through tera: Rust fills a serde context, the template owns the text.

use std::sync::OnceLock;

use serde::Serialize;

use crate::error::SpecError;

/// Every template, embedded so a binary needs no files at run time.
pub(crate) const TEMPLATES: &[(&str, &str)] = &[
    (
        "prelude/norm_fp8.cuh",
        include_str!("../../templates/prelude/norm_fp8.cuh"),
    ),
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
        "prelude/philox.cuh",
        include_str!("../../templates/prelude/philox.cuh"),
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
    (
        "prelude/reduce.cuh",
        include_str!("../../templates/prelude/reduce.cuh"),
    ),
    ("reduce.cu", include_str!("../../templates/reduce.cu")),
    (
        "prelude/peer.cuh",
        include_str!("../../templates/prelude/peer.cuh"),
    ),
    (
        "all_reduce.cu",
        include_str!("../../templates/all_reduce.cu"),
    ),
    (
        "all_reduce_norm.cu",
        include_str!("../../templates/all_reduce_norm.cu"),
    ),
    (
        "prelude/norm.cuh",
        include_str!("../../templates/prelude/norm.cuh"),
    ),
    ("norm.cu", include_str!("../../templates/norm.cu")),
    (
        "prelude/nms.cuh",
        include_str!("../../templates/prelude/nms.cuh"),
    ),
    ("nms.cu", include_str!("../../templates/nms.cu")),
    (
        "prelude/packs8.cuh",
        include_str!("../../templates/prelude/packs8.cuh"),
    ),
    (
        "prelude/dtype_e4m3.cuh",
        include_str!("../../templates/prelude/dtype_e4m3.cuh"),
    ),
    (
        "prelude/dtype_e5m2.cuh",
        include_str!("../../templates/prelude/dtype_e5m2.cuh"),
    ),
    (
        "prelude/dtype_i8.cuh",
        include_str!("../../templates/prelude/dtype_i8.cuh"),
    ),
    (
        "prelude/reduce_int.cuh",
        include_str!("../../templates/prelude/reduce_int.cuh"),
    ),
    (
        "prelude/softmax_all.cuh",
        include_str!("../../templates/prelude/softmax_all.cuh"),
    ),
    (
        "softmax_all.cu",
        include_str!("../../templates/softmax_all.cu"),
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

/// Renders one family template (a kernel body) from a serde context.
pub(crate) fn render_template(template: &str, ctx: &impl Serialize) -> Result<String, SpecError> {
    let err = |e: tera::Error| SpecError::Render {
        template: template.to_string(),
        message: format!("{e:?}"),
    };
    let ctx = tera::Context::from_serialize(ctx).map_err(err)?;
    engine()?.render(template, &ctx).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{DType, Family};

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
            for p in d.info().needs {
                assert!(has(p), "{p}");
            }
        }
    }

    #[test]
    fn no_template_includes_a_toolkit_header() {
        for (name, text) in TEMPLATES {
            assert!(!text.contains("#include"), "{name} has an #include");
        }
    }
}
