//! The one-process-per-GPU placement on one GPU: this test binary re-executes
//! itself twice (env `REDJIT_AR_IPC=<socket>,<rank>,<world>`), each child a rank
//! of `Placement::Process` on GPU 0 with `gpu_share = 2`. The children exchange
//! CUDA IPC handles through the Unix-socket bootstrap, open each other's
//! buffers and run the same kernels as the one-process placements: one-shot,
//! two-stage and cp.async two-stage, f32 and bf16, sizes 1 to 1M+5 elements
//! with misaligned input views, nccl-tests-style exact inputs compared bit for
//! bit, then 200 back-to-back calls, then a CUDA graph of 4 all-reduces whose
//! inputs (cuMemAlloc memory) are read in place through IPC handles registered
//! after capture, replayed 20 times with new inputs. If the driver refuses IPC within one
//! device, `Communicator::new` fails in the children naming
//! `cuIpcOpenMemHandle`, and this test fails quoting their output.
//! Run with `--ignored` on a GPU machine (REDJIT_REQUIRE_GPU=1 makes a missing
//! GPU a failure).

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use cudarc::driver::sys;
use half::bf16;
use redjit::all_reduce::{Call, CommOptions, Communicator, Placement};
use redjit::peer::LegacyAlloc;
use redjit::{AllReduceAlgo, KernelInput, KernelOutput};

const ALGOS: [(AllReduceAlgo, bool); 3] = [
    (AllReduceAlgo::OneShot, false),
    (AllReduceAlgo::TwoStage, false),
    (AllReduceAlgo::TwoStage, true),
];

