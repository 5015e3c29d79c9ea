//! `redjit gen` (CUDA source) and `redjit ptx` (PTX through NVRTC, no GPU needed).

use clap::Args;
use redjit_codegen::Arch;
use redjit_codegen::KernelSpec;
use redjit_runtime::{CompileCache, Compiled, Jit, Nvrtc, Output, Runtime, RuntimeOptions, Target};

use crate::args::SpecSelect;
use crate::error::{CliError, CliResult};

/// The arch `ptx` targets when none is given and no GPU answers.
const FALLBACK_ARCH: Arch = Arch::SM90;

#[derive(Debug, Clone, Args)]
pub struct GenArgs {
    #[command(flatten)]
    pub select: SpecSelect,

    /// Print valid kernel names, one a line, instead of a source: every
    /// kernel `redjit selftest` checks and the twins its launchers take.
    #[arg(long)]
    pub list: bool,

    /// With --list: only these families, comma-separated (reduce-copy,
    /// reduce, all-reduce, norm, nms, softmax-all).
    #[arg(long, value_delimiter = ',', value_parser = crate::selftest::parse_family, requires = "list")]
    pub family: Vec<redjit_codegen::Family>,
}

/// `redjit list` flags.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    /// Only these families, comma-separated (reduce-copy, reduce, all-reduce,
    /// norm, nms, softmax-all).
    #[arg(value_delimiter = ',', value_parser = crate::selftest::parse_family)]
    pub family: Vec<redjit_codegen::Family>,
}

/// Each family's name grammar, how many kernels `redjit selftest` checks and
/// a few of their names (`gen --list` prints them all).
pub fn list_cmd(args: &ListArgs) -> CliResult {
    let families: Vec<redjit_codegen::Family> = if args.family.is_empty() {
        redjit_codegen::Family::ALL.to_vec()
    } else {
        args.family.clone()
    };
    let mut out = String::new();
    for f in families {
        let names = crate::selftest::kernel_names(&[f]);
        out.push_str(&format!(
            "{f}\n  names:    {}\n  examples: {}\n  checked:  {} kernels (redjit gen --list --family {f})\n",
            redjit_codegen::spec::name_format(f),
            names.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
            names.len(),
        ));
    }
    write_out(&out);
    Ok(())
}

#[derive(Debug, Clone, Args)]
pub struct PtxArgs {
    /// Target arch, e.g. sm_90 [default: the GPU's, else sm_90].
    #[arg(long, global = true, value_parser = parse_arch)]
    pub arch: Option<Arch>,

    #[command(flatten)]
    pub select: SpecSelect,
}

pub fn parse_arch(s: &str) -> Result<Arch, String> {
    s.parse()
        .map_err(|e: redjit_codegen::SpecError| e.to_string())
}

/// Writes `text` to stdout; a reader that closed the pipe (`| head`) has all
/// it wanted, so that is no error (println! would panic).
fn write_out(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}

pub fn gen_cmd(args: &GenArgs) -> CliResult {
    if args.list {
        if args.select.spec.is_some() || args.select.family.is_some() {
            return Err(CliError::usage("--list prints names: give it no kernel"));
        }
        let names = crate::selftest::kernel_names(&args.family).join("\n");
        write_out(&format!("{names}\n"));
        return Ok(());
    }
    let spec = args.select.resolve()?;
    let source = spec.render()?;
    let nl = if source.code.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    write_out(&format!("{}{nl}", source.code));
    Ok(())
}

pub fn ptx_cmd(args: &PtxArgs) -> CliResult {
    let spec = args.select.resolve()?;
    let arch = match args.arch {
        Some(a) => a,
        None => default_arch(),
    };
    let compiled = compile_for(spec.as_ref(), arch, Output::Ptx)?;
    let ptx = compiled.artifact.ptx().ok_or_else(|| {
        CliError::failure(format!("NVRTC returned no PTX text for {}", compiled.name))
    })?;
    print!("{ptx}");
    if !ptx.ends_with('\n') {
        println!();
    }
    Ok(())
}

/// `spec` compiled for `arch` through the disk cache (a repeated `ptx` or
/// `sass` loads it), after `arch` is checked against the archs this NVRTC
/// reports: an arch it lacks is bad input, one line.
pub fn compile_for(
    spec: &(dyn KernelSpec + Send + Sync),
    arch: Arch,
    output: Output,
) -> CliResult<Compiled> {
    let facts = Nvrtc::load()?.facts;
    if !facts.archs.contains(&arch.0) {
        let known: Vec<String> = facts.archs.iter().map(|a| format!("sm_{a}")).collect();
        return Err(CliError::usage(format!(
            "--arch {arch}: this NVRTC ({}) compiles for {}",
            facts.version_string(),
            known.join(", ")
        )));
    }
    let jit = Jit::with_target(Target { arch, output }, CompileCache::from_env());
    Ok(jit.compile(spec)?)
}

/// The GPU's arch when one is present, else sm_90 (with a note on stderr).
fn default_arch() -> Arch {
    if let Err(e) = redjit_runtime::gpu_available() {
        eprintln!("redjit: no GPU ({e}); targeting {FALLBACK_ARCH} (use --arch to choose)");
        return FALLBACK_ARCH;
    }
    let opts = RuntimeOptions::default().no_disk_cache(true);
    match Runtime::with_options(opts) {
        Ok(rt) => rt.device().arch,
        Err(e) => {
            eprintln!(
                "redjit: cannot read the GPU's arch ({e}); targeting {FALLBACK_ARCH} (use --arch to choose)"
            );
            FALLBACK_ARCH
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_listed_name_parses_and_renders() {
        let names = crate::selftest::kernel_names(&[]);
        assert!(names.len() > 500, "{}", names.len());
        for n in &names {
            let spec = crate::args::parse_spec_name(n).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert_eq!(&spec.name(), n);
            spec.render().unwrap_or_else(|e| panic!("{n}: {e}"));
            // The launchers push `params()`; the template must declare it.
            redjit_codegen::spec::check_params(spec.as_ref()).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
