//! NVRTC: generated source -> cubin (or PTX), for one target architecture.
//!
//! A thin layer over cudarc's `nvrtc::{sys,result}`: cudarc's safe layer only
//! returns PTX, and redjit wants cubin so that the driver does no JIT at load.
//!
//! ```no_run
//! use redjit_runtime::nvrtc::{Nvrtc, Output, Target};
//! use redjit_runtime::{Arch, KernelSpec, ReduceCopySpec};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let nvrtc = Nvrtc::load()?; // an Err when libnvrtc is not on the library path
//! let source = ReduceCopySpec::default().render()?;
//! let ptx = nvrtc.compile(&source, Target { arch: Arch::SM90, output: Output::Ptx })?;
//! assert!(ptx.ptx().unwrap().contains(".entry reduce_copy_u4_f32_bf16_TA_T_sum_rn"));
//! # Ok(()) }
//! ```

use std::ffi::{CStr, CString};
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys};
use redjit_codegen::{Arch, KernelSource};

use crate::error::{Error, Result};

/// What NVRTC is asked to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    /// Machine code for exactly this arch: loads without driver JIT.
    Cubin,
    /// Virtual ISA; the driver JIT-compiles it at load.
    Ptx,
}

impl Output {
    /// File extension of this kind of output (`cubin`, `ptx`).
    pub fn extension(self) -> &'static str {
        match self {
            Output::Cubin => "cubin",
            Output::Ptx => "ptx",
        }
    }
}

/// The compile target: an arch and an output kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Target {
    /// The architecture compiled for (`compute_XY` for PTX, `sm_XY` for cubin).
    pub arch: Arch,
    /// Cubin or PTX.
    pub output: Output,
}

impl Target {
    /// The NVRTC options for this target. Fixed and few: they are part of the cache
    /// key and of the PTX snapshots.
    pub fn options(&self) -> Vec<String> {
        let arch = match self.output {
            Output::Cubin => format!("--gpu-architecture=sm_{}", self.arch.0),
            Output::Ptx => format!("--gpu-architecture=compute_{}", self.arch.0),
        };
        // --minimal: the source is header-free and uses no CUDA runtime types,
        // textures or device-side launches, so NVRTC need not declare them.
        vec![arch, "--std=c++17".into(), "--minimal".into()]
    }
}

/// A compiled kernel: cubin or PTX bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// What the bytes are.
    pub output: Output,
    /// The cubin image, or the PTX text (NUL-terminated as NVRTC returns it).
    pub bytes: Vec<u8>,
}

impl Artifact {
    /// PTX text (None for cubin).
    pub fn ptx(&self) -> Option<&str> {
        match self.output {
            Output::Ptx => std::str::from_utf8(&self.bytes)
                .ok()
                .map(|s| s.trim_end_matches('\0')),
            Output::Cubin => None,
        }
    }
}

/// What redjit needs to know of an NVRTC to key and target its output: its
/// version and the archs it can emit cubin for. Remembered between processes
/// (see `identity`), so a warm start need not load the library.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvrtcFacts {
    /// NVRTC's (major, minor) version.
    pub version: (i32, i32),
    /// The `sm_XY` archs it can emit cubin for, as `10 * X + Y`.
    pub archs: Vec<u32>,
}

impl NvrtcFacts {
    /// `major.minor`, as it enters cache keys.
    pub fn version_string(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }

    /// Cubin for `arch` when this NVRTC knows it; otherwise PTX for the newest arch
    /// it knows below `arch` (the driver JIT-compiles that forward).
    pub fn target_for(&self, arch: Arch) -> Result<Target> {
        if self.archs.contains(&arch.0) {
            return Ok(Target {
                arch,
                output: Output::Cubin,
            });
        }
        self.archs
            .iter()
            .filter(|&&a| a <= arch.0)
            .max()
            .map(|&a| Target {
                arch: Arch(a),
                output: Output::Ptx,
            })
            .ok_or_else(|| {
                Error::Spec(redjit_codegen::SpecError::Unsupported {
                    what: format!("NVRTC {}", self.version_string()),
                    arch,
                    needs: Arch(self.archs.iter().copied().min().unwrap_or(arch.0)),
                })
            })
    }
}

