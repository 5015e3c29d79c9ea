//! reduce_copy on the GPU against its CPU twin, bit for bit: every type
//! configuration and unroll, odd sizes, poisoned outputs, misaligned views, bad
//! calls. Run on a GPU machine with `--ignored` (REDJIT_REQUIRE_GPU=1 makes a
//! missing GPU a failure).

mod common;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
use half::{bf16, f16};
use redjit::reference::{self, HostBuffer};
use redjit::{
    DType, Error, KernelInput, KernelOutput, KernelSpec, LaunchOptions, ReduceCopySpec, Runtime,
};
use std::sync::Arc;

const SIZES: &[usize] = &[1, 3, 511, 512, 513, 1_034_837, (1 << 20) + 7, 1 << 26];
/// Extra elements allocated past n, so views can start 1..=3 elements in.
const SLACK: usize = 3;

/// A device buffer of one dtype, `n + SLACK` elements long.
enum DevBuf {
    F32(CudaSlice<f32>),
    BF16(CudaSlice<bf16>),
    F16(CudaSlice<f16>),
}

impl DevBuf {
    fn upload(stream: &Arc<CudaStream>, host: &HostBuffer) -> DevBuf {
        // Pad with poison so an out-of-range read would show up as NaN.
        match host {
            HostBuffer::F32(v) => DevBuf::F32(stream.clone_htod(&padded(v, f32::NAN)).unwrap()),
            HostBuffer::BF16(v) => DevBuf::BF16(stream.clone_htod(&padded(v, bf16::NAN)).unwrap()),
            HostBuffer::F16(v) => DevBuf::F16(stream.clone_htod(&padded(v, f16::NAN)).unwrap()),
        }
    }

    /// The `n` elements starting `offset` in, as the host buffer it would download to.
    fn view(&self, offset: usize, n: usize) -> Box<dyn KernelInput + '_> {
        match self {
            DevBuf::F32(s) => Box::new(s.slice(offset..offset + n)) as Box<dyn KernelInput>,
            DevBuf::BF16(s) => Box::new(s.slice(offset..offset + n)),
            DevBuf::F16(s) => Box::new(s.slice(offset..offset + n)),
        }
    }
}

/// A poisoned output buffer of `n + SLACK` elements (all-ones bits: a NaN that no
/// finite sum produces), checked after the launch, including the slack around
/// the written range.
struct OutBuf(DevBuf);

impl OutBuf {
    fn new(stream: &Arc<CudaStream>, dtype: DType, n: usize) -> OutBuf {
        let len = n + 2 * SLACK;
        OutBuf(match dtype {
            DType::F32 => DevBuf::F32(
                stream
                    .clone_htod(&vec![f32::from_bits(u32::MAX); len])
                    .unwrap(),
            ),
            DType::BF16 => DevBuf::BF16(
                stream
                    .clone_htod(&vec![bf16::from_bits(u16::MAX); len])
                    .unwrap(),
            ),
            DType::F16 => DevBuf::F16(
                stream
                    .clone_htod(&vec![f16::from_bits(u16::MAX); len])
                    .unwrap(),
            ),
        })
    }

    fn view_mut(&mut self, offset: usize, n: usize) -> ViewMut<'_> {
        match &mut self.0 {
            DevBuf::F32(s) => ViewMut::F32(s.slice_mut(offset..offset + n)),
            DevBuf::BF16(s) => ViewMut::BF16(s.slice_mut(offset..offset + n)),
            DevBuf::F16(s) => ViewMut::F16(s.slice_mut(offset..offset + n)),
        }
    }

    fn download(&self, stream: &Arc<CudaStream>) -> HostBuffer {
        match &self.0 {
            DevBuf::F32(s) => HostBuffer::F32(stream.clone_dtoh(s).unwrap()),
            DevBuf::BF16(s) => HostBuffer::BF16(stream.clone_dtoh(s).unwrap()),
            DevBuf::F16(s) => HostBuffer::F16(stream.clone_dtoh(s).unwrap()),
        }
    }
}

