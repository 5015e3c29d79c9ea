//! Device buffers of any registry dtype, filled with random non-zero data.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, ValidAsZeroBits};
use half::{bf16, f16};
use redjit_codegen::DType;
use redjit_runtime::fp8::{e4m3_rn, e5m2_rn};
use redjit_runtime::reference::HostBuffer;
use redjit_runtime::{F8E4M3, F8E5M2, KernelInput, KernelOutput};

use crate::error::{CliResult, DriverContext};

/// Elements of the random block every buffer is tiled with.
pub const FILL_BLOCK: usize = 1 << 20;

/// A device buffer whose element type is chosen at run time.
pub enum DevBuf {
    F32(CudaSlice<f32>),
    BF16(CudaSlice<bf16>),
    F16(CudaSlice<f16>),
    E4M3(CudaSlice<F8E4M3>),
    E5M2(CudaSlice<F8E5M2>),
    I8(CudaSlice<i8>),
}

/// A typed view of `n` elements at an offset, as one Sized type.
pub enum DevView<'a> {
    F32(CudaView<'a, f32>),
    BF16(CudaView<'a, bf16>),
    F16(CudaView<'a, f16>),
    E4M3(CudaView<'a, F8E4M3>),
    E5M2(CudaView<'a, F8E5M2>),
    I8(CudaView<'a, i8>),
}

/// A typed mutable view of `n` elements at an offset, as one Sized type.
pub enum DevViewMut<'a> {
    F32(CudaViewMut<'a, f32>),
    BF16(CudaViewMut<'a, bf16>),
    F16(CudaViewMut<'a, f16>),
    E4M3(CudaViewMut<'a, F8E4M3>),
    E5M2(CudaViewMut<'a, F8E5M2>),
    I8(CudaViewMut<'a, i8>),
}

impl DevView<'_> {
    pub fn input(&self) -> &dyn KernelInput {
        match self {
            DevView::F32(s) => s,
            DevView::BF16(s) => s,
            DevView::F16(s) => s,
            DevView::E4M3(s) => s,
            DevView::E5M2(s) => s,
            DevView::I8(s) => s,
        }
    }
}

impl DevViewMut<'_> {
    pub fn output(&mut self) -> &mut dyn KernelOutput {
        match self {
            DevViewMut::F32(s) => s,
            DevViewMut::BF16(s) => s,
            DevViewMut::F16(s) => s,
            DevViewMut::E4M3(s) => s,
            DevViewMut::E5M2(s) => s,
            DevViewMut::I8(s) => s,
        }
    }
}

impl DevBuf {
    /// The whole buffer as a kernel's input.
    pub fn input(&self) -> &dyn KernelInput {
        match self {
            DevBuf::F32(s) => s,
            DevBuf::BF16(s) => s,
            DevBuf::F16(s) => s,
            DevBuf::E4M3(s) => s,
            DevBuf::E5M2(s) => s,
            DevBuf::I8(s) => s,
        }
    }

    /// The whole buffer as a kernel's output.
    pub fn output(&mut self) -> &mut dyn KernelOutput {
        match self {
            DevBuf::F32(s) => s,
            DevBuf::BF16(s) => s,
            DevBuf::F16(s) => s,
            DevBuf::E4M3(s) => s,
            DevBuf::E5M2(s) => s,
            DevBuf::I8(s) => s,
        }
    }

    /// Elements `offset .. offset + n` (the caller keeps them in range).
    pub fn view(&self, offset: usize, n: usize) -> DevView<'_> {
        match self {
            DevBuf::F32(s) => DevView::F32(s.slice(offset..offset + n)),
            DevBuf::BF16(s) => DevView::BF16(s.slice(offset..offset + n)),
            DevBuf::F16(s) => DevView::F16(s.slice(offset..offset + n)),
            DevBuf::E4M3(s) => DevView::E4M3(s.slice(offset..offset + n)),
            DevBuf::E5M2(s) => DevView::E5M2(s.slice(offset..offset + n)),
            DevBuf::I8(s) => DevView::I8(s.slice(offset..offset + n)),
        }
    }

    pub fn view_mut(&mut self, offset: usize, n: usize) -> DevViewMut<'_> {
        match self {
            DevBuf::F32(s) => DevViewMut::F32(s.slice_mut(offset..offset + n)),
            DevBuf::BF16(s) => DevViewMut::BF16(s.slice_mut(offset..offset + n)),
            DevBuf::F16(s) => DevViewMut::F16(s.slice_mut(offset..offset + n)),
            DevBuf::E4M3(s) => DevViewMut::E4M3(s.slice_mut(offset..offset + n)),
            DevBuf::E5M2(s) => DevViewMut::E5M2(s.slice_mut(offset..offset + n)),
            DevBuf::I8(s) => DevViewMut::I8(s.slice_mut(offset..offset + n)),
        }
    }
}

impl DevBuf {
    /// `host` at element `offset` of a new buffer, NaN before it and `slack`
    /// NaN after it (so a read out of range shows in the result).
    pub fn upload_padded(
        stream: &Arc<CudaStream>,
        host: &HostBuffer,
        offset: usize,
        slack: usize,
    ) -> CliResult<DevBuf> {
        let len = host.len();
        let padded = HostBuffer::from_fn(host.dtype(), offset + len + slack, |i| {
            if (offset..offset + len).contains(&i) {
                host.get_f32(i - offset)
            } else {
                f32::NAN
            }
        });
        let what = || "uploading a selftest buffer".to_string();
        Ok(match padded {
            HostBuffer::F32(v) => DevBuf::F32(stream.clone_htod(&v).during(what)?),
            HostBuffer::BF16(v) => DevBuf::BF16(stream.clone_htod(&v).during(what)?),
            HostBuffer::F16(v) => DevBuf::F16(stream.clone_htod(&v).during(what)?),
            HostBuffer::E4M3(v) => DevBuf::E4M3(stream.clone_htod(&v).during(what)?),
            HostBuffer::E5M2(v) => DevBuf::E5M2(stream.clone_htod(&v).during(what)?),
            HostBuffer::I8(v) => DevBuf::I8(stream.clone_htod(&v).during(what)?),
        })
    }

    /// Every element, back on the host.
    pub fn download(&self, stream: &Arc<CudaStream>) -> CliResult<HostBuffer> {
        let what = || "reading a selftest buffer back".to_string();
        Ok(match self {
            DevBuf::F32(b) => HostBuffer::F32(stream.clone_dtoh(b).during(what)?),
            DevBuf::BF16(b) => HostBuffer::BF16(stream.clone_dtoh(b).during(what)?),
            DevBuf::F16(b) => HostBuffer::F16(stream.clone_dtoh(b).during(what)?),
            DevBuf::E4M3(b) => HostBuffer::E4M3(stream.clone_dtoh(b).during(what)?),
            DevBuf::E5M2(b) => HostBuffer::E5M2(stream.clone_dtoh(b).during(what)?),
            DevBuf::I8(b) => HostBuffer::I8(stream.clone_dtoh(b).during(what)?),
        })
    }
}

/// One random block per dtype on the device, copied (device to device) over every
/// buffer allocated through it: a fast fill, with no zeros anywhere.
pub struct Filler {
    stream: Arc<CudaStream>,
    f32: CudaSlice<f32>,
    bf16: CudaSlice<bf16>,
    f16: CudaSlice<f16>,
    e4m3: CudaSlice<F8E4M3>,
    e5m2: CudaSlice<F8E5M2>,
    /// The block scaled by 100 and rounded: i8 values in ±[50, 150) clamped to
    /// 127, never zero.
    i8: CudaSlice<i8>,
}

impl Filler {
    pub fn new(stream: &Arc<CudaStream>, seed: u64) -> CliResult<Filler> {
        Filler::with_offset(stream, seed, 0.0)
    }

    /// The float blocks moved by `offset` (i8 keeps the plain block).
    pub fn with_offset(stream: &Arc<CudaStream>, seed: u64, offset: f32) -> CliResult<Filler> {
        let plain = random_block(FILL_BLOCK, seed);
        let host: Vec<f32> = plain.iter().map(|&v| v + offset).collect();
        let upload = |what: &str| format!("uploading the random {what} block");
        Ok(Filler {
            stream: stream.clone(),
            f32: stream.clone_htod(&host).during(|| upload("f32"))?,
            bf16: stream
                .clone_htod(&host.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>())
                .during(|| upload("bf16"))?,
            f16: stream
                .clone_htod(&host.iter().map(|&v| f16::from_f32(v)).collect::<Vec<_>>())
                .during(|| upload("f16"))?,
            e4m3: stream
                .clone_htod(&host.iter().map(|&v| e4m3_rn(v)).collect::<Vec<_>>())
                .during(|| upload("e4m3"))?,
            e5m2: stream
                .clone_htod(&host.iter().map(|&v| e5m2_rn(v)).collect::<Vec<_>>())
                .during(|| upload("e5m2"))?,
            i8: stream
                .clone_htod(
                    &plain
                        .iter()
                        .map(|&v| (v * 100.0).round() as i8)
                        .collect::<Vec<_>>(),
                )
                .during(|| upload("i8"))?,
        })
    }

    /// A buffer of `n` elements of `dtype`, filled with the random block, tiled.
    pub fn alloc(&self, dtype: DType, n: usize) -> CliResult<DevBuf> {
        Ok(match dtype {
            DType::F32 => DevBuf::F32(self.filled(&self.f32, n)?),
            DType::BF16 => DevBuf::BF16(self.filled(&self.bf16, n)?),
            DType::F16 => DevBuf::F16(self.filled(&self.f16, n)?),
            DType::E4M3 => DevBuf::E4M3(self.filled(&self.e4m3, n)?),
            DType::E5M2 => DevBuf::E5M2(self.filled(&self.e5m2, n)?),
            DType::I8 => DevBuf::I8(self.filled(&self.i8, n)?),
            DType::I64 => {
                return Err(crate::error::CliError::usage(
                    "i64 is a reduction's accumulator, not a buffer's element type",
                ));
            }
        })
    }

    fn filled<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        block: &CudaSlice<T>,
        n: usize,
    ) -> CliResult<CudaSlice<T>> {
        let bytes = n * std::mem::size_of::<T>();
        let mut buf = self
            .stream
            .alloc_zeros::<T>(n)
            .during(|| format!("allocating {n} elements ({bytes} bytes)"))?;
        let mut off = 0;
        while off < n {
            let len = block.len().min(n - off);
            self.stream
                .memcpy_dtod(&block.slice(0..len), &mut buf.slice_mut(off..off + len))
                .during(|| "filling a buffer".into())?;
            off += len;
        }
        Ok(buf)
    }
}

/// `len` values in ±[0.5, 1.5), never zero (xorshift64*, deterministic per seed).
pub fn random_block(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
            let unit = (r >> 40) as f32 / (1u64 << 24) as f32; // [0, 1)
            let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
            sign * (0.5 + unit)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_block_has_no_zeros_and_both_signs() {
        let b = random_block(10_000, 7);
        assert!(b.iter().all(|v| (0.5..1.5).contains(&v.abs())));
        assert!(b.iter().any(|&v| v < 0.0) && b.iter().any(|&v| v > 0.0));
        assert!(b.iter().all(|&v| bf16::from_f32(v).to_f32() != 0.0));
    }
}
