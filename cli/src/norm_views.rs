//! One norm call's device buffers as views from their starts, and the
//! `NormArgs` that borrow them: what the bench times and the tuner's twin
//! check launches.

use redjit_codegen::NormSpec;
use redjit_codegen::spec::norm::Fp8Scale;
use redjit_runtime::{Fp8Scales, KernelOutput, Matrix, NormArgs};

use crate::devbuf::{DevBuf, DevView, DevViewMut};

/// A norm call's device buffers, each holding what the call reads or writes
/// of it; those the spec takes none of are left out of its views.
pub struct NormBuffers<'a> {
    pub x: &'a DevBuf,
    pub residual: Option<&'a DevBuf>,
    pub weight: Option<&'a DevBuf>,
    pub bias: Option<&'a DevBuf>,
    pub out: &'a mut DevBuf,
    pub residual_out: Option<&'a mut DevBuf>,
    /// An FP8 output's scales: one a row (written) or the one given (read).
    pub scale: Option<&'a mut DevBuf>,
}

/// The views of one call's buffers, from which its arguments borrow.
pub struct NormViews<'a> {
    x: DevView<'a>,
    residual: Option<DevView<'a>>,
    weight: Option<DevView<'a>>,
    bias: Option<DevView<'a>>,
    out: DevViewMut<'a>,
    residual_out: Option<DevViewMut<'a>>,
    scale: Option<ScaleView<'a>>,
}

/// An FP8 output's scales, as the spec's scaling uses them.
enum ScaleView<'a> {
    PerRow(DevViewMut<'a>),
    Given(DevView<'a>),
}

impl<'a> NormViews<'a> {
    /// The views of `bufs` that a call of `spec` over `m` takes: the row
    /// buffers' `(rows - 1) * ld + cols` elements, the weight's and bias's
    /// `cols`, the scales' `rows` (per row) or 1 (given).
    pub fn of(spec: &NormSpec, m: Matrix, bufs: NormBuffers<'a>) -> NormViews<'a> {
        let info = spec.op.info();
        // An extent past usize leaves the views empty: the launch refuses the call.
        let n = m.extent().unwrap_or(0);
        let scale = bufs.scale.and_then(|s| match spec.fp8? {
            Fp8Scale::PerRow => Some(ScaleView::PerRow(s.view_mut(0, m.rows))),
            Fp8Scale::Given => Some(ScaleView::Given(s.view(0, 1))),
        });
        NormViews {
            x: bufs.x.view(0, n),
            residual: bufs
                .residual
                .filter(|_| spec.residual)
                .map(|b| b.view(0, n)),
            weight: bufs
                .weight
                .filter(|_| !info.softmax)
                .map(|b| b.view(0, m.cols)),
            bias: bufs.bias.filter(|_| info.bias).map(|b| b.view(0, m.cols)),
            out: bufs.out.view_mut(0, n),
            residual_out: bufs
                .residual_out
                .filter(|_| spec.residual)
                .map(|b| b.view_mut(0, n)),
            scale,
        }
    }

    /// The call's arguments over `m` with `param` (no row statistics).
    pub fn args(&mut self, m: Matrix, param: f32) -> NormArgs<'_> {
        NormArgs {
            x: self.x.input(),
            residual: self.residual.as_ref().map(|v| v.input()),
            weight: self.weight.as_ref().map(|v| v.input()),
            bias: self.bias.as_ref().map(|v| v.input()),
            out: self.out.output(),
            residual_out: self
                .residual_out
                .as_mut()
                .map(|v| v.output() as &mut dyn KernelOutput),
            mean: None,
            rstd: None,
            shape: m,
            param,
            scale: self.scale.as_mut().map(|s| match s {
                ScaleView::PerRow(v) => Fp8Scales::PerRow(v.output()),
                ScaleView::Given(v) => Fp8Scales::Given(v.input()),
            }),
        }
    }
}
