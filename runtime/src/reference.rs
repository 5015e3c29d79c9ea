//! CPU twins of the kernels: the same math on the host, bit for bit, so GPU
//! results are checked exactly rather than within a tolerance.

use half::{bf16, f16};
use redjit_codegen::{DType, Op, ReduceCopySpec, Role, Rounding};

/// A host buffer of one of redjit's dtypes.
#[derive(Debug, Clone, PartialEq)]
pub enum HostBuffer {
    F32(Vec<f32>),
    BF16(Vec<bf16>),
    F16(Vec<f16>),
}

impl HostBuffer {
    pub fn dtype(&self) -> DType {
        match self {
            HostBuffer::F32(_) => DType::F32,
            HostBuffer::BF16(_) => DType::BF16,
            HostBuffer::F16(_) => DType::F16,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            HostBuffer::F32(v) => v.len(),
            HostBuffer::BF16(v) => v.len(),
            HostBuffer::F16(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` widened to f32 (exact for every dtype here).
    pub fn get_f32(&self, i: usize) -> f32 {
        match self {
            HostBuffer::F32(v) => v[i],
            HostBuffer::BF16(v) => v[i].to_f32(),
            HostBuffer::F16(v) => v[i].to_f32(),
        }
    }

    /// The raw bits of element `i`, for exact comparison.
    pub fn bits(&self, i: usize) -> u32 {
        match self {
            HostBuffer::F32(v) => v[i].to_bits(),
            HostBuffer::BF16(v) => u32::from(v[i].to_bits()),
            HostBuffer::F16(v) => u32::from(v[i].to_bits()),
        }
    }

    /// A buffer of `len` elements of `dtype`, each `f(i)` rounded to nearest even,
    /// filled in parallel chunks.
    pub fn from_fn(dtype: DType, len: usize, f: impl Fn(usize) -> f32 + Sync) -> HostBuffer {
        match dtype {
            DType::F32 => HostBuffer::F32(par_fill(len, &f)),
            DType::BF16 => HostBuffer::BF16(par_fill(len, |i| bf16::from_f32(f(i)))),
            DType::F16 => HostBuffer::F16(par_fill(len, |i| f16::from_f32(f(i)))),
        }
    }
}

fn combine(op: Op, acc: f32, x: f32) -> f32 {
    match op {
        Op::Sum => acc + x,
    }
}

/// `reduce_copy` on the host: each element reduced in f32 in source order, then
/// stored with the spec's rounding. Source `k` is read from element `offsets[k]`
/// on (a misaligned view), `n` elements; the work is split over the host's cores.
/// Panics if the buffers do not fit the spec (a harness error, not caller input).
pub fn reduce_copy(
    spec: &ReduceCopySpec,
    srcs: &[&HostBuffer],
    offsets: &[usize],
    n: usize,
) -> Vec<HostBuffer> {
    assert_eq!(srcs.len(), spec.srcs.len(), "source count");
    assert_eq!(offsets.len(), srcs.len(), "one offset per source");
    for ((s, &r), &off) in srcs.iter().zip(&spec.srcs).zip(offsets) {
        assert_eq!(s.dtype(), spec.dtype_of(r), "source dtype");
        assert!(off + n <= s.len(), "source shorter than offset + n");
    }
    let value = |i: usize| {
        let mut acc = srcs[0].get_f32(i + offsets[0]);
        for (s, off) in srcs.iter().zip(offsets).skip(1) {
            acc = combine(spec.op, acc, s.get_f32(i + off));
        }
        acc
    };
    spec.dsts
        .iter()
        .map(|&r: &Role| {
            let dtype = spec.dtype_of(r);
            match spec.rounding {
                Rounding::Nearest => HostBuffer::from_fn(dtype, n, value),
            }
        })
        .collect()
}

/// `(0..len).map(f).collect()`, over the host's cores for large `len`.
fn par_fill<T: Copy + Default + Send>(len: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let mut out = vec![T::default(); len];
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = len.div_ceil(workers).max(1 << 16);
    std::thread::scope(|s| {
        for (c, part) in out.chunks_mut(chunk).enumerate() {
            let f = &f;
            s.spawn(move || {
                for (j, x) in part.iter_mut().enumerate() {
                    *x = f(c * chunk + j);
                }
            });
        }
    });
    out
}
