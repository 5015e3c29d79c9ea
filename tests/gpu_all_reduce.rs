//! The all-reduce on one GPU with R in {2, 4, 8} virtual ranks (the test
//! placement: the kernels and barrier are the multi-GPU ones, only the pointers
//! differ): one-shot, two-stage and cp.async two-stage, f32/bf16/f16, sizes from
//! 1 element to 64 MB with odd counts and misaligned input views; nccl-tests-style
//! exact inputs compared bit for bit; random inputs against an f64 reference with
//! a stated bound; 100 000 back-to-back calls; a rank never launched gives an
//! error within the timeout and breaks the communicator until rebuilt.
//! Run with `--ignored` on a GPU machine (REDJIT_REQUIRE_GPU=1 makes a missing
//! GPU a failure); scripts/gpu-run.sh tests runs it.

mod common;

use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use redjit::all_reduce::{Call, CommOptions, Communicator, Placement};
use redjit::{AllReduceAlgo, DType, Error, KernelInput, KernelOutput, Op};

const ALGOS: [(AllReduceAlgo, bool); 3] = [
    (AllReduceAlgo::OneShot, false),
    (AllReduceAlgo::TwoStage, false),
    (AllReduceAlgo::TwoStage, true),
];

fn comm(world: u32, max_bytes: usize, timeout: Duration) -> Option<Communicator> {
    common::gpu_or_skip()?;
    Some(
        Communicator::new(
            Placement::SameGpu { ordinal: 0, world },
            CommOptions {
                timeout,
                max_bytes,
                ..CommOptions::default()
            },
        )
        .unwrap(),
    )
}

