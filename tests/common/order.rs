//! Stream ordering around a launch: buffers that count their address reads,
//! and a gate that holds a stream back while work is issued around it.

use std::cell::Cell;

use cudarc::driver::{CudaSlice, DevicePtr, PushKernelArg};
use redjit::{DType, KernelInput, KernelOutput};

/// A buffer that counts how often its address is read or pushed: each is a
/// tracked slice's event wait and record on the host, so a call takes each
/// buffer once.
pub struct Counted {
    pub buf: CudaSlice<f32>,
    reads: Cell<u32>,
}

impl Counted {
    pub fn new(buf: CudaSlice<f32>) -> Counted {
        Counted {
            buf,
            reads: Cell::new(0),
        }
    }

    /// The reads since the last take.
    pub fn take(&self) -> u32 {
        self.reads.replace(0)
    }
}

// SAFETY: every method forwards to the CudaSlice it wraps.
unsafe impl KernelInput for Counted {
    fn dtype(&self) -> DType {
        DType::F32
    }
    fn len(&self) -> usize {
        cudarc::driver::DeviceSlice::len(&self.buf)
    }
    fn push_input<'a>(&'a self, args: &mut cudarc::driver::LaunchArgs<'a>) {
        self.reads.set(self.reads.get() + 1);
        args.arg(&self.buf);
    }
    fn address(&self, stream: &cudarc::driver::CudaStream) -> u64 {
        self.reads.set(self.reads.get() + 1);
        KernelInput::address(&self.buf, stream)
    }
    fn read_address<'a>(
        &'a self,
        stream: &'a cudarc::driver::CudaStream,
    ) -> (u64, cudarc::driver::SyncOnDrop<'a>) {
        self.reads.set(self.reads.get() + 1);
        KernelInput::read_address(&self.buf, stream)
    }
}

// SAFETY: as above.
unsafe impl KernelOutput for Counted {
    fn dtype(&self) -> DType {
        DType::F32
    }
    fn len(&self) -> usize {
        cudarc::driver::DeviceSlice::len(&self.buf)
    }
    fn push_output<'a>(&'a mut self, args: &mut cudarc::driver::LaunchArgs<'a>) {
        self.reads.set(self.reads.get() + 1);
        args.arg(&mut self.buf);
    }
    fn address(&self, stream: &cudarc::driver::CudaStream) -> u64 {
        self.reads.set(self.reads.get() + 1);
        KernelOutput::address(&self.buf, stream)
    }
    fn write_address<'a>(
        &'a mut self,
        stream: &'a cudarc::driver::CudaStream,
    ) -> (u64, cudarc::driver::SyncOnDrop<'a>) {
        self.reads.set(self.reads.get() + 1);
        KernelOutput::write_address(&mut self.buf, stream)
    }
}

/// Holds a stream back until [`Closed::open`]: a one-thread kernel on it
/// spins until a device word becomes 1, which another stream writes. Every
/// kernel the held-back work launches must have run once before: CUDA loads a
/// kernel at its first launch (lazy loading), and the load waits for the
/// spinning kernel.
pub struct Gate {
    spin: cudarc::driver::CudaFunction,
    opener: std::sync::Arc<cudarc::driver::CudaStream>,
}

/// A stream held at a [`Gate`].
pub struct Closed<'g> {
    word: CudaSlice<u32>,
    opener: &'g std::sync::Arc<cudarc::driver::CudaStream>,
}

const GATE_KERNEL: &str =
    "extern \"C\" __global__ void rj_gate(const volatile unsigned* w) { while (*w == 0u) {} }";

impl Gate {
    /// The spinning kernel, compiled, and run once (on an open word).
    pub fn new(stream: &std::sync::Arc<cudarc::driver::CudaStream>) -> Gate {
        let ctx = stream.context();
        let ptx = cudarc::nvrtc::compile_ptx(GATE_KERNEL).unwrap();
        let spin = ctx
            .load_module(ptx)
            .unwrap()
            .load_function("rj_gate")
            .unwrap();
        let gate = Gate {
            spin,
            opener: ctx.new_stream().unwrap(),
        };
        gate.close(stream).open();
        stream.synchronize().unwrap();
        gate
    }

    pub fn close(&self, stream: &std::sync::Arc<cudarc::driver::CudaStream>) -> Closed<'_> {
        let word = stream.alloc_zeros::<u32>(1).unwrap();
        stream.synchronize().unwrap();
        // The address is taken raw: a tracked argument would record its read
        // after the spinning kernel, and the opener's write would wait on it.
        let at = DevicePtr::device_ptr(&word, stream).0;
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the kernel takes one pointer to a u32, `word`, which lives
        // until the gate is opened and the stream synchronised after.
        unsafe { stream.launch_builder(&self.spin).arg(&at).launch(cfg) }.unwrap();
        Closed {
            word,
            opener: &self.opener,
        }
    }
}

impl Closed<'_> {
    pub fn open(mut self) {
        self.opener.memcpy_htod(&[1u32], &mut self.word).unwrap();
        self.opener.synchronize().unwrap();
    }
}
