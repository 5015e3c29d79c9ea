//! Kernels declared with [`#[reduce_copy]`](crate::reduce_copy), registered at link
//! time, compiled together at start-up by [`prepare_registered`].
//!
//! Every annotated function puts one [`RegisteredReduceCopy`] in a `linkme`
//! distributed slice (a linker section: nothing runs before `main`), so the set
//! is exactly the annotated functions linked into the program. A function that no
//! code of the program calls may be left out by the linker, with its kernel.
//!
//! ```
//! use redjit::half::bf16;
//!
//! /// bf16 received + f32 local input -> bf16.
//! #[redjit::reduce_copy(read_only(input))]
//! pub fn forward_hop(recv: &[bf16], input: &[f32], send: &mut [bf16]);
//!
//! # fn main() {
//! // The declaration alone registers its kernel: no code runs before main.
//! let f = redjit::registered().find(|f| f.function().ends_with("forward_hop")).unwrap();
//! assert_eq!(f.name(), "reduce_copy_u4_f32_bf16_Ta_T_sum_rn");
//! assert!(redjit::registered_specs().contains(f.spec()));
//! # }
//! ```

use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use linkme::distributed_slice;
use redjit_codegen::{DType, Op, ReduceCopySpec, Role, Rounding, Src};
use redjit_runtime::{
    KernelInput, KernelOutput, LaunchOptions, PrepareReport, ReduceCopyArgs, ReduceCopyKernel,
    Result, Runtime,
};

/// Every `#[reduce_copy]` function of the program, one entry per function.
#[doc(hidden)]
#[distributed_slice]
pub static REDUCE_COPY: [&'static RegisteredReduceCopy];

/// Held while a registered kernel is compiled for a runtime, so that concurrent
/// first calls (and `prepare_registered`) compile it once. NVRTC serialises
/// compiles within a process anyway; launches of loaded kernels never take it.
static FIRST_USE: Mutex<()> = Mutex::new(());

/// A `ReduceCopySpec` as a constant: what the macro writes, checked at compile
/// time with `ReduceCopySpec::validate`.
#[derive(Debug, Clone, Copy)]
pub struct StaticReduceCopy {
    /// [`ReduceCopySpec::unroll`].
    pub unroll: u32,
    /// [`ReduceCopySpec::accum`].
    pub accum: DType,
    /// [`ReduceCopySpec::transport`].
    pub transport: DType,
    /// [`ReduceCopySpec::srcs`].
    pub srcs: &'static [Src],
    /// [`ReduceCopySpec::dsts`].
    pub dsts: &'static [Role],
    /// [`ReduceCopySpec::op`].
    pub op: Op,
    /// [`ReduceCopySpec::rounding`].
    pub rounding: Rounding,
}

impl StaticReduceCopy {
    /// The spec it stands for (the aligned kernel; the launcher picks a
    /// misaligned twin itself).
    pub fn to_spec(&self) -> ReduceCopySpec {
        ReduceCopySpec {
            unroll: self.unroll,
            accum: self.accum,
            transport: self.transport,
            srcs: self.srcs.to_vec(),
            dsts: self.dsts.to_vec(),
            op: self.op,
            rounding: self.rounding,
            misalignment: None,
        }
    }
}

/// One `#[reduce_copy]` function: its path, its kernel and its spec.
pub struct RegisteredReduceCopy {
    function: &'static str,
    name: &'static str,
    decl: StaticReduceCopy,
    spec: OnceLock<ReduceCopySpec>,
}

impl RegisteredReduceCopy {
    /// Written by the macro; `name` is the kernel name it derived at compile time.
    #[doc(hidden)]
    pub const fn new(
        function: &'static str,
        name: &'static str,
        decl: StaticReduceCopy,
    ) -> RegisteredReduceCopy {
        RegisteredReduceCopy {
            function,
            name,
            decl,
            spec: OnceLock::new(),
        }
    }

    /// The annotated function's path, e.g. `my_crate::steps::quantize`.
    pub fn function(&self) -> &'static str {
        self.function
    }

    /// The kernel's name, as the macro derived it from the spec.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The spec, built on first use.
    pub fn spec(&self) -> &ReduceCopySpec {
        self.spec.get_or_init(|| self.decl.to_spec())
    }

    /// The kernel on `rt`: loaded already (prepared, or used before), or compiled
    /// now, once, however many threads ask at the same time.
    pub fn kernel<'rt>(&self, rt: &'rt Runtime) -> Result<ReduceCopyKernel<'rt>> {
        if !rt.is_loaded(self.name) {
            let _once = FIRST_USE.lock().unwrap_or_else(|p| p.into_inner());
            return rt.reduce_copy(self.spec());
        }
        rt.reduce_copy(self.spec())
    }

    /// What a generated launcher calls; the checks are `ReduceCopyKernel`'s.
    #[doc(hidden)]
    pub fn launch(
        &self,
        rt: &Runtime,
        stream: &std::sync::Arc<cudarc::driver::CudaStream>,
        srcs: &[&dyn KernelInput],
        dsts: &mut [&mut dyn KernelOutput],
        args: ReduceCopyArgs,
    ) -> Result<()> {
        self.kernel(rt)?
            .launch_with(stream, srcs, dsts, args, LaunchOptions::default())
    }
}

