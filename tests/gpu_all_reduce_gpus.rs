//! The all-reduce with one rank per GPU in one process (`Placement::Devices`,
//! peer access proven at set-up) over every GPU of the machine, and the NCCL
//! backend over the same GPUs: the checks of `gpu_all_reduce` (which places
//! its ranks on one GPU) through NVLink. Exact inputs bit for bit from 1
//! element to 256 MB with odd counts and misaligned views, random inputs
//! against f64, 100 000 back-to-back calls, a captured graph of 16 all-reduces
//! replayed 1 000 times, a rank never launched timing out.
//!
//! Needs 2+ GPUs: on fewer it skips, unless REDJIT_REQUIRE_GPUS=N (N >= 2)
//! makes that a failure (`scripts/gpu-run.sh gpus` sets it). One process per
//! GPU through CUDA IPC is `gpu_all_reduce_ipc`.

mod common;

use std::time::{Duration, Instant};

use common::ar::{
    ALGOS, Elem, back_to_back, exact, exact_all_sizes, exact_bits, graph_of_16_replayed,
    random_all_dtypes, run_on,
};
use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use redjit::all_reduce::nccl::{NcclComm, NcclPlacement};
use redjit::all_reduce::{Call, CommOptions, Communicator, NcclUse, Placement};
use redjit::{AllReduceAlgo, Error, KernelInput, KernelOutput, Op};

const MAX_BYTES: usize = 256 << 20;

fn comm(max_bytes: usize, timeout: Duration) -> Option<Communicator> {
    let gpus = common::gpus_or_skip(2)?;
    let c = Communicator::new(
        Placement::Devices {
            ordinals: (0..gpus).collect(),
        },
        CommOptions::default()
            .timeout(timeout)
            .max_bytes(max_bytes)
            // The push kernel takes every size the tests send.
            .push_bytes(Some(max_bytes))
            .ll_bytes(Some(max_bytes)),
    )
    .unwrap_or_else(|e| panic!("{gpus} GPUs, one rank each: {e}"));
    Some(c)
}

