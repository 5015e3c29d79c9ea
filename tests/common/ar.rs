//! What the all-reduce GPU tests share, whatever the placement (R ranks on one
//! GPU, one GPU per rank in one process): each rank's buffers live on its own
//! rank's device (`Communicator::runtime(r)`, which is the one GPU's runtime
//! for every rank of `Placement::SameGpu`), so the same checks serve both.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, CudaStream};
use half::{bf16, f16};
use redjit::all_reduce::{Call, Communicator};
use redjit::peer::LegacyAlloc;
use redjit::{AllReduceAlgo, DType, KernelInput, KernelOutput, Op};

/// The kernels every test walks: one-shot, two-stage, two-stage with cp.async,
/// push, LL push.
pub const ALGOS: [(AllReduceAlgo, bool); 5] = [
    (AllReduceAlgo::OneShot, false),
    (AllReduceAlgo::TwoStage, false),
    (AllReduceAlgo::TwoStage, true),
    (AllReduceAlgo::Push, false),
    (AllReduceAlgo::PushLl, false),
];

/// Whether `algo` can read an input view `offset` elements of `dtype` into a
/// 16-byte aligned allocation (the push kernel reads inputs in place).
pub fn takes_offset(algo: AllReduceAlgo, dtype: DType, offset: usize) -> bool {
    !algo.info().in_place || (offset * dtype.info().bytes as usize).is_multiple_of(16)
}