/// Small integers from (seed, rank, index): every sum is exact in f32 and bf16.
fn exact(seed: u64, rank: u32, i: usize) -> f64 {
    let h = (i as u64)
        .wrapping_mul(0x9E37_79B9)
        .wrapping_add(seed * 31 + rank as u64 * 7919);
    ((h >> 7) % 31) as f64 - 15.0
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn two_processes_on_one_gpu_reduce_through_ipc() {
    if common::gpu_or_skip().is_none() {
        return;
    }
    let path = std::env::temp_dir().join(format!("redjit-ar-ipc-{}.sock", std::process::id()));
    let exe = std::env::current_exe().unwrap();
    let t0 = Instant::now();
    let children: Vec<_> = (0..2)
        .map(|r| {
            Command::new(&exe)
                .args(["--exact", "ipc_rank", "--ignored", "--nocapture"])
                .env("REDJIT_AR_IPC", format!("{},{r},2", path.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let report: String = outs
        .iter()
        .enumerate()
        .map(|(r, o)| {
            format!(
                "--- rank {r}: {}\n{}{}",
                o.status,
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .collect();
    eprintln!("{report}");
    for (r, o) in outs.iter().enumerate() {
        assert!(o.status.success(), "rank {r} failed:\n{report}");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&format!("ipc rank {r}: ok")),
            "{report}"
        );
    }
    eprintln!("two IPC ranks done in {:?}", t0.elapsed());
}

/// One rank of the test above; run directly (no env), it does nothing.
#[test]
#[ignore = "run by two_processes_on_one_gpu_reduce_through_ipc as one rank"]
fn ipc_rank() {
    let Ok(env) = std::env::var("REDJIT_AR_IPC") else {
        return;
    };
    let parts: Vec<&str> = env.split(',').collect();
    let (path, rank, world): (PathBuf, u32, u32) = (
        parts[0].into(),
        parts[1].parse().unwrap(),
        parts[2].parse().unwrap(),
    );
    let c = Communicator::new(
        Placement::Process {
            ordinal: 0,
            rank,
            world,
            rendezvous: path,
            gpu_share: world,
        },
        CommOptions {
            timeout: Duration::from_secs(20),
            max_bytes: 8 << 20,
            join_timeout: Duration::from_secs(60),
            ..CommOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("ipc rank {rank}: Communicator::new failed: {e}"));
    assert_eq!(c.local_ranks(), vec![rank]);
    let s = c.stream().clone();
    let mut calls = 0;
    for (seed, n) in [1usize, 7, 9, 4097, (1 << 20) + 5].into_iter().enumerate() {
        for (k, &(algo, cp_async)) in ALGOS.iter().enumerate() {
            let seed = (seed * 3 + k) as u64;
            let offset = 1 + k; // a misaligned input view
            let call = Call {
                cp_async,
                ..Call::sum(algo)
            };
            // f32
            let mut host: Vec<f32> = vec![f32::NAN; offset];
            host.extend((0..n).map(|i| exact(seed, rank, i) as f32));
            let input = s.clone_htod(&host).unwrap();
            let mut out: CudaSlice<f32> = s.clone_htod(&vec![f32::NAN; n]).unwrap();
            {
                let view = input.slice(offset..offset + n);
                let inputs: [&dyn KernelInput; 1] = [&view];
                let mut outputs: [&mut dyn KernelOutput; 1] = [&mut out];
                c.all_reduce(&inputs, &mut outputs, call).unwrap();
            }
            c.synchronize().unwrap();
            let got = s.clone_dtoh(&out).unwrap();
            for (i, g) in got.iter().enumerate() {
                let want: f64 = (0..world).map(|r| exact(seed, r, i)).sum();
                assert_eq!(
                    *g, want as f32,
                    "f32 {algo} cp_async={cp_async} n={n} element {i}"
                );
            }
            // bf16
            let mut host: Vec<bf16> = vec![bf16::NAN; offset];
            host.extend((0..n).map(|i| bf16::from_f64(exact(seed + 100, rank, i))));
            let input = s.clone_htod(&host).unwrap();
            let mut out: CudaSlice<bf16> = s.clone_htod(&vec![bf16::NAN; n]).unwrap();
            {
                let view = input.slice(offset..offset + n);
                let inputs: [&dyn KernelInput; 1] = [&view];
                let mut outputs: [&mut dyn KernelOutput; 1] = [&mut out];
                c.all_reduce(&inputs, &mut outputs, call).unwrap();
            }
            c.synchronize().unwrap();
            let got = s.clone_dtoh(&out).unwrap();
            for (i, g) in got.iter().enumerate() {
                let want: f64 = (0..world).map(|r| exact(seed + 100, r, i)).sum();
                assert_eq!(
                    g.to_f64(),
                    want,
                    "bf16 {algo} cp_async={cp_async} n={n} element {i}"
                );
            }
            calls += 2;
        }
    }
    // Back to back, checked once at the end.
    let n = 4099;
    let host: Vec<f32> = (0..n).map(|i| exact(77, rank, i) as f32).collect();
    let input = s.clone_htod(&host).unwrap();
    let mut out = s.alloc_zeros::<f32>(n).unwrap();
    let t0 = Instant::now();
    for k in 0..200 {
        let (algo, cp_async) = ALGOS[k % 3];
        let inputs: [&dyn KernelInput; 1] = [&input];
        let mut outputs: [&mut dyn KernelOutput; 1] = [&mut out];
        c.all_reduce(
            &inputs,
            &mut outputs,
            Call {
                cp_async,
                ..Call::sum(algo)
            },
        )
        .unwrap();
        calls += 1;
    }
    c.synchronize().unwrap();
    let got = s.clone_dtoh(&out).unwrap();
    for (i, g) in got.iter().enumerate() {
        let want: f64 = (0..world).map(|r| exact(77, r, i)).sum();
        assert_eq!(*g, want as f32, "back to back, element {i}");
    }
    let back_to_back = t0.elapsed();

    // A CUDA graph of 4 all-reduces whose inputs are read in place: each
    // process registers its inputs' IPC handles at end_capture. Captured inputs
    // must be cuMemAlloc memory (cudarc's pool memory cannot be IPC-shared).
    let sizes = [1031usize, 4099, 8, 65537];
    let allocs: Vec<LegacyAlloc> = sizes
        .iter()
        .map(|&n| LegacyAlloc::zeroed(c.runtime(0).context(), n * 4).unwrap())
        .collect();
    // SAFETY: each allocation holds n f32 and outlives its slice, which is
    // leaked below so that only the LegacyAlloc frees the memory.
    let mut ins: Vec<CudaSlice<f32>> = allocs
        .iter()
        .zip(sizes)
        .map(|(a, n)| unsafe { s.upgrade_device_ptr(a.ptr(), n) })
        .collect();
    let mut outs: Vec<CudaSlice<f32>> = sizes.iter().map(|&n| s.alloc_zeros(n).unwrap()).collect();
    c.begin_capture().unwrap();
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .unwrap();
    for (k, (i, o)) in ins.iter().zip(outs.iter_mut()).enumerate() {
        let (algo, cp_async) = ALGOS[k % 3];
        let inputs: [&dyn KernelInput; 1] = [i];
        let mut outputs: [&mut dyn KernelOutput; 1] = [o];
        c.all_reduce(
            &inputs,
            &mut outputs,
            Call {
                cp_async,
                ..Call::sum(algo)
            },
        )
        .unwrap();
    }
    let graph = s
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .unwrap()
        .expect("a captured graph");
    assert_eq!(c.end_capture().unwrap(), 4);
    for it in 0..20u64 {
        for (k, (i, &n)) in ins.iter_mut().zip(&sizes).enumerate() {
            let h: Vec<f32> = (0..n)
                .map(|j| exact(1000 + it * 4 + k as u64, rank, j) as f32)
                .collect();
            s.memcpy_htod(&h, i).unwrap();
        }
        graph.launch().unwrap();
        c.synchronize().unwrap();
        for (k, (o, &n)) in outs.iter().zip(&sizes).enumerate() {
            let got = s.clone_dtoh(o).unwrap();
            for (j, g) in got.iter().enumerate().take(n) {
                let want: f64 = (0..world)
                    .map(|r| exact(1000 + it * 4 + k as u64, r, j))
                    .sum();
                assert_eq!(*g, want as f32, "replay {it}, call {k}, element {j}");
            }
        }
        calls += 4;
    }
    drop(graph);
    for i in ins {
        i.leak();
    }
    drop(allocs);
    println!(
        "ipc rank {rank}: ok, {calls} calls (200 back to back in {back_to_back:?}; 20 replays of a 4-call graph)"
    );
}
