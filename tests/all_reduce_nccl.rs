//! The NCCL backend without a GPU or NCCL: a missing library is a typed error
//! naming every path tried (never a panic, also for a library that is not
//! NCCL); placements and calls are refused with the peer-memory communicator's
//! rules (rank count, sizes, dtypes, scalars) plus NCCL's own (one rank per
//! GPU, f32/bf16/f16), while sizes and alignments it does not limit pass; the
//! choice table routes to NCCL only where the communicator has it. Pure CPU.

mod common;

use std::path::Path;

use redjit::all_reduce::Call;
use redjit::all_reduce::choice::{AlgoTable, Choice, Route};
use redjit::all_reduce::nccl::{NcclComm, NcclLib, NcclOp, NcclPlacement, check_call};
use redjit::{AllReduceAlgo, DType, Error, KernelInput, KernelOutput, Op};

use common::FakeBuffer as Fake;

fn unavailable(e: Error) -> (Vec<String>, String) {
    let text = e.to_string();
    match e {
        Error::NcclUnavailable { tried, .. } => (tried, text),
        other => panic!("expected NcclUnavailable, got {other:?}"),
    }
}

#[test]
fn a_missing_file_names_the_path_tried_and_how_to_point_at_nccl() {
    let (tried, text) =
        unavailable(NcclLib::open(Some(Path::new("/nonexistent/libnccl.so.2"))).unwrap_err());
    assert_eq!(tried.len(), 1, "{tried:?}");
    assert!(
        tried[0].starts_with("/nonexistent/libnccl.so.2 ("),
        "{tried:?}"
    );
    assert!(
        text.contains("REDJIT_NCCL_LIB=/nonexistent/libnccl.so.2 could not be opened"),
        "{text}"
    );
    assert!(text.contains("nvidia/nccl/lib/libnccl.so.2"), "{text}");
    assert!(text.contains("LD_LIBRARY_PATH"), "{text}");
}

