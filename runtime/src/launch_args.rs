//! A kernel launch's arguments, pushed against the kernel's parameter list
//! (`KernelSpec::params`, which a codegen test holds to the rendered
//! signature): a launcher that pushes another kind, or another count, than the
//! template declares gets an error before anything is launched.

use cudarc::driver::{CudaFunction, CudaStream, LaunchArgs, PushKernelArg};
use redjit_codegen::KernelSpec;
use redjit_codegen::params::{Param, ParamKind};

use crate::elem::{KernelInput, KernelOutput};
use crate::error::{Error, Result};

/// A launch builder that checks each push against the next parameter.
pub(crate) struct CheckedArgs<'a> {
    args: LaunchArgs<'a>,
    params: &'a [Param],
    /// Named only in an error.
    spec: &'a dyn KernelSpec,
    at: usize,
    wrong: Option<String>,
}

impl<'a> CheckedArgs<'a> {
    /// Arguments for `func`, the kernel of `spec`, whose parameters are
    /// `params` (`spec.params()`, kept by the kernel object).
    pub(crate) fn new(
        stream: &'a CudaStream,
        func: &'a CudaFunction,
        spec: &'a dyn KernelSpec,
        params: &'a [Param],
    ) -> CheckedArgs<'a> {
        CheckedArgs {
            args: stream.launch_builder(func),
            params,
            spec,
            at: 0,
            wrong: None,
        }
    }

    fn next(&mut self, kind: ParamKind) {
        if self.wrong.is_none() {
            match self.params.get(self.at) {
                Some(p) if p.kind == kind => {}
                Some(p) => {
                    self.wrong = Some(format!(
                        "argument {} is a {kind:?}; the kernel's parameter {} ({}) is a {:?}",
                        self.at, self.at, p.name, p.kind
                    ))
                }
                None => {
                    self.wrong = Some(format!(
                        "argument {} ({kind:?}) is past the kernel's {} parameters",
                        self.at,
                        self.params.len()
                    ))
                }
            }
        }
        self.at += 1;
    }

    /// A buffer the kernel reads.
    pub(crate) fn input(&mut self, b: &'a dyn KernelInput) -> &mut Self {
        self.next(ParamKind::Ptr);
        b.push_input(&mut self.args);
        self
    }

    /// A buffer the kernel writes.
    pub(crate) fn output(&mut self, b: &'a mut dyn KernelOutput) -> &mut Self {
        self.next(ParamKind::Ptr);
        b.push_output(&mut self.args);
        self
    }

    /// A device pointer that `push` pushes itself (a buffer type of its own).
    pub(crate) fn pushed_ptr(&mut self, push: impl FnOnce(&mut LaunchArgs<'a>)) -> &mut Self {
        self.next(ParamKind::Ptr);
        push(&mut self.args);
        self
    }

    /// A device pointer: a raw address, or a cudarc buffer.
    pub(crate) fn ptr<T>(&mut self, v: T) -> &mut Self
    where
        LaunchArgs<'a>: PushKernelArg<T>,
    {
        self.next(ParamKind::Ptr);
        self.args.arg(v);
        self
    }

    /// A `rj_u64`.
    pub(crate) fn u64(&mut self, v: &'a u64) -> &mut Self {
        self.next(ParamKind::U64);
        self.args.arg(v);
        self
    }

    /// A `rj_u32`.
    pub(crate) fn u32(&mut self, v: &'a u32) -> &mut Self {
        self.next(ParamKind::U32);
        self.args.arg(v);
        self
    }

    /// A `float`.
    pub(crate) fn f32(&mut self, v: &'a f32) -> &mut Self {
        self.next(ParamKind::F32);
        self.args.arg(v);
        self
    }

    /// A table of peer addresses, by value.
    pub(crate) fn peer_table<T>(&mut self, v: &'a T) -> &mut Self
    where
        LaunchArgs<'a>: PushKernelArg<&'a T>,
    {
        self.next(ParamKind::PeerTable);
        self.args.arg(v);
        self
    }

    /// The arguments, once every parameter got one of its kind.
    pub(crate) fn ready(self) -> Result<LaunchArgs<'a>> {
        let err = Error::launch_of(|| self.spec.name());
        if let Some(w) = &self.wrong {
            return Err(err(
                "arguments",
                w.clone(),
                "the launcher must push the kernel's parameters in order (KernelSpec::params)"
                    .into(),
            ));
        }
        if self.at != self.params.len() {
            return Err(err(
                "arguments",
                format!("{} pushed", self.at),
                format!(
                    "the kernel takes {} parameters (KernelSpec::params)",
                    self.params.len()
                ),
            ));
        }
        Ok(self.args)
    }
}
