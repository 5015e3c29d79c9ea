//! `#[redjit::reduce_copy]` launchers on the GPU: first calls from many threads
//! before `prepare_registered` compile the kernel once; results match the CPU;
//! a bad call is an `Err`. Run with `--ignored` on a GPU machine
//! (REDJIT_REQUIRE_GPU=1 makes a missing GPU a failure).

mod common;

use redjit::{Error, Runtime, RuntimeOptions};

#[redjit::reduce_copy(unroll = 2, op = max, read_only(a))]
fn max_of(a: &[f32], b: &[f32], out: &mut [f32]);

/// Same kernel, another function: registered twice, compiled once.
#[redjit::reduce_copy(unroll = 2, op = "max", read_only(x))]
fn max_again(x: &[f32], y: &[f32], z: &mut [f32]);

#[test]
#[ignore = "needs a CUDA GPU"]
fn first_calls_from_many_threads_compile_once() {
    if common::gpu_or_skip().is_none() {
        return;
    }
    // No disk cache: every kernel this runtime gets is compiled by it.
    let rt = Runtime::with_options(RuntimeOptions::default().no_disk_cache(true)).unwrap();
    let n = 100_003;
    let a: Vec<f32> = (0..n).map(|i| (i % 251) as f32 - 125.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 127) as f32 - 60.5).collect();
    let want: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x.max(*y)).collect();
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (rt, a, b, want) = (&rt, &a, &b, &want);
            scope.spawn(move || {
                let s = rt.context().new_stream().unwrap();
                let da = s.clone_htod(a).unwrap();
                let db = s.clone_htod(b).unwrap();
                let mut out = s.alloc_zeros::<f32>(n).unwrap();
                if t % 2 == 0 {
                    max_of(rt, &s, &da, &db, &mut out).unwrap();
                } else {
                    max_again(rt, &s, &da, &db, &mut out).unwrap();
                }
                assert_eq!(&s.clone_dtoh(&out).unwrap(), want, "thread {t}");
            });
        }
    });
    let stats = rt.jit().cache().stats();
    assert_eq!(stats.compiled, 1, "{stats:?}");
    // Everything registered here is loaded: prepare compiles nothing.
    let report = redjit::prepare_registered(&rt).unwrap();
    assert_eq!((report.kernels, report.compiled), (1, 0), "{report:?}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_bad_call_is_an_error() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    redjit::prepare_registered(&rt).unwrap();
    let s = rt.stream();
    let a = s.alloc_zeros::<f32>(64).unwrap();
    let b = s.alloc_zeros::<f32>(63).unwrap();
    let mut out = s.alloc_zeros::<f32>(64).unwrap();
    match max_of(&rt, s, &a, &b, &mut out) {
        Err(Error::Launch { what, .. }) => assert_eq!(what, "length"),
        other => panic!("expected a length error, got {other:?}"),
    }
}