/// A typed mutable view of an output, as one Sized type.
enum ViewMut<'a> {
    F32(CudaViewMut<'a, f32>),
    BF16(CudaViewMut<'a, bf16>),
    F16(CudaViewMut<'a, f16>),
}

impl ViewMut<'_> {
    fn as_output(&mut self) -> &mut dyn KernelOutput {
        match self {
            ViewMut::F32(v) => v,
            ViewMut::BF16(v) => v,
            ViewMut::F16(v) => v,
        }
    }
}

fn padded<T: Copy>(v: &[T], pad: T) -> Vec<T> {
    let mut out = v.to_vec();
    out.extend(std::iter::repeat_n(pad, SLACK));
    out
}

/// Random inputs for one size: two distinct buffers per dtype, so a two-source
/// kernel never reads the same data twice.
struct Inputs {
    host: Vec<[HostBuffer; 2]>,
    dev: Vec<[DevBuf; 2]>,
}

impl Inputs {
    fn new(rng: &mut common::Rng, stream: &Arc<CudaStream>, n: usize) -> Inputs {
        let mut host = Vec::new();
        for &d in DType::ALL {
            // f16 inputs stay finite (below 2^14), so no Inf - Inf = NaN whose payload
            // the CPU and GPU spell differently; overflow to f16 Inf is still
            // exercised by f32 sums stored as f16.
            let scale = if d == DType::F16 { (-7f32).exp2() } else { 1.0 };
            let a = rng.values(n);
            let b = rng.values(n);
            host.push([
                HostBuffer::from_fn(d, n, |i| a[i] * scale),
                HostBuffer::from_fn(d, n, |i| b[i] * scale),
            ]);
        }
        let dev = host
            .iter()
            .map(|[a, b]| [DevBuf::upload(stream, a), DevBuf::upload(stream, b)])
            .collect();
        Inputs { host, dev }
    }

    fn index(d: DType) -> usize {
        DType::ALL.iter().position(|x| *x == d).unwrap()
    }
}

/// Runs `spec` with each buffer at its offset and compares every output element,
/// and the poison around it, with the CPU twin.
fn run_and_check(
    rt: &Runtime,
    spec: &ReduceCopySpec,
    inputs: &Inputs,
    n: usize,
    src_offsets: &[usize],
    dst_offsets: &[usize],
    opts: LaunchOptions,
) {
    let stream = rt.stream();
    let kernel = rt.reduce_copy(spec).unwrap();
    let src_host: Vec<&HostBuffer> = spec
        .srcs
        .iter()
        .enumerate()
        .map(|(k, &r)| &inputs.host[Inputs::index(spec.dtype_of(r))][k])
        .collect();
    let src_views: Vec<Box<dyn KernelInput + '_>> = spec
        .srcs
        .iter()
        .enumerate()
        .map(|(k, &r)| inputs.dev[Inputs::index(spec.dtype_of(r))][k].view(src_offsets[k], n))
        .collect();
    let mut outs: Vec<OutBuf> = spec
        .dsts
        .iter()
        .map(|&r| OutBuf::new(stream, spec.dtype_of(r), n))
        .collect();
    {
        // Destinations sit SLACK + offset in, so poison lies on both sides.
        let mut dst_views: Vec<ViewMut<'_>> = outs
            .iter_mut()
            .zip(dst_offsets)
            .map(|(o, &off)| o.view_mut(SLACK + off, n))
            .collect();
        let srcs: Vec<&dyn KernelInput> = src_views.iter().map(|b| b.as_ref()).collect();
        let mut dsts: Vec<&mut dyn KernelOutput> =
            dst_views.iter_mut().map(|v| v.as_output()).collect();
        kernel.launch_with(stream, &srcs, &mut dsts, opts).unwrap();
    }
    stream.synchronize().unwrap();
    // The twin reads the same (offset) elements the kernel read.
    let expect = reference::reduce_copy(spec, &src_host, src_offsets, n);
    for (d, (out, want)) in outs.iter().zip(&expect).enumerate() {
        let got = out.download(stream);
        let start = SLACK + dst_offsets[d];
        let poison = |i: usize| {
            got.bits(i)
                == if got.dtype() == DType::F32 {
                    u32::MAX
                } else {
                    u32::from(u16::MAX)
                }
        };
        for i in (0..start).chain(start + n..got.len()) {
            assert!(
                poison(i),
                "{}: dst{d}[{i}] outside the view was written (n = {n})",
                spec.name()
            );
        }
        let mut bad = 0usize;
        for i in 0..n {
            if got.bits(start + i) != want.bits(i) {
                if bad < 5 {
                    eprintln!(
                        "{} n={n} srcs@{src_offsets:?} dsts@{dst_offsets:?}: dst{d}[{i}] = {:#x}, CPU twin {:#x}",
                        spec.name(),
                        got.bits(start + i),
                        want.bits(i)
                    );
                }
                bad += 1;
            }
        }
        assert_eq!(
            bad,
            0,
            "{}: {bad} of {n} elements differ from the CPU twin",
            spec.name()
        );
    }
}

fn all_specs() -> Vec<ReduceCopySpec> {
    let mut v = Vec::new();
    for &unroll in redjit::codegen::spec::reduce_copy::UNROLLS {
        for &t in [DType::BF16, DType::F16].iter() {
            v.extend(ReduceCopySpec::matrix(unroll, t));
        }
    }
    v
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_config_and_unroll_matches_the_cpu_twin_bit_for_bit() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let specs = all_specs();
    let report = rt.prepare(&specs).unwrap();
    eprintln!(
        "prepared {} kernels ({} compiled) in {:?}",
        report.kernels, report.compiled, report.wall
    );
    let mut rng = common::Rng::fresh("every_config");
    let mut checked = 0;
    for &n in SIZES {
        let inputs = Inputs::new(&mut rng, rt.stream(), n);
        for spec in &specs {
            // One offset (zero) per buffer of this spec.
            let (so, dof) = (vec![0; spec.srcs.len()], vec![0; spec.dsts.len()]);
            run_and_check(&rt, spec, &inputs, n, &so, &dof, LaunchOptions::default());
            checked += 1;
        }
    }
    eprintln!("checked {checked} (kernel, size) pairs");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn each_buffer_misaligned_by_one_two_three_elements() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("misaligned");
    for &n in &[513usize, 1_034_837] {
        let inputs = Inputs::new(&mut rng, rt.stream(), n + SLACK);
        for spec in all_specs() {
            let (ns, nd) = (spec.srcs.len(), spec.dsts.len());
            for buffer in 0..ns + nd {
                for off in 1..=SLACK {
                    let mut so = vec![0; ns];
                    let mut dof = vec![0; nd];
                    if buffer < ns {
                        so[buffer] = off;
                    } else {
                        dof[buffer - ns] = off;
                    }
                    run_and_check(&rt, &spec, &inputs, n, &so, &dof, LaunchOptions::default());
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn any_block_size_and_grid_gives_the_same_bits() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("block_sizes");
    let n = 1_034_837;
    let inputs = Inputs::new(&mut rng, rt.stream(), n);
    let spec = ReduceCopySpec::default();
    for threads in [32, 96, 256, 1024] {
        for max_blocks in [None, Some(1), Some(7)] {
            run_and_check(
                &rt,
                &spec,
                &inputs,
                n,
                &[0, 0],
                &[0],
                LaunchOptions {
                    threads,
                    max_blocks,
                },
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_calls_are_errors_and_empty_calls_launch_nothing() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let s = rt.stream();
    let k = rt.reduce_copy(&ReduceCopySpec::default()).unwrap(); // TA_T: bf16 + f32 -> bf16
    let a: CudaSlice<bf16> = s.clone_htod(&vec![bf16::ONE; 100]).unwrap();
    let b: CudaSlice<f32> = s.clone_htod(&vec![2.0f32; 100]).unwrap();
    let b_short: CudaView<f32> = b.slice(0..99);
    let mut out: CudaSlice<bf16> = s.clone_htod(&vec![bf16::NAN; 100]).unwrap();
    let mut wrong_type: CudaSlice<f32> = s.clone_htod(&vec![f32::NAN; 100]).unwrap();
    let launch_err = |e: Error, what: &str, value: &str| {
        let msg = e.to_string();
        assert!(matches!(e, Error::Launch { .. }), "{msg}");
        assert!(
            msg.contains(what) && msg.contains(value),
            "{msg} should name {what} = {value}"
        );
    };
    launch_err(
        k.launch(s, &[&a], &mut [&mut out]).unwrap_err(),
        "number of sources",
        "1",
    );
    launch_err(
        k.launch(s, &[&a, &b], &mut []).unwrap_err(),
        "number of destinations",
        "0",
    );
    launch_err(
        k.launch(s, &[&b, &a], &mut [&mut out]).unwrap_err(),
        "dtype",
        "src0: f32",
    );
    launch_err(
        k.launch(s, &[&a, &b], &mut [&mut wrong_type]).unwrap_err(),
        "dtype",
        "dst0: f32",
    );
    launch_err(
        k.launch(s, &[&a, &b_short], &mut [&mut out]).unwrap_err(),
        "length",
        "src1: 99",
    );
    for threads in [0, 100, 2048] {
        let e = k
            .launch_with(
                s,
                &[&a, &b],
                &mut [&mut out],
                LaunchOptions {
                    threads,
                    max_blocks: None,
                },
            )
            .unwrap_err();
        launch_err(e, "threads", &threads.to_string());
    }
    // Unroll 8 is compiled for at most 512 threads per block.
    let k8 = rt
        .reduce_copy(&ReduceCopySpec {
            unroll: 8,
            ..ReduceCopySpec::default()
        })
        .unwrap();
    let e = k8
        .launch_with(
            s,
            &[&a, &b],
            &mut [&mut out],
            LaunchOptions {
                threads: 1024,
                max_blocks: None,
            },
        )
        .unwrap_err();
    launch_err(e, "threads", "1024");
    // Nothing above may have written: out is still all poison.
    let host = s.clone_dtoh(&out).unwrap();
    assert!(host.iter().all(|x| x.is_nan()));
    // n == 0 returns Ok before any launch.
    let empty_a = a.slice(0..0);
    let empty_b = b.slice(0..0);
    let mut empty_out: CudaViewMut<bf16> = out.slice_mut(0..0);
    k.launch(s, &[&empty_a, &empty_b], &mut [&mut empty_out])
        .unwrap();
    s.synchronize().unwrap();
}