/// Host values of one dtype, as f64, and their bits.
pub trait Elem: redjit::DeviceElem + Copy {
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
pub fn exact(seed: u64, rank: u32, i: usize) -> f64 {
    let h = (i as u64)
        .wrapping_mul(0x9E37_79B9)
        .wrapping_add(seed * 31 + rank as u64 * 7919);
    ((h >> 7) % 31) as f64 - 15.0
}

/// `world` ranks' exact f32 inputs of `n` elements ([`exact`]) and their sum,
/// which every kernel must return bit for bit.
pub fn exact_f32_sums(seed: u64, world: u32, n: usize) -> (Vec<Vec<f32>>, Vec<f32>) {
    let host: Vec<Vec<f32>> = (0..world)
        .map(|r| (0..n).map(|i| exact(seed, r, i) as f32).collect())
        .collect();
    let want = (0..n)
        .map(|i| host.iter().map(|h| h[i]).sum::<f32>())
        .collect();
    (host, want)
}

/// Rank r's stream: its buffers are allocated and read there.
pub fn rank_stream(c: &Communicator, r: usize) -> &std::sync::Arc<CudaStream> {
    c.runtime(r).stream()
}

/// Runs one all-reduce over `inputs` (host, per rank) with `offset` poison
/// elements before each input's view; returns every rank's output, after
/// checking the 8 poisoned guard elements past each output were not written.
pub fn run<T: Elem>(c: &Communicator, inputs: &[Vec<T>], offset: usize, call: Call) -> Vec<Vec<T>> {
    try_run(c, inputs, offset, call).unwrap_or_else(|e| panic!("{call:?}: {e}"))
}

/// [`run`], the call's error returned (the outputs then unchecked).
pub fn try_run<T: Elem>(
    c: &Communicator,
    inputs: &[Vec<T>],
    offset: usize,
    call: Call,
) -> redjit::Result<Vec<Vec<T>>> {
    run_on(
        &|r| rank_stream(c, r).clone(),
        inputs,
        offset,
        &mut |ins, outs| {
            c.all_reduce(ins, outs, call)?;
            c.synchronize()
        },
    )
}

/// A call issued by `run_on`: the input and output views in rank order; it
/// returns once the outputs are final (the communicator synchronised).
pub type CallFn<'a> =
    dyn FnMut(&[&dyn KernelInput], &mut [&mut dyn KernelOutput]) -> redjit::Result<()> + 'a;

/// Rank r's host input uploaded on `stream(r)` behind `offset` poison (NaN)
/// elements, its output poisoned with 8 guard elements past n; `call` runs
/// on the views. Returns every rank's output, after checking the guards.
pub fn run_on<T: Elem>(
    stream: &dyn Fn(usize) -> Arc<CudaStream>,
    inputs: &[Vec<T>],
    offset: usize,
    call: &mut CallFn<'_>,
) -> redjit::Result<Vec<Vec<T>>> {
    let n = inputs[0].len();
    let dev: Vec<CudaSlice<T>> = inputs
        .iter()
        .enumerate()
        .map(|(r, v)| {
            let mut p = vec![T::from_f64(f64::NAN); offset];
            p.extend_from_slice(v);
            stream(r).clone_htod(&p).unwrap()
        })
        .collect();
    let mut outs: Vec<CudaSlice<T>> = (0..inputs.len())
        .map(|r| {
            stream(r)
                .clone_htod(&vec![T::from_f64(f64::NAN); n + 8])
                .unwrap()
        })
        .collect();
    {
        let views: Vec<_> = dev.iter().map(|d| d.slice(offset..offset + n)).collect();
        let ins: Vec<&dyn KernelInput> = views.iter().map(|v| v as &dyn KernelInput).collect();
        let mut out_views: Vec<_> = outs.iter_mut().map(|o| o.slice_mut(0..n)).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> = out_views
            .iter_mut()
            .map(|v| v as &mut dyn KernelOutput)
            .collect();
        call(&ins, &mut outputs)?;
    }
    Ok(outs
        .iter()
        .enumerate()
        .map(|(r, o)| {
            let h = stream(r).clone_dtoh(o).unwrap();
            for g in &h[n..] {
                assert!(
                    g.to_f64().is_nan(),
                    "rank {r}: a guard element past n was written"
                );
            }
            h[..n].to_vec()
        })
        .collect())
}

/// The bits every rank must hold at element `i` of `op` over exact inputs
/// (every partial result exact, so the order does not matter).
pub fn exact_bits<T: Elem>(inputs: &[Vec<T>], i: usize, op: Op) -> u32 {
    let xs = inputs.iter().map(|v| v[i].to_f64());
    let want = match op {
        Op::Sum => xs.sum::<f64>(),
        Op::Max => xs.fold(f64::MIN, f64::max),
        Op::Min => xs.fold(f64::MAX, f64::min),
        _ => unreachable!("exact inputs are checked for sum, max and min"),
    };
    T::from_f64(want).bits()
}

/// One sum all-reduce of `inputs` into the whole of each of `outs`.
pub fn sum_into(
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

/// Odd and even counts from 1 element to `max_bytes` less three elements.
pub fn sizes<T: Elem>(max_bytes: usize) -> Vec<usize> {
    let mut v = vec![1, 3, 7, 8, 9, 31, 1023, 4097, (1 << 20) + 5];
    let elem = T::DT.info().bytes as usize;
    for mb in [64usize, 256] {
        if mb << 20 <= max_bytes {
            v.push((mb << 20) / elem - 3);
        }
    }
    v
}

/// Exact inputs through every kernel, compared bit for bit on every rank.
pub fn exact_case<T: Elem>(c: &Communicator, n: usize, offset: usize, op: Op) {
    let world = c.world();
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
        if !takes_offset(algo, T::DT, offset) {
            // Refused before any launch, naming the rule.
            let Err(e) = try_run(c, &inputs, offset, call) else {
                panic!("{call:?} took an input view {offset} elements in");
            };
            assert!(e.to_string().contains("16-byte aligned"), "{e}");
            continue;
        }
        let outs = run(c, &inputs, offset, call);
        for i in 0..n {
            let want = exact_bits(&inputs, i, op);
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

/// Every size up to `max_bytes`, misaligned input views and min/max at an odd size.
pub fn exact_all_sizes<T: Elem>(c: &Communicator, max_bytes: usize) {
    for n in sizes::<T>(max_bytes) {
        exact_case::<T>(c, n, 0, Op::Sum);
    }
    for offset in [1, 3] {
        exact_case::<T>(c, 4099, offset, Op::Sum);
    }
    exact_case::<T>(c, 4099, 0, Op::Max);
    exact_case::<T>(c, 4099, 0, Op::Min);
}

/// Random inputs against f64: the kernel sums in f32 in rank order and rounds
/// once to the dtype, so |got - exact| <= ulp_half(dtype, |exact|) +
/// (R - 1) * 2^-24 * sum |x_r| (each f32 add rounds by at most half an f32 ulp
/// of its partial sum, bounded by sum |x_r|); ulp_half is 2^-8 |exact| for bf16,
/// 2^-11 |exact| for f16 (plus half its smallest subnormal, 2^-25), 0 for f32.
/// Every rank must hold the same bits.
pub fn random_case<T: Elem>(c: &Communicator, rng: &mut super::Rng, n: usize, rel: f64, abs: f64) {
    let world = c.world();
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
            c,
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
            let bound = rel * exact.abs() + abs + (world as f64 - 1.0) * mag * 2f64.powi(-24);
            for (r, o) in outs.iter().enumerate() {
                let got = o[i].to_f64();
                let ok = (got - exact).abs() <= bound || (got.is_infinite() && exact.abs() > 6e4);
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

/// The three dtypes at a few sizes, each against its bound.
pub fn random_all_dtypes(c: &Communicator, rng: &mut super::Rng) {
    for n in [5usize, 1000, (1 << 18) + 7] {
        random_case::<f32>(c, rng, n, 0.0, 0.0);
        random_case::<bf16>(c, rng, n, 2f64.powi(-8), 0.0);
        random_case::<f16>(c, rng, n, 2f64.powi(-11), 2f64.powi(-25));
    }
}

/// `calls` sums back to back (every kernel of [`ALGOS`] in turn) over 4099 exact f32
/// per rank, checked bit for bit after the last; returns the wall time.
pub fn back_to_back(c: &Communicator, calls: u32) -> Duration {
    let world = c.world() as usize;
    let n = 4099;
    let host: Vec<Vec<f32>> = (0..world as u32)
        .map(|r| (0..n).map(|i| exact(9, r, i) as f32).collect())
        .collect();
    let ins: Vec<CudaSlice<f32>> = host
        .iter()
        .enumerate()
        .map(|(r, h)| rank_stream(c, r).clone_htod(h).unwrap())
        .collect();
    let mut outs: Vec<CudaSlice<f32>> = (0..world)
        .map(|r| rank_stream(c, r).alloc_zeros::<f32>(n).unwrap())
        .collect();
    let t0 = Instant::now();
    for k in 0..calls {
        let (algo, cp_async) = ALGOS[k as usize % ALGOS.len()];
        let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
        sum_into(c, &inputs, &mut outs, algo, cp_async);
    }
    c.synchronize().unwrap();
    let took = t0.elapsed();
    for (r, o) in outs.iter().enumerate() {
        let got = rank_stream(c, r).clone_dtoh(o).unwrap();
        for i in 0..n {
            let want: f32 = host.iter().map(|h| h[i]).sum();
            assert_eq!(got[i].to_bits(), want.to_bits(), "rank {r} element {i}");
        }
    }
    took
}

/// 16 calls of different odd sizes (every kernel of [`ALGOS`] in turn), each with its
/// own inputs and outputs, captured once on the main stream and replayed
/// `replays` times with new inputs, every output checked after every replay;
/// then an eager call. Also checks the capture's typed errors. Returns the
/// replays' wall time.
pub fn graph_of_16_replayed(c: &Communicator, replays: u64) -> Duration {
    use cudarc::driver::sys;
    let world = c.world();
    let w = world as usize;
    let s = c.stream().clone();
    let sizes: Vec<usize> = (0..16).map(|k| 1031 + 97 * k).collect();
    let alloc = |n: usize| -> Vec<CudaSlice<f32>> {
        (0..w)
            .map(|r| rank_stream(c, r).alloc_zeros::<f32>(n).unwrap())
            .collect()
    };
    // Captured inputs are cuMemAlloc memory: peers read them in place, and
    // peer access (one GPU per rank) and IPC cover no pool memory.
    let legacy: Vec<Vec<LegacyAlloc>> = sizes
        .iter()
        .map(|&n| {
            (0..w)
                .map(|r| LegacyAlloc::zeroed(c.runtime(r).context(), n * 4).unwrap())
                .collect()
        })
        .collect();
    // SAFETY: each allocation holds n f32 and outlives its slice, which is
    // leaked at the end so that only the LegacyAlloc frees the memory.
    let mut ins: Vec<Vec<CudaSlice<f32>>> = legacy
        .iter()
        .zip(&sizes)
        .map(|(per_rank, &n)| {
            per_rank
                .iter()
                .enumerate()
                .map(|(r, a)| unsafe { rank_stream(c, r).upgrade_device_ptr(a.ptr(), n) })
                .collect()
        })
        .collect();
    let mut outs: Vec<Vec<CudaSlice<f32>>> = sizes.iter().map(|&n| alloc(n)).collect();
    let call = |k: usize| {
        let (algo, cp_async) = ALGOS[k % ALGOS.len()];
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
        matches!(&e, redjit::Error::Comm { what, rule } if what == "graph capture" && rule.contains("unregistered inputs")),
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
    // The push kernel reads its inputs in place with no table slot.
    let slotted = (0..16).filter(|&k| !call(k).algo.info().in_place).count();
    assert_eq!(c.end_capture().unwrap() as usize, slotted);

    let t0 = Instant::now();
    for it in 0..replays {
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
                rank_stream(c, r).memcpy_htod(h, &mut ins[k][r]).unwrap();
            }
        }
        // The uploads ran on the rank streams; the replay runs on the main one.
        for r in 0..w {
            rank_stream(c, r).synchronize().unwrap();
        }
        graph.launch().unwrap();
        c.synchronize().unwrap();
        for (k, per_rank) in host.iter().enumerate() {
            for (r, out) in outs[k].iter().enumerate() {
                let got = rank_stream(c, r).clone_dtoh(out).unwrap();
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
    let took = t0.elapsed();
    // Eager calls still work after the capture.
    let host: Vec<Vec<f32>> = (0..world)
        .map(|r| (0..sizes[0]).map(|i| exact(5, r, i) as f32).collect())
        .collect();
    for (r, h) in host.iter().enumerate() {
        rank_stream(c, r).memcpy_htod(h, &mut ins[0][r]).unwrap();
    }
    issue(&ins[0], &mut outs[0], 1).unwrap();
    c.synchronize().unwrap();
    let last = w - 1;
    let got = rank_stream(c, last).clone_dtoh(&outs[0][last]).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            *g,
            host.iter().map(|h| h[i]).sum::<f32>(),
            "eager after capture, element {i}"
        );
    }
    drop(graph);
    for per_rank in ins {
        for i in per_rank {
            i.leak();
        }
    }
    drop(legacy);
    took
}