fn exact_all<T: Elem>() {
    let Some(c) = comm(MAX_BYTES, Duration::from_secs(10)) else {
        return;
    };
    let t0 = Instant::now();
    exact_all_sizes::<T>(&c, MAX_BYTES);
    eprintln!(
        "{:?}, {} GPUs: every size to 256 MB in {:?}",
        T::DT,
        c.world(),
        t0.elapsed()
    );
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_exact_inputs_bit_for_bit_f32() {
    exact_all::<f32>();
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_exact_inputs_bit_for_bit_bf16() {
    exact_all::<bf16>();
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_exact_inputs_bit_for_bit_f16() {
    exact_all::<f16>();
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_random_inputs_within_the_bound() {
    let Some(c) = comm(8 << 20, Duration::from_secs(10)) else {
        return;
    };
    let mut rng = common::Rng::fresh("gpu_all_reduce_gpus random");
    random_all_dtypes(&c, &mut rng);
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_a_hundred_thousand_back_to_back_calls() {
    let Some(c) = comm(1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let took = back_to_back(&c, 100_000);
    eprintln!("100000 calls on {} GPUs in {took:?}", c.world());
}

#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_a_captured_graph_of_16_all_reduces_replayed_1000_times() {
    let Some(c) = comm(1 << 20, Duration::from_secs(10)) else {
        return;
    };
    let took = graph_of_16_replayed(&c, 1000);
    eprintln!(
        "1000 replays of 16 captured all-reduces on {} GPUs, checked, in {took:?}",
        c.world()
    );
}

/// The last rank is never launched: the others' kernels give up at the
/// barrier within the timeout, `synchronize` says which rank was missing, the
/// communicator stays broken until rebuilt, and works after.
#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_a_rank_never_launched_is_an_error_within_the_timeout() {
    let timeout = Duration::from_millis(200);
    let Some(mut c) = comm(1 << 20, timeout) else {
        return;
    };
    let world = c.world();
    let skip = world - 1;
    let n = 100_003;
    let ins: Vec<CudaSlice<f32>> = (0..world as usize)
        .map(|r| {
            c.runtime(r)
                .stream()
                .clone_htod(&vec![r as f32 + 1.0; n])
                .unwrap()
        })
        .collect();
    let mut outs: Vec<CudaSlice<f32>> = (0..world as usize)
        .map(|r| c.runtime(r).stream().alloc_zeros::<f32>(n).unwrap())
        .collect();
    let want: f32 = (1..=world).map(|r| r as f32).sum();
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
        c.all_reduce(&inputs, &mut outputs, call(Some(skip)))
            .unwrap();
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
            AllReduceAlgo::PushLl => format!("waiting for rank {skip}'s data"),
            _ => format!("Start barrier waiting for rank {skip}"),
        };
        assert!(reason.contains(&waited), "{algo}: {reason}");
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
        for (r, o) in outs.iter().enumerate() {
            let got = c.runtime(r).stream().clone_dtoh(o).unwrap();
            assert!(
                got.iter().all(|&x| x == want),
                "{algo}: rank {r} wrong after rebuild"
            );
        }
        eprintln!("{algo} cp_async={cp_async}: broken after {took:?}, then rebuilt");
    }
}

/// NCCL over the same GPUs (one process, ncclCommInitAll): exact inputs, sum,
/// max and min, the three dtypes, odd sizes and misaligned views, bit for bit
/// on every rank; then the peer-memory communicator with NCCL joined, whose
/// routed calls run wherever its table says, checked the same way.
#[test]
#[ignore = "needs 2+ CUDA GPUs"]
fn gpus_nccl_backend_and_routed_calls() {
    let Some(gpus) = common::gpus_or_skip(2) else {
        return;
    };
    let nccl = NcclComm::new(NcclPlacement::Devices {
        ordinals: (0..gpus).collect(),
    })
    .unwrap_or_else(|e| panic!("NCCL over {gpus} GPUs: {e}"));
    eprintln!("NCCL {} from {}", nccl.lib().version(), nccl.lib().path());
    let world = nccl.world();
    let nccl_run = |inputs: &[&dyn KernelInput], outputs: &mut [&mut dyn KernelOutput], op| {
        nccl.all_reduce(
            inputs,
            outputs,
            Call {
                op,
                ..Call::sum(AllReduceAlgo::OneShot)
            },
        )?;
        nccl.synchronize()
    };
    let nccl_stream = |r: usize| nccl.rank_stream(r).expect("a local rank").clone();
    for n in [1usize, 7, 4099, (1 << 20) + 5, (16 << 20) + 3] {
        for (op, offset) in [(Op::Sum, 0usize), (Op::Sum, 1), (Op::Max, 0), (Op::Min, 3)] {
            check_exact::<f32>(world, n, offset, op, &nccl_stream, &nccl_run);
            check_exact::<bf16>(world, n, offset, op, &nccl_stream, &nccl_run);
            check_exact::<f16>(world, n, offset, op, &nccl_stream, &nccl_run);
        }
    }
    drop(nccl);

    let c = Communicator::new(
        Placement::Devices {
            ordinals: (0..gpus).collect(),
        },
        CommOptions::default()
            .max_bytes(64 << 20)
            .nccl(NcclUse::Required),
    )
    .unwrap_or_else(|e| panic!("{gpus} GPUs with NCCL joined: {e}"));
    assert!(c.nccl().is_some());
    let routed = |inputs: &[&dyn KernelInput], outputs: &mut [&mut dyn KernelOutput], op| {
        c.all_reduce_routed(inputs, outputs, op, None)?;
        c.synchronize()
    };
    let rank_stream = |r: usize| c.runtime(r).stream().clone();
    for n in [7usize, 4099, (1 << 20) + 5, (16 << 20) - 3] {
        eprintln!("routed: {n} f32 -> {:?}", c.route(n * 4).unwrap());
        check_exact::<f32>(world, n, 0, Op::Sum, &rank_stream, &routed);
        check_exact::<bf16>(world, n, 1, Op::Sum, &rank_stream, &routed);
    }
}

type RunFn<'a> =
    dyn Fn(&[&dyn KernelInput], &mut [&mut dyn KernelOutput], Op) -> redjit::Result<()> + 'a;

/// One exact-input call through `run` with each rank's buffers on
/// `stream(r)`, every rank's output compared bit for bit, guards unwritten.
fn check_exact<T: Elem>(
    world: u32,
    n: usize,
    offset: usize,
    op: Op,
    stream: &dyn Fn(usize) -> std::sync::Arc<cudarc::driver::CudaStream>,
    run: &RunFn<'_>,
) {
    let seed = n as u64 * 3 + offset as u64;
    let host: Vec<Vec<T>> = (0..world)
        .map(|r| (0..n).map(|i| T::from_f64(exact(seed, r, i))).collect())
        .collect();
    let outs = run_on(stream, &host, offset, &mut |ins, outs| run(ins, outs, op))
        .unwrap_or_else(|e| panic!("{:?} n={n} {op}: {e}", T::DT));
    for (r, o) in outs.iter().enumerate() {
        for (i, got) in o.iter().enumerate() {
            assert_eq!(
                got.bits(),
                exact_bits(&host, i, op),
                "{:?} n={n} offset={offset} {op}: rank {r} element {i}",
                T::DT
            );
        }
    }
}
