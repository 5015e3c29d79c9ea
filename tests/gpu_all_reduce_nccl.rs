//! The NCCL backend with one rank (NCCL allows one rank per GPU in a
//! communicator, so one GPU holds a world of one): f32/bf16/f16, sizes
//! {1, 1031, 2^20+3}, random inputs (and a misaligned input and output view),
//! ops sum, max, avg (count 1: ncclAvg; count 4: a premulsum by 1/4) and
//! premulsum; every output is its input, or the input scaled, within one
//! rounding of the dtype; outputs are poisoned with NaN and guarded.
//!
//! Run on the GPU machine with NCCL from PyTorch's wheel:
//!
//! ```text
//! REDJIT_REQUIRE_GPU=1 \
//! REDJIT_NCCL_LIB="$(python -c 'import nvidia.nccl, os; print(list(nvidia.nccl.__path__)[0])')/lib" \
//! cargo test -p redjit --test gpu_all_reduce_nccl -- --ignored --nocapture
//! ```
//!
//! (or that folder on LD_LIBRARY_PATH instead of REDJIT_NCCL_LIB). With
//! REDJIT_REQUIRE_GPU=1 a missing GPU or a missing NCCL fails the test with
//! the error naming what was tried; without it, both skip.

mod common;

use common::ar::Elem;
use cudarc::driver::CudaSlice;
use half::{bf16, f16};
use redjit::all_reduce::Call;
use redjit::all_reduce::nccl::{NcclComm, NcclPlacement};
use redjit::{AllReduceAlgo, Error, KernelInput, KernelOutput, Op};

fn required() -> bool {
    std::env::var("REDJIT_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// A one-rank NCCL communicator on GPU 0, or None (skip) without a GPU or
/// NCCL; with REDJIT_REQUIRE_GPU=1 both are failures.
fn comm() -> Option<NcclComm> {
    common::gpu_or_skip()?;
    match NcclComm::new(NcclPlacement::Devices { ordinals: vec![0] }) {
        Ok(c) => {
            let lib = c.lib();
            eprintln!("NCCL {} from {}", lib.version(), lib.path());
            Some(c)
        }
        Err(e @ Error::NcclUnavailable { .. }) if !required() => {
            eprintln!("skipping: {e}");
            None
        }
        Err(e) => panic!("NCCL backend with one rank: {e}"),
    }
}

/// One unit in the last place relative to the value, and the smallest step
/// (subnormal) of the dtype: one rounding's bound.
trait Tol: Elem {
    const REL: f64;
    const ABS: f64;
}
impl Tol for f32 {
    const REL: f64 = 1.0 / (1u64 << 23) as f64;
    const ABS: f64 = 1.0e-45;
}
impl Tol for bf16 {
    const REL: f64 = 1.0 / 128.0;
    const ABS: f64 = 1.0e-40;
}
impl Tol for f16 {
    const REL: f64 = 1.0 / 1024.0;
    const ABS: f64 = 1.0 / (1u64 << 24) as f64;
}

/// The call and the factor its one-rank result is the input times.
fn cases() -> Vec<(Call, f64)> {
    let call = |op, scalar| Call {
        op,
        scalar,
        ..Call::sum(AllReduceAlgo::OneShot)
    };
    vec![
        (call(Op::Sum, None), 1.0),
        (call(Op::Max, None), 1.0),
        (call(Op::Avg, Some(1.0)), 1.0),
        (call(Op::Avg, Some(4.0)), 0.25),
        (call(Op::PreMulSum, Some(0.75)), 0.75),
    ]
}

fn one_rank<T: Tol>(c: &NcclComm, rng: &mut common::Rng) {
    let s = c.stream();
    for n in [1usize, 1031, (1 << 20) + 3] {
        // offset 0: aligned views; 1: input and output start one element in.
        for offset in [0usize, 1] {
            let x: Vec<T> = rng
                .values(n)
                .into_iter()
                .map(|v| T::from_f64((v as f64).clamp(-6e4, 6e4)))
                .collect();
            let mut padded = vec![T::from_f64(f64::NAN); offset];
            padded.extend_from_slice(&x);
            let input: CudaSlice<T> = s.clone_htod(&padded).unwrap();
            for (call, factor) in cases() {
                let mut out: CudaSlice<T> = s
                    .clone_htod(&vec![T::from_f64(f64::NAN); offset + n + 8])
                    .unwrap();
                {
                    let view = input.slice(offset..offset + n);
                    let mut out_view = out.slice_mut(offset..offset + n);
                    let ins: [&dyn KernelInput; 1] = [&view];
                    let mut outs: [&mut dyn KernelOutput; 1] = [&mut out_view];
                    c.all_reduce(&ins, &mut outs, call).unwrap();
                }
                c.synchronize().unwrap();
                let h = s.clone_dtoh(&out).unwrap();
                let what = format!(
                    "{:?} n={n} offset={offset} {} {:?}",
                    T::DT,
                    call.op,
                    call.scalar
                );
                for (i, g) in h[..offset].iter().chain(&h[offset + n..]).enumerate() {
                    assert!(g.to_f64().is_nan(), "{what}: guard element {i} was written");
                }
                for i in 0..n {
                    let exact = x[i].to_f64() * factor;
                    let got = h[offset + i].to_f64();
                    let bound = T::REL * exact.abs() + T::ABS;
                    assert!(
                        (got - exact).abs() <= bound,
                        "{what}: element {i}: {got} vs {exact} (input {}, bound {bound})",
                        x[i].to_f64()
                    );
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nccl_backend_with_one_rank() {
    let Some(c) = comm() else {
        return;
    };
    assert_eq!(c.world(), 1);
    assert_eq!(c.local_ranks(), vec![0]);
    let mut rng = common::Rng::fresh("gpu_all_reduce_nccl");
    one_rank::<f32>(&c, &mut rng);
    one_rank::<bf16>(&c, &mut rng);
    one_rank::<f16>(&c, &mut rng);
}
