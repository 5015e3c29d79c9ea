//! `redjit sass`: the kernel compiled to cubin by NVRTC, disassembled with
//! `cuobjdump -sass` (which runs `nvdisasm`), or with `nvdisasm` alone. No GPU
//! needed. The tools are looked for on PATH, in `$CUDA_HOME/bin`,
//! `$CUDA_PATH/bin`, `/usr/local/cuda/bin` and the project's `.tools/`
//! (`scripts/cuda-tools.sh` installs them there: pip `nvidia-cuda-cuobjdump`,
//! `nvidia-cuda-nvdisasm`).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use redjit_codegen::Arch;
use redjit_runtime::Output;

use crate::args::SpecSelect;
use crate::error::{CliError, CliResult};

#[derive(Debug, Clone, Args)]
pub struct SassArgs {
    /// Target arch, e.g. sm_90.
    #[arg(long, global = true, value_parser = crate::cmd_gen::parse_arch, default_value = "sm_90")]
    pub arch: Arch,

    #[command(flatten)]
    pub select: SpecSelect,
}

/// Folders under a project root where `scripts/cuda-tools.sh` puts CUDA tools.
const PROJECT_TOOL_DIRS: &[&str] = &[
    ".tools/cuda-sass/nvidia/cu13/bin",
    ".tools/cuda/nvidia/cu13/bin",
];

/// Every folder a tool is looked for in, in order.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            dirs.push(PathBuf::from(v).join("bin"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/bin"));
    // The project's .tools/, from the working directory or the binary upwards.
    let starts = [std::env::current_dir().ok(), std::env::current_exe().ok()];
    for start in starts.into_iter().flatten() {
        for dir in start.ancestors() {
            for sub in PROJECT_TOOL_DIRS {
                let d = dir.join(sub);
                if d.is_dir() && !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
    }
    dirs
}

/// The first executable file called `name` in `dirs`.
pub fn find_tool(name: &str, dirs: &[PathBuf]) -> Option<PathBuf> {
    dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())
}

pub fn sass_cmd(args: &SassArgs) -> CliResult {
    let spec = args.select.resolve()?;
    let dirs = search_dirs();
    let cuobjdump = find_tool("cuobjdump", &dirs);
    let nvdisasm = find_tool("nvdisasm", &dirs);
    if cuobjdump.is_none() && nvdisasm.is_none() {
        return Err(CliError::failure(
            "redjit sass needs cuobjdump or nvdisasm (CUDA toolkit, or `bash scripts/cuda-tools.sh` installs them into .tools/; looked on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, .tools/)",
        ));
    }
    let compiled = crate::cmd_gen::compile_for(spec.as_ref(), args.arch, Output::Cubin)?;
    let dir = std::env::temp_dir().join(format!("redjit-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::failure(format!("cannot create {}: {e}", dir.display())))?;
    let cubin = dir.join(format!("{}.cubin", compiled.name));
    let written = std::fs::write(&cubin, &compiled.artifact.bytes);
    let result = written
        .map_err(|e| CliError::failure(format!("cannot write {}: {e}", cubin.display())))
        .and_then(|()| {
            disassemble(
                &cubin,
                &compiled.name,
                cuobjdump.as_deref(),
                nvdisasm.as_deref(),
            )
        });
    let _ = std::fs::remove_dir_all(&dir);
    print!("{}", result?);
    Ok(())
}

/// `cuobjdump -sass -fun NAME` (with nvdisasm's folder on its PATH), else
/// `nvdisasm -fun`-less full listing of the cubin.
fn disassemble(
    cubin: &Path,
    name: &str,
    cuobjdump: Option<&Path>,
    nvdisasm: Option<&Path>,
) -> CliResult<String> {
    let mut cmd = match (cuobjdump, nvdisasm) {
        (Some(c), _) => {
            let mut cmd = Command::new(c);
            cmd.arg("-sass").arg("-fun").arg(name).arg(cubin);
            if let Some(dir) = nvdisasm.and_then(Path::parent) {
                let mut path = vec![dir.to_path_buf()];
                if let Some(p) = std::env::var_os("PATH") {
                    path.extend(std::env::split_paths(&p));
                }
                if let Ok(joined) = std::env::join_paths(path) {
                    cmd.env("PATH", joined);
                }
            }
            cmd
        }
        (None, Some(d)) => {
            let mut cmd = Command::new(d);
            cmd.arg("-c").arg(cubin);
            cmd
        }
        (None, None) => return Err(CliError::failure("no disassembler")),
    };
    let tool = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .output()
        .map_err(|e| CliError::failure(format!("cannot run {tool}: {e}")))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let why = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(CliError::failure(format!(
            "{tool} failed ({}): {why}",
            out.status
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_found_by_name_in_order() {
        let dir = std::env::temp_dir().join(format!("redjit-tools-{}", std::process::id()));
        let (a, b) = (dir.join("a"), dir.join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(b.join("nvdisasm"), "").unwrap();
        std::fs::write(a.join("nvdisasm"), "").unwrap();
        let dirs = vec![a.clone(), b];
        assert_eq!(find_tool("nvdisasm", &dirs), Some(a.join("nvdisasm")));
        assert_eq!(find_tool("cuobjdump", &dirs), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
