//! The quantized all-reduce (f32 in and out, bf16 transport with stochastic
//! rounding, f32 accumulation) on one GPU with R in {2, 4, 8} virtual ranks:
//! one-shot, two-stage and cp.async two-stage, sizes 1, 1031 and 2^20 + 3,
//! aligned and misaligned input views, compared bit for bit with the CPU twin
//! (`reference::all_reduce_quantized`), every rank's output identical; the
//! error against the f64 sum of the f32 inputs is printed (max and mean
//! relative error, for the closing note). Run with `--ignored` on a GPU
//! machine (REDJIT_REQUIRE_GPU=1 makes a missing GPU a failure).

mod common;

use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use redjit::all_reduce::{Call, CommOptions, Communicator, Placement, Quantize};
use redjit::reference::{all_reduce_quantized, par_map};
use redjit::{AllReduceAlgo, KernelInput, KernelOutput, Op};

const ALGOS: [(AllReduceAlgo, bool); 3] = [
    (AllReduceAlgo::OneShot, false),
    (AllReduceAlgo::TwoStage, false),
    (AllReduceAlgo::TwoStage, true),
];

const SIZES: [usize; 3] = [1, 1031, (1 << 20) + 3];

fn comm(world: u32) -> Option<Communicator> {
    common::gpu_or_skip()?;
    Some(
        Communicator::new(
            Placement::SameGpu { ordinal: 0, world },
            CommOptions::default()
                .timeout(Duration::from_secs(10))
                .max_bytes(8 << 20),
        )
        .unwrap(),
    )
}