/// Opens NVRTC and keeps it open for the life of the process, so the presence
/// check is an `Err` rather than cudarc's panic, and cudarc's own load of the
/// same library then only bumps the reference count (a check that closed what
/// it opened cost ~5 ms in the second open).
fn hold_library() -> Result<()> {
    static HELD: OnceLock<std::result::Result<libloading::Library, String>> = OnceLock::new();
    HELD.get_or_init(|| {
        crate::libraries::open("nvrtc")
            .map_err(|names| format!("no libnvrtc found; searched {names:?}"))
    })
    .as_ref()
    .map(|_| ())
    .map_err(|e| Error::NvrtcUnavailable(e.clone()))
}

/// A loaded NVRTC library.
#[derive(Debug, Clone)]
pub struct Nvrtc {
    /// Its version and archs.
    pub facts: NvrtcFacts,
}

impl Nvrtc {
    /// Loads NVRTC (once per process; cudarc keeps the library) and reads its
    /// version and supported architectures. An Err, never a panic, when absent.
    pub fn load() -> Result<Nvrtc> {
        hold_library()?;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: out-pointers to two live i32s.
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| Error::NvrtcUnavailable(format!("nvrtcVersion failed: {e:?}")))?;
        let mut n = 0;
        // SAFETY: out-pointer to a live i32.
        unsafe { sys::nvrtcGetNumSupportedArchs(&mut n) }
            .result()
            .map_err(|e| {
                Error::NvrtcUnavailable(format!("nvrtcGetNumSupportedArchs failed: {e:?}"))
            })?;
        let mut supported = vec![0i32; n.max(0) as usize];
        // SAFETY: the buffer holds exactly the count NVRTC reported.
        unsafe { sys::nvrtcGetSupportedArchs(supported.as_mut_ptr()) }
            .result()
            .map_err(|e| {
                Error::NvrtcUnavailable(format!("nvrtcGetSupportedArchs failed: {e:?}"))
            })?;
        Ok(Nvrtc {
            facts: NvrtcFacts {
                version: (major, minor),
                archs: supported.iter().map(|&a| a.max(0) as u32).collect(),
            },
        })
    }

    /// `major.minor`, as it enters cache keys.
    pub fn version_string(&self) -> String {
        self.facts.version_string()
    }

    /// Compiles one kernel. The source is header-free, so no include paths.
    pub fn compile(&self, source: &KernelSource, target: Target) -> Result<Artifact> {
        let options = target.options();
        let fail = |log: String| Error::Compile {
            name: source.name.clone(),
            options: options.clone(),
            log,
            source_code: source.code.clone(),
        };
        let code = CString::new(source.code.as_bytes())
            .map_err(|e| fail(format!("source holds a NUL byte: {e}")))?;
        let file = CString::new(format!("{}.cu", source.name))
            .map_err(|e| fail(format!("name holds a NUL byte: {e}")))?;
        let prog = result::create_program(&code, Some(&file))
            .map_err(|e| fail(format!("nvrtcCreateProgram: {e:?}")))?;
        let program = Program(prog);
        // SAFETY: `program` is live until dropped below; options are valid C strings.
        let compiled = unsafe { result::compile_program(program.0, &options) };
        if let Err(e) = compiled {
            // SAFETY: the program is live; the log exists after a failed compile.
            let log = unsafe { result::get_program_log(program.0) }
                .map(|chars| c_chars_to_string(&chars))
                .unwrap_or_default();
            return Err(fail(format!("{e:?}\n{log}")));
        }
        let bytes = match target.output {
            // SAFETY: the program compiled; the buffer has the size NVRTC reported.
            Output::Cubin => unsafe {
                let mut size = 0usize;
                sys::nvrtcGetCUBINSize(program.0, &mut size)
                    .result()
                    .map_err(|e| fail(format!("nvrtcGetCUBINSize: {e:?}")))?;
                let mut buf = vec![0u8; size];
                sys::nvrtcGetCUBIN(program.0, buf.as_mut_ptr().cast())
                    .result()
                    .map_err(|e| fail(format!("nvrtcGetCUBIN: {e:?}")))?;
                buf
            },
            Output::Ptx => {
                // SAFETY: the program compiled.
                let chars = unsafe { result::get_ptx(program.0) }
                    .map_err(|e| fail(format!("nvrtcGetPTX: {e:?}")))?;
                // Keep the terminating NUL: cuModuleLoadData reads PTX as a C string.
                let mut bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
                if bytes.last() != Some(&0) {
                    bytes.push(0);
                }
                bytes
            }
        };
        Ok(Artifact {
            output: target.output,
            bytes,
        })
    }
}

/// Destroys the NVRTC program on every path out of `compile`.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by nvrtcCreateProgram and destroyed only here.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn c_chars_to_string(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
    CStr::from_bytes_until_nul(&bytes)
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).into_owned())
}
