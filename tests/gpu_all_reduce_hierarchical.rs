//! The hierarchical all-reduce on one host (H = 1): R ranks placed on GPU 0,
//! the node's reduce-scatter and all-gather kernels, and between them one
//! one-rank NCCL communicator per local rank (NCCL's one-rank sum, max and
//! prod leave the slice as it is). The result must equal the flat two-stage
//! all-reduce bit for bit and, on nccl-tests style integer inputs, the exact
//! sum; the refusals (a ragged message, a one-shot call, the wrong number of
//! inter-host communicators) are typed errors. What this cannot show: two or
//! more hosts (the module docs of `all_reduce::comm` say what is designed).
//!
//! Run on the GPU machine with NCCL from PyTorch's wheel, as
//! `gpu_all_reduce_nccl` says (REDJIT_NCCL_LIB or LD_LIBRARY_PATH); with
//! REDJIT_REQUIRE_GPU=1 a missing GPU or NCCL fails the test.

mod common;

use std::time::Duration;

use cudarc::driver::CudaSlice;
use half::bf16;
use redjit::all_reduce::nccl::{NcclComm, NcclPlacement};
use redjit::all_reduce::{Call, CommOptions, Communicator, Placement};
use redjit::{AllReduceAlgo, DeviceElem, Error, KernelInput, KernelOutput, Op};

fn required() -> bool {
    std::env::var("REDJIT_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// A communicator of `world` ranks on GPU 0 and one one-rank NCCL
/// communicator per rank, or None (skip) without a GPU or NCCL.
fn setup(world: u32) -> Option<(Communicator, Vec<NcclComm>)> {
    common::gpu_or_skip()?;
    let mut inter = Vec::new();
    for _ in 0..world {
        match NcclComm::new(NcclPlacement::Devices { ordinals: vec![0] }) {
            Ok(c) => inter.push(c),
            Err(e @ Error::NcclUnavailable { .. }) if !required() => {
                eprintln!("skipping: {e}");
                return None;
            }
            Err(e) => panic!("one-rank NCCL communicator: {e}"),
        }
    }
    let comm = Communicator::new(
        Placement::SameGpu { ordinal: 0, world },
        CommOptions::default()
            .timeout(Duration::from_secs(30))
            .max_bytes(8 << 20),
    )
    .unwrap();
    Some((comm, inter))
}

/// Small integers from (seed, rank, index): every partial sum is exact.
fn exact(seed: u64, rank: u32, i: usize) -> f64 {
    let h = (i as u64)
        .wrapping_mul(0x9E37_79B9)
        .wrapping_add(seed * 31 + u64::from(rank) * 7919);
    ((h >> 7) % 31) as f64 - 15.0
}

/// Every rank's output of one call (`hier`: the hierarchical one, else the
/// flat two-stage kernel), outputs poisoned with NaN first.
fn run<T: DeviceElem + Copy>(
    c: &Communicator,
    inter: &[NcclComm],
    inputs: &[Vec<T>],
    call: Call,
    hier: bool,
    nan: T,
) -> Result<Vec<Vec<T>>, Error> {
    let s = c.stream();
    let n = inputs[0].len();
    let dev: Vec<CudaSlice<T>> = inputs.iter().map(|v| s.clone_htod(v).unwrap()).collect();
    let mut outs: Vec<CudaSlice<T>> = (0..inputs.len())
        .map(|_| s.clone_htod(&vec![nan; n]).unwrap())
        .collect();
    {
        let ins: Vec<&dyn KernelInput> = dev.iter().map(|d| d as &dyn KernelInput).collect();
        let mut outputs: Vec<&mut dyn KernelOutput> = outs
            .iter_mut()
            .map(|o| o as &mut dyn KernelOutput)
            .collect();
        if hier {
            let refs: Vec<&NcclComm> = inter.iter().collect();
            c.all_reduce_hierarchical(&ins, &mut outputs, call, &refs)?;
        } else {
            c.all_reduce(&ins, &mut outputs, call)?;
        }
    }
    c.synchronize().unwrap();
    Ok(outs.iter().map(|o| s.clone_dtoh(o).unwrap()).collect())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_host_equals_the_flat_two_stage_kernel_bit_for_bit() {
    for world in [2u32, 4] {
        let Some((c, inter)) = setup(world) else {
            return;
        };
        for (k, n) in [8usize, 8 * 1031, 8 * 65_536 + 24].into_iter().enumerate() {
            for (op, cp_async) in [(Op::Sum, false), (Op::Sum, true), (Op::Max, false)] {
                let call = Call {
                    op,
                    cp_async,
                    ..Call::sum(AllReduceAlgo::TwoStage)
                };
                let seed = k as u64 * 3 + u64::from(cp_async);
                let f: Vec<Vec<f32>> = (0..world)
                    .map(|r| (0..n).map(|i| exact(seed, r, i) as f32).collect())
                    .collect();
                let hier = run(&c, &inter, &f, call, true, f32::NAN).unwrap();
                let flat = run(&c, &inter, &f, call, false, f32::NAN).unwrap();
                for r in 0..world as usize {
                    for i in 0..n {
                        let want = match op {
                            Op::Max => f.iter().map(|v| v[i]).fold(f32::NEG_INFINITY, f32::max),
                            _ => f.iter().map(|v| v[i]).sum(),
                        };
                        assert_eq!(
                            hier[r][i].to_bits(),
                            flat[r][i].to_bits(),
                            "R={world} n={n} {op:?} cp_async={cp_async}: rank {r} element {i}"
                        );
                        assert_eq!(
                            hier[r][i], want,
                            "R={world} n={n} {op:?}: rank {r} element {i}"
                        );
                    }
                }
                // bf16, exact small integers as well.
                let b: Vec<Vec<bf16>> = f
                    .iter()
                    .map(|v| v.iter().map(|&x| bf16::from_f32(x)).collect())
                    .collect();
                let hier = run(&c, &inter, &b, call, true, bf16::NAN).unwrap();
                let flat = run(&c, &inter, &b, call, false, bf16::NAN).unwrap();
                assert!(
                    hier.iter()
                        .zip(&flat)
                        .all(|(h, f)| h.iter().zip(f).all(|(x, y)| x.to_bits() == y.to_bits())),
                    "bf16 R={world} n={n} {op:?} cp_async={cp_async}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ragged_messages_one_shot_calls_and_missing_communicators_are_errors() {
    let Some((c, inter)) = setup(2) else {
        return;
    };
    let two = Call::sum(AllReduceAlgo::TwoStage);
    let ragged: Vec<Vec<f32>> = (0..2).map(|_| vec![1.0; 9]).collect();
    let e = run(&c, &inter, &ragged, two, true, f32::NAN).unwrap_err();
    assert!(e.to_string().contains("whole 16-byte packs"), "{e}");
    let whole: Vec<Vec<f32>> = (0..2).map(|_| vec![1.0; 8]).collect();
    let e = run(
        &c,
        &inter,
        &whole,
        Call::sum(AllReduceAlgo::OneShot),
        true,
        f32::NAN,
    )
    .unwrap_err();
    assert!(e.to_string().contains("twostage"), "{e}");
    let e = run(&c, &inter[..1], &whole, two, true, f32::NAN).unwrap_err();
    assert!(
        e.to_string()
            .contains("one NCCL communicator per local rank"),
        "{e}"
    );
    // The communicator still works after the refusals.
    let out = run(&c, &inter, &whole, two, true, f32::NAN).unwrap();
    assert!(out.iter().all(|o| o.iter().all(|&x| x == 2.0)));
}