#[test]
fn a_folder_is_searched_for_both_names() {
    let dir = std::env::temp_dir().join(format!("redjit-nccl-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (tried, _) = unavailable(NcclLib::open(Some(&dir)).unwrap_err());
    let _ = std::fs::remove_dir(&dir);
    assert_eq!(tried.len(), 2, "{tried:?}");
    assert!(
        tried[0].starts_with(&dir.join("libnccl.so.2").display().to_string()),
        "{tried:?}"
    );
    assert!(
        tried[1].starts_with(&dir.join("libnccl.so").display().to_string()),
        "{tried:?}"
    );
}

#[test]
fn the_loader_search_names_both_sonames_when_nccl_is_absent() {
    match NcclLib::open(None) {
        Ok(lib) => eprintln!(
            "NCCL is installed here ({}, version {}): nothing to check",
            lib.path(),
            lib.version()
        ),
        Err(e) => {
            let (tried, text) = unavailable(e);
            assert!(tried[0].starts_with("libnccl.so.2 ("), "{tried:?}");
            assert!(tried[1].starts_with("libnccl.so ("), "{tried:?}");
            assert!(text.contains("REDJIT_NCCL_LIB is not set"), "{text}");
        }
    }
}

#[test]
fn a_library_that_is_not_nccl_is_an_error_not_a_panic() {
    // libm is on every glibc system; opened by name through the loader.
    let (tried, text) = unavailable(NcclLib::open(Some(Path::new("libm.so.6"))).unwrap_err());
    assert!(
        tried.iter().any(|t| t.contains("has no ncclGetVersion")),
        "{tried:?}"
    );
    assert!(text.contains("lacks ncclGetVersion"), "{text}");
}

#[test]
fn a_communicator_without_nccl_or_a_gpu_is_an_error() {
    // Whatever this machine has: no panic, no abort.
    let r = NcclComm::new(NcclPlacement::Devices { ordinals: vec![0] });
    if let Err(e) = &r {
        assert!(
            matches!(
                e,
                Error::NcclUnavailable { .. }
                    | Error::NoGpu(_)
                    | Error::Driver { .. }
                    | Error::Nccl { .. }
            ),
            "{e:?}"
        );
    }
}

#[test]
fn placements_are_checked_before_nccl_is_looked_for() {
    let rule = |p: NcclPlacement| match NcclComm::new(p).unwrap_err() {
        Error::Comm { what, rule } => format!("{what}: {rule}"),
        other => panic!("expected a placement error, got {other:?}"),
    };
    let e = rule(NcclPlacement::Devices {
        ordinals: vec![0, 1, 0],
    });
    assert!(
        e.contains("GPU 0 appears twice in [0, 1, 0]: NCCL allows one rank per GPU"),
        "{e}"
    );
    let e = rule(NcclPlacement::Devices { ordinals: vec![] });
    assert!(e.contains("no devices"), "{e}");
    let e = rule(NcclPlacement::Given {
        ordinal: 0,
        rank: 2,
        world: 2,
        id: redjit::all_reduce::nccl::NcclId([0; 128]),
    });
    assert!(
        e.contains("rank 2 of world 2: rank must be below world"),
        "{e}"
    );
}

/// check_call on `world` local ranks of `dtype` x `len` after `edit`.
fn check(
    world: usize,
    call: Call,
    edit: impl Fn(&mut Vec<Fake>, &mut Vec<Fake>),
) -> Result<(DType, usize, NcclOp), Error> {
    let mut ins: Vec<Fake> = (0..world)
        .map(|r| Fake {
            dtype: DType::BF16,
            len: 1000,
            address: 0x7000_0000 + r as u64 * 4096 + 2,
        })
        .collect();
    let mut outs: Vec<Fake> = (0..world)
        .map(|r| Fake {
            dtype: DType::BF16,
            len: 1000,
            address: 0x9000_0000 + r as u64 * 4096 + 6,
        })
        .collect();
    edit(&mut ins, &mut outs);
    let inputs: Vec<&dyn KernelInput> = ins.iter().map(|f| f as &dyn KernelInput).collect();
    let outputs: Vec<&mut dyn KernelOutput> = outs
        .iter_mut()
        .map(|f| f as &mut dyn KernelOutput)
        .collect();
    check_call(2, 2, &inputs, &outputs, call)
}

fn comm_rule(r: Result<(DType, usize, NcclOp), Error>) -> String {
    match r {
        Err(Error::Comm { what, rule }) => format!("{what}: {rule}"),
        other => panic!("expected a communicator error, got {other:?}"),
    }
}

const SUM: Call = Call {
    algo: AllReduceAlgo::OneShot,
    cp_async: false,
    op: Op::Sum,
    scalar: None,
    skip_rank: None,
};

#[test]
fn calls_get_the_communicators_checks_without_its_size_and_alignment_limits() {
    // Misaligned outputs and a size past any staging buffer pass: NCCL takes both.
    let (dtype, n, op) = check(2, SUM, |i, o| {
        for f in i.iter_mut().chain(o.iter_mut()) {
            f.len = 3 << 30;
        }
    })
    .unwrap();
    assert_eq!((dtype, n), (DType::BF16, 3 << 30));
    assert_eq!(op, NcclOp::Builtin(cudarc::nccl::sys::ncclRedOp_t::ncclSum));

    let e = comm_rule(check(3, SUM, |_, _| {}));
    assert!(
        e.contains("rank count: 3 inputs and 3 outputs for 2 ranks"),
        "{e}"
    );
    let e = comm_rule(check(2, SUM, |i, _| i[1].len = 999));
    assert!(
        e.contains("sizes: rank 1's input is bf16 x 999, rank 0's bf16 x 1000"),
        "{e}"
    );
    let e = comm_rule(check(2, SUM, |i, _| i[1].dtype = DType::F16));
    assert!(e.contains("sizes: rank 1's input is f16 x 1000"), "{e}");
    let e = comm_rule(check(2, SUM, |_, o| o[0].dtype = DType::F32));
    assert!(
        e.contains("rank 0's output is f32 x 1000, the inputs bf16 x 1000"),
        "{e}"
    );
}

#[test]
fn ops_scalars_and_dtypes_in_nccls_terms() {
    let with = |op, scalar| Call { op, scalar, ..SUM };
    let e = comm_rule(check(2, with(Op::PreMulSum, None), |_, _| {}));
    assert!(e.contains("scalar: op premulsum needs"), "{e}");
    let e = comm_rule(check(2, with(Op::Max, Some(1.0)), |_, _| {}));
    assert!(e.contains("scalar: op max takes no scalar"), "{e}");
    assert_eq!(
        check(2, with(Op::Avg, Some(2.0)), |_, _| {}).unwrap().2,
        NcclOp::Builtin(cudarc::nccl::sys::ncclRedOp_t::ncclAvg)
    );
    assert_eq!(
        check(2, with(Op::Avg, Some(4.0)), |_, _| {}).unwrap().2,
        NcclOp::PreMulSum(0.25)
    );
    assert_eq!(
        check(2, with(Op::PreMulSum, Some(1.5)), |_, _| {})
            .unwrap()
            .2,
        NcclOp::PreMulSum(1.5)
    );
    let e = comm_rule(check(2, SUM, |i, o| {
        for f in i.iter_mut().chain(o.iter_mut()) {
            f.dtype = DType::E4M3;
        }
    }));
    assert!(
        e.contains("NCCL dtype: e4m3: the NCCL backend reduces f32, bf16 and f16"),
        "{e}"
    );
    let e = comm_rule(check(
        2,
        Call {
            skip_rank: Some(1),
            ..SUM
        },
        |_, _| {},
    ));
    assert!(
        e.contains("skip_rank: the NCCL backend has no skipped-rank test hook"),
        "{e}"
    );
}

#[test]
fn the_table_routes_to_nccl_only_where_the_communicator_has_it() {
    let t = AlgoTable::for_tuning(&redjit::codegen::tuning::Tuning::shipped("h200").unwrap());
    // Only the measured 4-rank row hands sizes over (from 256 MB, where the
    // kernels lost to NCCL on 4 x H200); 2 ranks only for copied inputs.
    let mut want = [None; 7];
    want[2] = Some(256 << 20);
    assert_eq!(t.nccl_min, want);
    for bytes in [0, 1 << 20, 1 << 30] {
        assert_eq!(
            t.route(3, bytes, true).unwrap(),
            Route::Kernel(t.choose(3, bytes).unwrap())
        );
    }
    assert_eq!(
        t.route(4, (256 << 20) - 1, true).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    assert_eq!(t.route(4, 256 << 20, true).unwrap(), Route::Nccl);
    assert_eq!(
        t.route(4, 256 << 20, false).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    // A hand-over set by hand on an unmeasured row.
    let mut t = AlgoTable::ladder();
    t.nccl_min[5 - 2] = Some(16 << 20);
    assert_eq!(
        t.route(5, (16 << 20) - 1, true).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    assert_eq!(t.route(5, 16 << 20, true).unwrap(), Route::Nccl);
    assert_eq!(
        t.route(5, 16 << 20, false).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    assert_eq!(
        t.route(3, 1 << 30, true).unwrap(),
        Route::Kernel(Choice::CP_ASYNC)
    );
    let forced = AlgoTable::always(Choice::ONE_SHOT).nccl_always();
    assert_eq!(forced.route(8, 0, true).unwrap(), Route::Nccl);
    assert_eq!(
        forced.route(8, 0, false).unwrap(),
        Route::Kernel(Choice::ONE_SHOT)
    );
    let e = t.route(9, 16, true).unwrap_err().to_string();
    assert!(e.contains("world 9: the table covers 2..=8 ranks"), "{e}");
}
