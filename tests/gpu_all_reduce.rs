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

use common::ar::{
    ALGOS, Elem, back_to_back, exact, exact_all_sizes, exact_case, exact_f32_sums,
    graph_of_16_replayed, random_all_dtypes, sum_into,
};
use common::order::{Counted, Gate};
use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use redjit::all_reduce::{Call, CommOptions, Communicator, Placement};
use redjit::{AllReduceAlgo, DType, Error, KernelInput, KernelOutput, Op};

fn comm(world: u32, max_bytes: usize, timeout: Duration) -> Option<Communicator> {
    common::gpu_or_skip()?;
    Some(
        Communicator::new(
            Placement::SameGpu { ordinal: 0, world },
            CommOptions::default()
                .timeout(timeout)
                .max_bytes(max_bytes)
                // The push kernel takes every size the tests send.
                .push_bytes(Some(max_bytes))
                .ll_bytes(Some(max_bytes)),
        )
        .unwrap(),
    )
}

fn exact_all<T: Elem>() {
    for world in [2, 4, 8] {
        let Some(c) = comm(world, 64 << 20, Duration::from_secs(10)) else {
            return;
        };
        exact_all_sizes::<T>(&c, 64 << 20);
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
    exact_case::<f32>(&c, 4099, 0, Op::Sum);
    exact_case::<bf16>(&c, 1031, 1, Op::Sum);
}

/// Random inputs against f64 within the bound `random_case` states.
#[test]
#[ignore = "needs a CUDA GPU"]
fn random_inputs_within_the_bound() {
    let mut rng = common::Rng::fresh("gpu_all_reduce random");
    for world in [2, 4, 8] {
        let Some(c) = comm(world, 8 << 20, Duration::from_secs(10)) else {
            return;
        };
        random_all_dtypes(&c, &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_hundred_thousand_back_to_back_calls() {
    let Some(c) = comm(4, 1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let took = back_to_back(&c, 100_000);
    eprintln!("100000 calls x 4 ranks in {took:?}");
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
        // The LL push kernel has no barrier: it waits for the rank's lines.
        let waited = match algo {
            AllReduceAlgo::PushLl => "waiting for rank 2's data",
            _ => "Start barrier waiting for rank 2",
        };
        assert!(reason.contains(waited), "{algo}: {reason}");
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
    let Some(c) = comm(4, 1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let took = graph_of_16_replayed(&c, 1000);
    eprintln!("1000 replays of 16 captured all-reduces x 4 ranks, checked, in {took:?}");
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
    let (host, want) = exact_f32_sums(11, world, n);
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

/// The push kernel refuses a message past its window, naming the option, and
/// the automatic choice then runs one-shot (checked through `choose`).
#[test]
#[ignore = "needs a CUDA GPU"]
fn push_refuses_messages_past_its_window() {
    if common::gpu_or_skip().is_none() {
        return;
    }
    use redjit::all_reduce::choice::{AlgoTable, Choice};
    for (choice, option) in [(Choice::PUSH, "push_bytes"), (Choice::PUSH_LL, "ll_bytes")] {
        let c = Communicator::new(
            Placement::SameGpu {
                ordinal: 0,
                world: 2,
            },
            CommOptions::default()
                .max_bytes(1 << 20)
                .push_bytes(Some(4096))
                .ll_bytes(Some(4096))
                .algos(Some(AlgoTable::always(choice))),
        )
        .unwrap();
        let inputs: Vec<Vec<f32>> = (0..2)
            .map(|r| (0..2048).map(|i| exact(3, r, i) as f32).collect())
            .collect();
        let e = common::ar::try_run(&c, &inputs, 0, Call::sum(choice.algo)).unwrap_err();
        assert!(
            e.to_string().contains("push window") && e.to_string().contains(option),
            "{e}"
        );
        assert_eq!(c.choose(8192).unwrap().algo, AllReduceAlgo::OneShot);
        assert_eq!(c.choose(4096).unwrap().algo, choice.algo);
        // At the window's size it runs, bit for bit.
        let inputs: Vec<Vec<f32>> = inputs.iter().map(|v| v[..1024].to_vec()).collect();
        let outs = common::ar::run(&c, &inputs, 0, Call::sum(choice.algo));
        for (r, o) in outs.iter().enumerate() {
            for i in 0..1024 {
                assert_eq!(
                    o[i],
                    inputs[0][i] + inputs[1][i],
                    "{choice:?} rank {r} element {i}"
                );
            }
        }
    }
}

/// A sum through `route`: that kernel called directly, or (`None`) the
/// automatic route.
fn sum_by(
    c: &Communicator,
    route: Option<(AllReduceAlgo, bool)>,
    inputs: &[&dyn KernelInput],
    outputs: &mut [&mut dyn KernelOutput],
) -> redjit::Result<()> {
    match route {
        Some((algo, cp_async)) => c.all_reduce(
            inputs,
            outputs,
            Call {
                cp_async,
                ..Call::sum(algo)
            },
        ),
        None => c.all_reduce_routed(inputs, outputs, Op::Sum, None),
    }
}

/// Every kernel, called directly and through the automatic route, reads each
/// input's and each output's address once a call, and the sums are exact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn each_buffer_address_is_read_once_a_call() {
    let world = 4;
    let Some(c) = comm(world, 1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let s = c.stream().clone();
    let n = 4099;
    let (host, want) = exact_f32_sums(17, world, n);
    let counted = |v: &[f32]| Counted::new(s.clone_htod(v).unwrap());
    let ins: Vec<Counted> = host.iter().map(|h| counted(h)).collect();
    let routes: Vec<Option<(AllReduceAlgo, bool)>> =
        ALGOS.iter().copied().map(Some).chain([None]).collect();
    for route in routes {
        let mut outs: Vec<Counted> = (0..world).map(|_| counted(&vec![f32::NAN; n])).collect();
        let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> = outs
            .iter_mut()
            .map(|o| o as &mut dyn KernelOutput)
            .collect();
        sum_by(&c, route, &inputs, &mut outputs).unwrap();
        c.synchronize().unwrap();
        for (r, (i, o)) in ins.iter().zip(&outs).enumerate() {
            assert_eq!(i.take(), 1, "{route:?}: rank {r}'s input address reads");
            assert_eq!(o.take(), 1, "{route:?}: rank {r}'s output address reads");
            let got = s.clone_dtoh(&o.buf).unwrap();
            for e in 0..n {
                assert_eq!(
                    got[e].to_bits(),
                    want[e].to_bits(),
                    "{route:?} rank {r} element {e}: {} vs {}",
                    got[e],
                    want[e]
                );
            }
        }
    }
}

/// cudarc's event tracking orders a call with work on other streams: a write
/// of an input there waits for the call's read, and a read of an output waits
/// for the call's write. The main stream is held at a [`Gate`] while the call and
/// the other streams' work are issued and for 50 ms more, so work that did
/// not wait runs before the call (each input's overwrite on a stream of its
/// own, so none waits behind another).
#[test]
#[ignore = "needs a CUDA GPU"]
fn tracked_buffers_order_the_call_with_other_streams() {
    let world = 2;
    let n = 1 << 22;
    let Some(c) = comm(world, n * 4, Duration::from_secs(10)) else {
        return;
    };
    let s = c.stream().clone();
    assert!(s.context().is_event_tracking(), "cudarc tracks by default");
    let others: Vec<_> = (0..world)
        .map(|_| s.context().new_stream().unwrap())
        .collect();
    let (host, want) = exact_f32_sums(29, world, n);
    let poison = vec![f32::NAN; n];
    let poison_dev = s.clone_htod(&poison).unwrap();
    let routes: Vec<Option<(AllReduceAlgo, bool)>> =
        ALGOS.iter().copied().map(Some).chain([None]).collect();
    let held = Duration::from_millis(50);
    let gate = Gate::new(&s);
    for route in routes {
        let issue = |ins: &[CudaSlice<f32>], outs: &mut [CudaSlice<f32>]| {
            let inputs: Vec<&dyn KernelInput> = ins.iter().map(|b| b as &dyn KernelInput).collect();
            let mut outputs: Vec<&mut dyn KernelOutput> = outs
                .iter_mut()
                .map(|o| o as &mut dyn KernelOutput)
                .collect();
            sum_by(&c, route, &inputs, &mut outputs).unwrap();
        };
        let check = |got: &[f32], r: usize, what: &str| {
            let bad = (0..n).find(|&e| got[e].to_bits() != want[e].to_bits());
            if let Some(e) = bad {
                panic!(
                    "{route:?} rank {r}, {what}: element {e} is {} (want {})",
                    got[e], want[e]
                );
            }
        };
        let fresh = || {
            let ins: Vec<CudaSlice<f32>> = host.iter().map(|h| s.clone_htod(h).unwrap()).collect();
            let outs: Vec<CudaSlice<f32>> =
                (0..world).map(|_| s.clone_htod(&poison).unwrap()).collect();
            c.synchronize().unwrap();
            (ins, outs)
        };
        // Once ungated: the call's kernels are loaded before any gate.
        let (ins, mut outs) = fresh();
        issue(&ins, &mut outs);
        c.synchronize().unwrap();
        for (r, o) in outs.iter().enumerate() {
            check(&s.clone_dtoh(o).unwrap(), r, "ungated");
        }
        // Write after read: the other streams overwrite the inputs.
        let (mut ins, mut outs) = fresh();
        let held_back = gate.close(&s);
        issue(&ins, &mut outs);
        for (i, o) in ins.iter_mut().zip(&others) {
            o.memcpy_dtod(&poison_dev, i).unwrap();
        }
        std::thread::sleep(held);
        held_back.open();
        c.synchronize().unwrap();
        for (r, o) in outs.iter().enumerate() {
            check(
                &s.clone_dtoh(o).unwrap(),
                r,
                "inputs overwritten on another stream",
            );
        }
        // Read after write: the other streams copy the outputs.
        let (ins, mut outs) = fresh();
        let mut copies: Vec<CudaSlice<f32>> =
            (0..world).map(|_| s.clone_htod(&poison).unwrap()).collect();
        c.synchronize().unwrap();
        let held_back = gate.close(&s);
        issue(&ins, &mut outs);
        for ((o, copy), other) in outs.iter().zip(&mut copies).zip(&others) {
            other.memcpy_dtod(o, copy).unwrap();
        }
        std::thread::sleep(held);
        held_back.open();
        for other in &others {
            other.synchronize().unwrap();
        }
        for (r, copy) in copies.iter().enumerate() {
            check(
                &s.clone_dtoh(copy).unwrap(),
                r,
                "outputs read on another stream",
            );
        }
        c.synchronize().unwrap();
    }
}

/// The choice table narrows 4 ranks' cp.async two-stage calls to 16 MB to
/// `NARROW_BLOCKS` blocks a rank (`Thresholds::narrow_max`), not larger ones nor
/// plain two-stage calls, and a narrowed call is exact.
#[test]
#[ignore = "needs a CUDA GPU"]
fn four_ranks_narrow_cp_async_calls_to_16_mb() {
    if common::gpu_or_skip().is_none() {
        return;
    }
    let narrow_blocks = redjit::all_reduce::choice::NARROW_BLOCKS;
    let c = Communicator::new(
        Placement::SameGpu {
            ordinal: 0,
            world: 4,
        },
        // exact_case runs every kernel: the push kernels' windows too.
        CommOptions::default()
            .max_bytes(32 << 20)
            .push_bytes(Some(32 << 20))
            .ll_bytes(Some(32 << 20)),
    )
    .unwrap();
    let cp = Call {
        cp_async: true,
        ..Call::sum(AllReduceAlgo::TwoStage)
    };
    let plain = Call::sum(AllReduceAlgo::TwoStage);
    let (at_16, past) = ((16 << 20) / 2, (16 << 20) / 2 + 8);
    let wide = c.grid(DType::BF16, cp, past).unwrap();
    assert_eq!(
        c.grid(DType::BF16, cp, at_16).unwrap(),
        wide.min(narrow_blocks)
    );
    assert_eq!(
        c.grid(DType::BF16, plain, at_16).unwrap(),
        c.grid(DType::BF16, plain, past).unwrap()
    );
    assert!(
        wide > narrow_blocks,
        "{wide} blocks past 16 MB: this GPU's share is too small to tell"
    );
    assert_eq!(c.choose(16 << 20).unwrap(), cp);
    exact_case::<bf16>(&c, at_16, 0, Op::Sum);
    exact_case::<f32>(&c, (16 << 20) / 4 - 5, 0, Op::Sum);
}

/// Every kernel at the grid caps' ends (`max_blocks`, and `ll_blocks` for the
/// LL kernel), exact bit for bit: one block per rank, and the largest cap (as
/// many of the signal buffer's slots as the two ranks' share of this GPU
/// holds; the messages want 512 blocks of two-stage).
#[test]
#[ignore = "needs a CUDA GPU"]
fn every_kernel_is_exact_at_the_grid_caps() {
    if common::gpu_or_skip().is_none() {
        return;
    }
    let max_blocks = redjit::codegen::spec::all_reduce::MAX_BLOCKS;
    for cap in [1, max_blocks] {
        let max_bytes = 16 << 20;
        let c = Communicator::new(
            Placement::SameGpu {
                ordinal: 0,
                world: 2,
            },
            CommOptions::default()
                .max_bytes(max_bytes)
                .push_bytes(Some(max_bytes))
                .ll_bytes(Some(max_bytes))
                .max_blocks(Some(cap))
                .ll_blocks(Some(cap)),
        )
        .unwrap();
        for n in [(1 << 21) + 3, 4099, (1 << 21) - 1] {
            exact_case::<f32>(&c, n, 0, Op::Sum);
            for (algo, cp_async) in ALGOS {
                let call = Call {
                    cp_async,
                    ..Call::sum(algo)
                };
                let grid = c.grid(DType::F32, call, n).unwrap();
                assert!(
                    (1..=cap).contains(&grid),
                    "{call:?} n={n}: {grid} blocks, cap {cap}"
                );
            }
        }
    }
}