/// Host values of one dtype, as f64, and their device upload.
trait Elem: redjit::DeviceElem + Copy {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    fn bits(self) -> u32;
    const DT: DType;
}
impl Elem for f32 {
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn bits(self) -> u32 {
        self.to_bits()
    }
    const DT: DType = DType::F32;
}
impl Elem for bf16 {
    fn from_f64(x: f64) -> Self {
        bf16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    const DT: DType = DType::BF16;
}
impl Elem for f16 {
    fn from_f64(x: f64) -> Self {
        f16::from_f64(x)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn bits(self) -> u32 {
        self.to_bits() as u32
    }
    const DT: DType = DType::F16;
}

/// nccl-tests style: small integers from (seed, rank, index), so every partial
/// sum is exact in every dtype and the result is independent of order; never
/// all zero.
fn exact(seed: u64, rank: u32, i: usize) -> f64 {
    let h = (i as u64)
        .wrapping_mul(0x9E37_79B9)
        .wrapping_add(seed * 31 + rank as u64 * 7919);
    ((h >> 7) % 31) as f64 - 15.0
}

/// Runs one all-reduce over `inputs` (host, per rank) with `offset` poison
/// elements before each input's view; returns every rank's output.
fn run<T: Elem>(c: &Communicator, inputs: &[Vec<T>], offset: usize, call: Call) -> Vec<Vec<T>> {
    let s = c.stream();
    let n = inputs[0].len();
    let dev: Vec<CudaSlice<T>> = inputs
        .iter()
        .map(|v| {
            let mut p = vec![T::from_f64(f64::NAN); offset];
            p.extend_from_slice(v);
            s.clone_htod(&p).unwrap()
        })
        .collect();
    // Outputs poisoned (NaN) with 8 guard elements after each.
    let mut outs: Vec<CudaSlice<T>> = (0..inputs.len())
        .map(|_| s.clone_htod(&vec![T::from_f64(f64::NAN); n + 8]).unwrap())
        .collect();
    {
        let views: Vec<_> = dev.iter().map(|d| d.slice(offset..offset + n)).collect();
        let ins: Vec<&dyn KernelInput> = views.iter().map(|v| v as &dyn KernelInput).collect();
        let mut out_views: Vec<_> = outs.iter_mut().map(|o| o.slice_mut(0..n)).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> = out_views
            .iter_mut()
            .map(|v| v as &mut dyn KernelOutput)
            .collect();
        c.all_reduce(&ins, &mut outputs, call).unwrap();
    }
    c.synchronize().unwrap();
    outs.iter()
        .map(|o| {
            let h = s.clone_dtoh(o).unwrap();
            for g in &h[n..] {
                assert!(g.to_f64().is_nan(), "a guard element past n was written");
            }
            h[..n].to_vec()
        })
        .collect()
}

/// One sum all-reduce of `inputs` into the whole of each of `outs`.
fn sum_into(
    c: &Communicator,
    inputs: &[&dyn KernelInput],
    outs: &mut [CudaSlice<f32>],
    algo: AllReduceAlgo,
    cp_async: bool,
) {
    let mut outputs: Vec<&mut dyn KernelOutput> = outs
        .iter_mut()
        .map(|o| o as &mut dyn KernelOutput)
        .collect();
    c.all_reduce(
        inputs,
        &mut outputs,
        Call {
            cp_async,
            ..Call::sum(algo)
        },
    )
    .unwrap();
}

fn sizes<T: Elem>() -> Vec<usize> {
    let big = (64 << 20) / T::DT.info().bytes as usize;
    vec![1, 3, 7, 8, 9, 31, 1023, 4097, (1 << 20) + 5, big - 3]
}

fn exact_case<T: Elem>(world: u32, c: &Communicator, n: usize, offset: usize, op: Op) {
    for (algo, cp_async) in ALGOS {
        let seed = n as u64 ^ world as u64;
        let inputs: Vec<Vec<T>> = (0..world)
            .map(|r| (0..n).map(|i| T::from_f64(exact(seed, r, i))).collect())
            .collect();
        let call = Call {
            cp_async,
            op,
            ..Call::sum(algo)
        };
        let outs = run(c, &inputs, offset, call);
        for i in 0..n {
            let xs = (0..world as usize).map(|r| inputs[r][i].to_f64());
            let want = match op {
                Op::Sum => xs.sum::<f64>(),
                Op::Max => xs.fold(f64::MIN, f64::max),
                Op::Min => xs.fold(f64::MAX, f64::min),
                _ => unreachable!(),
            };
            let want = T::from_f64(want).bits();
            for (r, o) in outs.iter().enumerate() {
                assert_eq!(
                    o[i].bits(),
                    want,
                    "{:?} {algo} cp_async={cp_async} {op} R={world} n={n} offset={offset}: rank {r} element {i}",
                    T::DT
                );
            }
        }
    }
}

fn exact_all<T: Elem>() {
    for world in [2, 4, 8] {
        let Some(c) = comm(world, 64 << 20, Duration::from_secs(10)) else {
            return;
        };
        for n in sizes::<T>() {
            exact_case::<T>(world, &c, n, 0, Op::Sum);
        }
        // Misaligned input views (staged), and min/max, at an odd size.
        for offset in [1, 3] {
            exact_case::<T>(world, &c, 4099, offset, Op::Sum);
        }
        exact_case::<T>(world, &c, 4099, 0, Op::Max);
        exact_case::<T>(world, &c, 4099, 0, Op::Min);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_inputs_bit_for_bit_f32() {
    exact_all::<f32>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_inputs_bit_for_bit_bf16() {
    exact_all::<bf16>();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn exact_inputs_bit_for_bit_f16() {
    exact_all::<f16>();
}

/// One small configuration for compute-sanitizer (memcheck, synccheck): 2
/// ranks, both kernels and the cp.async variant, an odd size and a staged
/// misaligned input, checked bit for bit like the full test. Kept small
/// because the tools slow kernels down by orders of magnitude.
#[test]
#[ignore = "needs a CUDA GPU"]
fn one_small_configuration_for_the_sanitizers() {
    let Some(c) = comm(2, 1 << 20, Duration::from_secs(30)) else {
        return;
    };
    exact_case::<f32>(2, &c, 4099, 0, Op::Sum);
    exact_case::<bf16>(2, &c, 1031, 1, Op::Sum);
}

/// Random inputs against f64: the kernel sums in f32 in rank order and rounds
/// once to the dtype, so |got - exact| <= ulp_half(dtype, |exact|) +
/// (R - 1) * 2^-24 * sum |x_r| (each f32 add rounds by at most half an f32 ulp
/// of its partial sum, bounded by sum |x_r|); ulp_half is 2^-8 |exact| for bf16,
/// 2^-11 |exact| for f16 (plus half its smallest subnormal, 2^-25), 0 for f32.
fn random_all<T: Elem>(rel: f64, abs: f64) {
    let mut rng = common::Rng::fresh("gpu_all_reduce random");
    for world in [2, 4, 8] {
        let Some(c) = comm(world, 8 << 20, Duration::from_secs(10)) else {
            return;
        };
        for n in [5usize, 1000, (1 << 18) + 7] {
            let inputs: Vec<Vec<T>> = (0..world)
                .map(|_| {
                    rng.values(n)
                        .into_iter()
                        .map(|v| T::from_f64((v as f64).clamp(-6e4, 6e4)))
                        .collect()
                })
                .collect();
            for (algo, cp_async) in ALGOS {
                let outs = run(
                    &c,
                    &inputs,
                    0,
                    Call {
                        cp_async,
                        ..Call::sum(algo)
                    },
                );
                for i in 0..n {
                    let xs: Vec<f64> = inputs.iter().map(|v| v[i].to_f64()).collect();
                    let exact: f64 = xs.iter().sum();
                    let mag: f64 = xs.iter().map(|x| x.abs()).sum();
                    let bound =
                        rel * exact.abs() + abs + (world as f64 - 1.0) * mag * 2f64.powi(-24);
                    for (r, o) in outs.iter().enumerate() {
                        let got = o[i].to_f64();
                        let ok = (got - exact).abs() <= bound
                            || (got.is_infinite() && exact.abs() > 6e4);
                        assert!(
                            ok,
                            "{:?} {algo} R={world} n={n} rank {r} element {i}: {got} vs {exact} (bound {bound})",
                            T::DT
                        );
                        assert_eq!(o[i].bits(), outs[0][i].bits(), "ranks disagree at {i}");
                    }
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn random_inputs_within_the_bound() {
    random_all::<f32>(0.0, 0.0);
    random_all::<bf16>(2f64.powi(-8), 0.0);
    random_all::<f16>(2f64.powi(-11), 2f64.powi(-25));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_hundred_thousand_back_to_back_calls() {
    let Some(c) = comm(4, 1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let s = c.stream();
    let n = 4099;
    let host: Vec<Vec<f32>> = (0..4)
        .map(|r| (0..n).map(|i| exact(9, r, i) as f32).collect())
        .collect();
    let ins: Vec<CudaSlice<f32>> = host.iter().map(|h| s.clone_htod(h).unwrap()).collect();
    let mut outs: Vec<CudaSlice<f32>> = (0..4).map(|_| s.alloc_zeros::<f32>(n).unwrap()).collect();
    let t0 = Instant::now();
    for k in 0..100_000u32 {
        let (algo, cp_async) = ALGOS[k as usize % 3];
        let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
        sum_into(&c, &inputs, &mut outs, algo, cp_async);
    }
    c.synchronize().unwrap();
    eprintln!("100000 calls x 4 ranks in {:?}", t0.elapsed());
    for o in &outs {
        let got = s.clone_dtoh(o).unwrap();
        for i in 0..n {
            let want: f32 = host.iter().map(|h| h[i]).sum();
            assert_eq!(got[i].to_bits(), want.to_bits(), "element {i}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_rank_never_launched_is_an_error_within_the_timeout() {
    let timeout = Duration::from_millis(200);
    let Some(mut c) = comm(4, 1 << 20, timeout) else {
        return;
    };
    let s = c.stream().clone();
    let n = 100_003;
    let ins: Vec<CudaSlice<f32>> = (0..4)
        .map(|r| s.clone_htod(&vec![r as f32 + 1.0; n]).unwrap())
        .collect();
    let mut outs: Vec<CudaSlice<f32>> = (0..4).map(|_| s.alloc_zeros::<f32>(n).unwrap()).collect();
    for (algo, cp_async) in ALGOS {
        let call = |skip: Option<u32>| Call {
            cp_async,
            skip_rank: skip,
            ..Call::sum(algo)
        };
        let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> = outs
            .iter_mut()
            .map(|b| b as &mut dyn KernelOutput)
            .collect();
        let t0 = Instant::now();
        c.all_reduce(&inputs, &mut outputs, call(Some(2))).unwrap();
        let e = c.synchronize().unwrap_err();
        let took = t0.elapsed();
        assert!(
            took < timeout * 10 + Duration::from_secs(2),
            "{algo}: {took:?}"
        );
        let Error::Broken { reason } = &e else {
            panic!("{e}")
        };
        assert!(
            reason.contains("Start barrier waiting for rank 2"),
            "{reason}"
        );
        // Broken until rebuilt.
        let again = c.all_reduce(&inputs, &mut outputs, call(None)).unwrap_err();
        assert!(matches!(again, Error::Broken { .. }), "{again}");
        drop(outputs);
        c.rebuild().unwrap();
        let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> = outs
            .iter_mut()
            .map(|b| b as &mut dyn KernelOutput)
            .collect();
        c.all_reduce(&inputs, &mut outputs, call(None)).unwrap();
        c.synchronize().unwrap();
        drop(outputs);
        for o in &outs {
            assert!(
                s.clone_dtoh(o).unwrap().iter().all(|&x| x == 10.0),
                "{algo}: wrong after rebuild"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_misaligned_output_is_refused() {
    let Some(c) = comm(2, 1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let s = c.stream();
    let ins: Vec<CudaSlice<f32>> = (0..2)
        .map(|_| s.clone_htod(&vec![1.0f32; 101]).unwrap())
        .collect();
    let mut outs: Vec<CudaSlice<f32>> =
        (0..2).map(|_| s.alloc_zeros::<f32>(102).unwrap()).collect();
    let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
    let mut views: Vec<_> = outs.iter_mut().map(|o| o.slice_mut(1..102)).collect();
    let mut outputs: Vec<&mut dyn KernelOutput> = views
        .iter_mut()
        .map(|v| v as &mut dyn KernelOutput)
        .collect();
    let e = c
        .all_reduce(&inputs, &mut outputs, Call::sum(AllReduceAlgo::OneShot))
        .unwrap_err();
    assert!(
        e.to_string().contains("outputs must start on 16 bytes"),
        "{e}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_captured_graph_of_16_all_reduces_replayed_1000_times() {
    use cudarc::driver::sys;
    let world = 4u32;
    let Some(c) = comm(world, 1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let s = c.stream().clone();
    let w = world as usize;
    // 16 calls of different odd sizes, each with its own inputs and outputs.
    let sizes: Vec<usize> = (0..16).map(|k| 1031 + 97 * k).collect();
    let mut ins: Vec<Vec<CudaSlice<f32>>> = sizes
        .iter()
        .map(|&n| (0..w).map(|_| s.alloc_zeros::<f32>(n).unwrap()).collect())
        .collect();
    let mut outs: Vec<Vec<CudaSlice<f32>>> = sizes
        .iter()
        .map(|&n| (0..w).map(|_| s.alloc_zeros::<f32>(n).unwrap()).collect())
        .collect();
    let call = |k: usize| {
        let (algo, cp_async) = ALGOS[k % 3];
        Call {
            cp_async,
            ..Call::sum(algo)
        }
    };
    let issue = |ins: &[CudaSlice<f32>], outs: &mut [CudaSlice<f32>], k: usize| {
        let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> = outs
            .iter_mut()
            .map(|b| b as &mut dyn KernelOutput)
            .collect();
        c.all_reduce(&inputs, &mut outputs, call(k))
    };
    // Every kernel compiled and loaded before capture (eager calls).
    for k in 0..3 {
        issue(&ins[k], &mut outs[k], k).unwrap();
    }
    c.synchronize().unwrap();

    // A call on a capturing stream without begin_capture is a typed error.
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .unwrap();
    let e = issue(&ins[0], &mut outs[0], 0).unwrap_err();
    let _ = s.end_capture(sys::CUgraphInstantiate_flags(0));
    assert!(
        matches!(&e, Error::Comm { what, rule } if what == "graph capture" && rule.contains("unregistered inputs")),
        "{e}"
    );

    c.begin_capture().unwrap();
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .unwrap();
    for k in 0..16 {
        issue(&ins[k], &mut outs[k], k).unwrap();
    }
    // Registering before the stream's capture has ended is refused.
    let e = c.end_capture().unwrap_err();
    assert!(e.to_string().contains("still capturing"), "{e}");
    let graph = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a captured graph");
    assert_eq!(c.end_capture().unwrap(), 16);

    let t0 = Instant::now();
    for it in 0..1000u64 {
        // New inputs every replay: the graph reads them in place.
        let host: Vec<Vec<Vec<f32>>> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                (0..world)
                    .map(|r| {
                        (0..n)
                            .map(|i| exact(it * 16 + k as u64, r, i) as f32)
                            .collect()
                    })
                    .collect()
            })
            .collect();
        for (k, per_rank) in host.iter().enumerate() {
            for (r, h) in per_rank.iter().enumerate() {
                s.memcpy_htod(h, &mut ins[k][r]).unwrap();
            }
        }
        graph.launch().unwrap();
        c.synchronize().unwrap();
        for (k, per_rank) in host.iter().enumerate() {
            for (r, out) in outs[k].iter().enumerate() {
                let got = s.clone_dtoh(out).unwrap();
                for (i, g) in got.iter().enumerate() {
                    let want: f32 = per_rank.iter().map(|h| h[i]).sum();
                    assert_eq!(
                        g.to_bits(),
                        want.to_bits(),
                        "replay {it}, call {k} ({:?}), rank {r}, element {i}",
                        call(k)
                    );
                }
            }
        }
    }
    eprintln!(
        "1000 replays of 16 captured all-reduces x {world} ranks, checked, in {:?}",
        t0.elapsed()
    );
    // Eager calls still work after the capture.
    let host: Vec<Vec<f32>> = (0..world)
        .map(|r| (0..sizes[0]).map(|i| exact(5, r, i) as f32).collect())
        .collect();
    for (r, h) in host.iter().enumerate() {
        s.memcpy_htod(h, &mut ins[0][r]).unwrap();
    }
    issue(&ins[0], &mut outs[0], 1).unwrap();
    c.synchronize().unwrap();
    let got = s.clone_dtoh(&outs[0][3]).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            *g,
            host.iter().map(|h| h[i]).sum::<f32>(),
            "eager after capture, element {i}"
        );
    }
}

/// Inputs written straight into the registered staging buffers are reduced in
/// place (nothing copied, nothing clobbered: a second call gives the same
/// bits), and such a buffer is refused as an output (peers read it meanwhile).
#[test]
#[ignore = "needs a CUDA GPU"]
fn registered_inputs_are_read_in_place_and_never_outputs() {
    let world = 4;
    let Some(c) = comm(world, 1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let s = c.stream().clone();
    let n = 1023;
    let host: Vec<Vec<f32>> = (0..world)
        .map(|r| (0..n).map(|i| exact(11, r, i) as f32).collect())
        .collect();
    let want: Vec<f32> = (0..n)
        .map(|i| host.iter().map(|h| h[i]).sum::<f32>())
        .collect();
    for (algo, cp_async) in ALGOS {
        let regs: Vec<_> = (0..world as usize)
            .map(|r| c.registered(r, DType::F32, n).unwrap())
            .collect();
        c.synchronize().unwrap();
        for (reg, h) in regs.iter().zip(&host) {
            // SAFETY: the registered buffer holds n f32 (checked by
            // `registered`); the copy is synchronous and nothing else runs.
            unsafe {
                cudarc::driver::sys::cuMemcpyHtoD_v2(
                    reg.address(),
                    h.as_ptr().cast(),
                    n * std::mem::size_of::<f32>(),
                )
            }
            .result()
            .unwrap();
        }
        for round in 0..2 {
            let mut outs: Vec<CudaSlice<f32>> = (0..world)
                .map(|_| s.clone_htod(&vec![f32::NAN; n]).unwrap())
                .collect();
            let inputs: Vec<&dyn KernelInput> =
                regs.iter().map(|r| r as &dyn KernelInput).collect();
            sum_into(&c, &inputs, &mut outs, algo, cp_async);
            c.synchronize().unwrap();
            for (r, o) in outs.iter().enumerate() {
                let got = s.clone_dtoh(o).unwrap();
                for i in 0..n {
                    assert_eq!(
                        got[i].to_bits(),
                        want[i].to_bits(),
                        "{algo} cp_async={cp_async} round {round} rank {r} element {i}: {} vs {}",
                        got[i],
                        want[i]
                    );
                }
            }
        }
    }
    let e = c.registered(world as usize, DType::F32, 1).unwrap_err();
    assert!(e.to_string().contains("local rank"), "{e}");
    let e = c.registered(0, DType::F32, (1 << 18) + 1).unwrap_err();
    assert!(e.to_string().contains("max_bytes"), "{e}");
    let ins: Vec<CudaSlice<f32>> = (0..world)
        .map(|_| s.clone_htod(&vec![1.0f32; n]).unwrap())
        .collect();
    let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
    let mut regs: Vec<_> = (0..world as usize)
        .map(|r| c.registered(r, DType::F32, n).unwrap())
        .collect();
    let mut outputs: Vec<&mut dyn KernelOutput> = regs
        .iter_mut()
        .map(|r| r as &mut dyn KernelOutput)
        .collect();
    let e = c
        .all_reduce(&inputs, &mut outputs, Call::sum(AllReduceAlgo::OneShot))
        .unwrap_err();
    assert!(
        e.to_string().contains("overlaps its registered staging"),
        "{e}"
    );
}
