//! A kernel's parameters as data: each family's spec lists them
//! (`KernelSpec::params`), the runtime's launchers push exactly that list
//! (checked before a launch), and a test holds every rendered signature to it,
//! so a template's parameter change cannot drift from its launcher unnoticed.

/// What one kernel parameter is, as the launcher pushes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamKind {
    /// A device pointer (any pointee).
    Ptr,
    /// `rj_u64`.
    U64,
    /// `rj_u32`.
    U32,
    /// `float`.
    F32,
    /// The all-reduce's table of peer addresses (`rj_ar_table<R>`, the world's
    /// entries), by value.
    PeerTable,
}

impl ParamKind {
    /// The kind of a parameter declared with the C type `c_type`, if any.
    pub fn of_c_type(c_type: &str) -> Option<ParamKind> {
        let t = c_type.replace("__restrict__", "").replace("const", "");
        let t = t.trim();
        if t.ends_with('*') {
            return Some(ParamKind::Ptr);
        }
        match t {
            "rj_u64" => Some(ParamKind::U64),
            "rj_u32" => Some(ParamKind::U32),
            "float" => Some(ParamKind::F32),
            _ if t.starts_with("rj_ar_table<") => Some(ParamKind::PeerTable),
            _ => None,
        }
    }
}

/// One kernel parameter: its name in the template and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Param {
    /// The name the template gives it.
    pub name: &'static str,
    /// What the launcher pushes for it.
    pub kind: ParamKind,
}

impl Param {
    /// A device pointer.
    pub const fn ptr(name: &'static str) -> Param {
        Param {
            name,
            kind: ParamKind::Ptr,
        }
    }
    /// A 64-bit unsigned scalar.
    pub const fn u64(name: &'static str) -> Param {
        Param {
            name,
            kind: ParamKind::U64,
        }
    }
    /// A 32-bit unsigned scalar.
    pub const fn u32(name: &'static str) -> Param {
        Param {
            name,
            kind: ParamKind::U32,
        }
    }
    /// An f32 scalar.
    pub const fn f32(name: &'static str) -> Param {
        Param {
            name,
            kind: ParamKind::F32,
        }
    }
    /// A table of peer addresses by value.
    pub const fn peer_table(name: &'static str) -> Param {
        Param {
            name,
            kind: ParamKind::PeerTable,
        }
    }
}

/// The parameters of `kernel`'s `extern "C"` definition in `source`, as
/// (name, C type): `None` where the source defines no such kernel.
pub fn signature(source: &str, kernel: &str) -> Option<Vec<(String, String)>> {
    let named = format!(" {kernel}(");
    source
        .split("extern \"C\" __global__")
        .skip(1)
        .find_map(|def| {
            // The declaration up to its body; the name is the word before the
            // parameter list, past the launch bounds' own parentheses.
            let head = &def[..def.find('{')?];
            let at = head.find(&named)? + named.len();
            let params = &head[at..head[at..].find(')')? + at];
            Some(
                params
                    .split(',')
                    .map(|p| {
                        let p = p.trim();
                        let split = p.rfind([' ', '*']).map_or(0, |i| i + 1);
                        let (ty, name) = p.split_at(split);
                        (name.trim().to_string(), ty.trim().to_string())
                    })
                    .collect(),
            )
        })
}

/// Where each parameter ends, in bytes from the first (the driver places them
/// at 0x210 of a bank it serves in 64-byte lines, so the first 48 bytes share
/// a line), each aligned to its size; a peer table holds `world` entries.
#[cfg(test)]
pub(crate) fn param_ends(params: &[Param], world: u32) -> Vec<(&'static str, usize)> {
    let mut at = 0usize;
    params
        .iter()
        .map(|p| {
            let (align, size) = match p.kind {
                ParamKind::Ptr | ParamKind::U64 => (8, 8),
                ParamKind::U32 | ParamKind::F32 => (4, 4),
                ParamKind::PeerTable => (8, 8 * world as usize),
            };
            at = at.next_multiple_of(align) + size;
            (p.name, at)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_read_past_the_launch_bounds() {
        let src = "extern \"C\" __global__ void __launch_bounds__(256, 4) k_other(int a) {}\n\
                   extern \"C\" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128) k(\n    const void* __restrict__ x_ptr, rj_ar_table<4> sig,\n    rj_u64 n, float s) {}";
        let sig = signature(src, "k").unwrap();
        let kinds: Vec<_> = sig
            .iter()
            .map(|(n, t)| (n.as_str(), ParamKind::of_c_type(t)))
            .collect();
        assert_eq!(
            kinds,
            [
                ("x_ptr", Some(ParamKind::Ptr)),
                ("sig", Some(ParamKind::PeerTable)),
                ("n", Some(ParamKind::U64)),
                ("s", Some(ParamKind::F32)),
            ]
        );
        assert!(signature(src, "missing").is_none());
    }
}