/// Every registered function, in link order (one entry per function; two
/// functions may share a kernel).
pub fn registered() -> impl Iterator<Item = &'static RegisteredReduceCopy> {
    REDUCE_COPY.iter().copied()
}

/// The distinct specs of the registered functions, sorted by kernel name.
pub fn registered_specs() -> Vec<ReduceCopySpec> {
    let mut specs: Vec<ReduceCopySpec> = registered().map(|r| r.spec().clone()).collect();
    specs.sort_by_key(|s| s.to_string());
    specs.dedup();
    specs
}

/// Compiles and loads every registered kernel on `rt`: exactly the registered
/// set, through the disk cache, in parallel NVRTC programs where the cache misses.
/// Draws a progress line on stderr when it is a terminal. Functions called
/// before this compile their kernel on first call instead.
pub fn prepare_registered(rt: &Runtime) -> Result<PrepareReport> {
    let specs = registered_specs();
    let bar = progress::start(specs.len());
    let report = {
        let _once = FIRST_USE.lock().unwrap_or_else(|p| p.into_inner());
        rt.prepare(&specs)
    };
    progress::finish(bar, report.as_ref().ok());
    report
}

/// One line for a prepare report: `3 kernels in 41.2 ms (3 compiled, 0 from disk, 0 in memory)`.
pub fn describe(report: &PrepareReport) -> String {
    format!(
        "{} kernel{} in {:.1} ms ({} compiled, {} from disk, {} in memory)",
        report.kernels,
        if report.kernels == 1 { "" } else { "s" },
        ms(report.wall),
        report.compiled,
        report.from_disk,
        report.from_memory
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(feature = "progress")]
mod progress {
    use std::io::IsTerminal;
    use std::time::Duration;

    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use redjit_runtime::PrepareReport;

    /// A spinner while the kernels compile (one call, so no fake per-kernel
    /// steps); `None` unless stderr is a terminal.
    pub fn start(kernels: usize) -> Option<ProgressBar> {
        if kernels == 0 || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} redjit: {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(format!(
            "preparing {kernels} kernel{}",
            if kernels == 1 { "" } else { "s" }
        ));
        bar.enable_steady_tick(Duration::from_millis(80));
        Some(bar)
    }

    pub fn finish(bar: Option<ProgressBar>, report: Option<&PrepareReport>) {
        let Some(bar) = bar else { return };
        bar.set_style(ProgressStyle::default_spinner());
        match report {
            Some(r) => bar.finish_with_message(format!("redjit: {}", super::describe(r))),
            None => bar.finish_and_clear(),
        }
    }
}

#[cfg(not(feature = "progress"))]
mod progress {
    pub fn start(_kernels: usize) -> Option<()> {
        None
    }
    pub fn finish(_bar: Option<()>, _report: Option<&redjit_runtime::PrepareReport>) {}
}
