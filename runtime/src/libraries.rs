//! The file names redjit opens the CUDA driver and NVRTC by, its own rather
//! than cudarc's: cudarc names its candidates only where it loads the
//! libraries at run time, and a build beside a crate that has cudarc link
//! them (candle's CUDA build asks for `dynamic-linking`) takes that mode for
//! every crate (cargo unifies the features), where redjit's presence checks
//! must still hold.

/// The CUDA major version redjit's bindings are built for (cudarc's
/// `cuda-13000`): NVRTC's file names carry it.
pub const CUDA_MAJOR: u32 = 13;

/// The file names of library `lib` ("cuda": the driver; "nvrtc") in the
/// order they are tried: the versioned name the driver or the toolkit
/// installs first, then the unversioned development name.
pub fn candidates(lib: &str) -> Vec<String> {
    if cfg!(windows) {
        match lib {
            "cuda" => vec!["nvcuda.dll".into()],
            _ => vec![
                format!("{lib}64_{CUDA_MAJOR}0_0.dll"),
                format!("{lib}64_{CUDA_MAJOR}.dll"),
                format!("{lib}.dll"),
            ],
        }
    } else {
        // The driver's ABI version is 1 (libcuda.so.1), the toolkit's
        // libraries carry its major version (libnvrtc.so.13).
        let version = if lib == "cuda" { 1 } else { CUDA_MAJOR };
        vec![format!("lib{lib}.so.{version}"), format!("lib{lib}.so")]
    }
}

/// The first of `lib`'s candidates that opens, or the names tried.
pub(crate) fn open(lib: &str) -> Result<libloading::Library, Vec<String>> {
    let names = candidates(lib);
    for name in &names {
        // SAFETY: the driver's and NVRTC's initialisers have no
        // preconditions; cudarc opens the same libraries the same way.
        if let Ok(l) = unsafe { libloading::Library::new(name) } {
            return Ok(l);
        }
    }
    Err(names)
}

/// Whether the CUDA driver library opens (it is closed again).
pub fn driver_present() -> bool {
    open("cuda").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_versioned_names_come_first() {
        if cfg!(windows) {
            assert_eq!(candidates("cuda"), ["nvcuda.dll"]);
            assert_eq!(candidates("nvrtc")[0], "nvrtc64_130_0.dll");
        } else {
            assert_eq!(candidates("cuda"), ["libcuda.so.1", "libcuda.so"]);
            assert_eq!(candidates("nvrtc"), ["libnvrtc.so.13", "libnvrtc.so"]);
        }
    }
}