/// Uniform in [-1, 1) from (seed, i): gradient-like values for the error figures.
fn uniform(seed: u64, i: usize) -> f32 {
    let mut r = common::Rng::seeded(seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    (r.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// One quantized all-reduce of `inputs` with `offset` poison elements before
/// each input's view (a misaligned view when odd); every rank's output.
fn run(
    c: &Communicator,
    inputs: &[Vec<f32>],
    offset: usize,
    call: Call,
    q: Quantize,
) -> Vec<Vec<f32>> {
    common::ar::run_on(
        &|r| c.runtime(r).stream().clone(),
        inputs,
        offset,
        &mut |ins, outs| {
            c.all_reduce_quantized(ins, outs, call, q)?;
            c.synchronize()
        },
    )
    .unwrap()
}

/// Every rank's output equals the twin bit for bit; returns the twin.
fn check(
    c: &Communicator,
    inputs: &[Vec<f32>],
    offset: usize,
    call: Call,
    q: Quantize,
    what: &str,
) -> Vec<f32> {
    let outs = run(c, inputs, offset, call, q);
    let views: Vec<&[f32]> = inputs.iter().map(|v| v.as_slice()).collect();
    let want = all_reduce_quantized(&views, call.algo, call.op, call.scalar, q);
    for (r, o) in outs.iter().enumerate() {
        let bad = par_map(o.len(), |i| o[i].to_bits() != want[i].to_bits());
        if let Some(i) = bad.iter().position(|&b| b) {
            panic!(
                "{what} rank {r} element {i}: got {} ({:#010x}), twin {} ({:#010x})",
                o[i],
                o[i].to_bits(),
                want[i],
                want[i].to_bits()
            );
        }
    }
    want
}

/// (max, mean) relative error of `got` against the f64 sum (times `scale`) of
/// the inputs, over elements whose exact result is not 0.
fn rel_errors(inputs: &[Vec<f32>], got: &[f32], scale: f64) -> (f64, f64) {
    let errs = par_map(got.len(), |i| {
        let exact: f64 = inputs.iter().map(|v| f64::from(v[i])).sum::<f64>() * scale;
        (exact != 0.0).then(|| (f64::from(got[i]) - exact).abs() / exact.abs())
    });
    let errs: Vec<f64> = errs.into_iter().flatten().collect();
    let max = errs.iter().copied().fold(0.0, f64::max);
    (max, errs.iter().sum::<f64>() / errs.len().max(1) as f64)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn quantized_all_reduce_bit_for_bit_with_the_twin() {
    let start = Instant::now();
    let mut rng = common::Rng::fresh("gpu_all_reduce_quantized");
    for world in [2u32, 4, 8] {
        let Some(c) = comm(world) else {
            return;
        };
        for n in SIZES {
            let data_seed = rng.next_u64();
            let inputs: Vec<Vec<f32>> = (0..world as u64)
                .map(|r| par_map(n, |i| uniform(data_seed.wrapping_add(r), i)))
                .collect();
            // Odd offsets exercise reduce_copy's misaligned twins; a base off a
            // multiple of 4 the straddling Philox path.
            let offsets: &[usize] = if n < 4096 { &[0, 1] } else { &[0] };
            for &offset in offsets {
                for (algo, cp_async) in ALGOS {
                    let q = Quantize::bf16(rng.next_u64(), if offset == 0 { 0 } else { 6 });
                    let call = Call {
                        cp_async,
                        ..Call::sum(algo)
                    };
                    let what =
                        format!("R={world} n={n} offset={offset} {algo} cp_async={cp_async} {q:?}");
                    let got = check(&c, &inputs, offset, call, q, &what);
                    if offset == 0 {
                        let (max, mean) = rel_errors(&inputs, &got, 1.0);
                        println!(
                            "quantized sum R={world} n={n} {algo}{}: max rel err {max:.3e}, mean rel err {mean:.3e} (vs f64 sum of the f32 inputs, uniform [-1, 1))",
                            if cp_async { " cp.async" } else { "" }
                        );
                    }
                }
            }
        }
        // Wide-range values (exponents 2^-30..2^20) and the other ops, at 1031.
        let wide: Vec<Vec<f32>> = (0..world).map(|_| rng.values(1031)).collect();
        for (op, scalar) in [
            (Op::Sum, None),
            (Op::Avg, Some(world as f32)),
            (Op::PreMulSum, Some(0.37)),
        ] {
            for (algo, cp_async) in ALGOS {
                let q = Quantize::bf16(rng.next_u64(), 4 * rng.next_u64().min(1 << 40));
                let call = Call {
                    cp_async,
                    op,
                    scalar,
                    ..Call::sum(algo)
                };
                check(
                    &c,
                    &wide,
                    0,
                    call,
                    q,
                    &format!("wide R={world} {op} {algo} cp_async={cp_async}"),
                );
            }
        }
    }
    println!("took {:?}", start.elapsed());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn quantized_all_reduce_is_deterministic_and_seed_dependent() {
    let Some(c) = comm(4) else {
        return;
    };
    let inputs: Vec<Vec<f32>> = (0..4u64)
        .map(|r| (0..4099).map(|i| uniform(r, i)).collect())
        .collect();
    for (algo, cp_async) in ALGOS {
        let call = Call {
            cp_async,
            ..Call::sum(algo)
        };
        let a = run(&c, &inputs, 0, call, Quantize::default());
        let b = run(&c, &inputs, 0, call, Quantize::default());
        assert_eq!(a, b, "{algo}: same seed and base, same bits");
        let other = run(
            &c,
            &inputs,
            0,
            call,
            Quantize::bf16(Quantize::DEFAULT_SEED, Quantize::span(4, 4099)),
        );
        assert_ne!(a[0], other[0], "{algo}: the next base draws other bits");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn quantized_refuses_non_f32_and_non_sum_ops_with_a_spec_error() {
    let Some(c) = comm(2) else {
        return;
    };
    let s = c.stream();
    let ins: Vec<CudaSlice<f32>> = (0..2)
        .map(|_| s.clone_htod(&[1.0f32; 16]).unwrap())
        .collect();
    let mut outs: Vec<CudaSlice<f32>> = (0..2).map(|_| s.alloc_zeros::<f32>(16).unwrap()).collect();
    let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
    let mut outputs: Vec<&mut dyn KernelOutput> = outs
        .iter_mut()
        .map(|b| b as &mut dyn KernelOutput)
        .collect();
    let call = Call {
        op: Op::Max,
        ..Call::sum(AllReduceAlgo::OneShot)
    };
    let e = c
        .all_reduce_quantized(&inputs, &mut outputs, call, Quantize::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("invalid op = max") && e.contains("sum, avg, premulsum"),
        "{e}"
    );
}
