//! reduce_copy on the GPU against its CPU twin, bit for bit: every type
//! configuration and unroll, odd sizes, poisoned outputs, misaligned views, bad
//! calls. Run on a GPU machine with `--ignored` (REDJIT_REQUIRE_GPU=1 makes a
//! missing GPU a failure).

mod common;

use cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
use half::{bf16, f16};
use redjit::reference::{self, HostBuffer, Params};
use redjit::{
    DType, Error, KernelInput, KernelOutput, KernelSpec, LaunchOptions, Op, ReduceCopyArgs,
    ReduceCopyKernel, ReduceCopySpec, Role, Rounding, Runtime, Src, Stochastic,
};
use std::sync::Arc;

const SIZES: &[usize] = &[1, 3, 511, 512, 513, 1_034_837, (1 << 20) + 7, 1 << 26];
/// Extra elements allocated past n, so views can start 1..=3 elements in.
const SLACK: usize = 3;

/// A device buffer of one dtype, `n + SLACK` elements long.
enum DevBuf {
    F32(CudaSlice<f32>),
    BF16(CudaSlice<bf16>),
    F16(CudaSlice<f16>),
}

impl DevBuf {
    fn upload(stream: &Arc<CudaStream>, host: &HostBuffer) -> DevBuf {
        // Pad with poison so an out-of-range read would show up as NaN.
        match host {
            HostBuffer::F32(v) => DevBuf::F32(stream.clone_htod(&padded(v, f32::NAN)).unwrap()),
            HostBuffer::BF16(v) => DevBuf::BF16(stream.clone_htod(&padded(v, bf16::NAN)).unwrap()),
            HostBuffer::F16(v) => DevBuf::F16(stream.clone_htod(&padded(v, f16::NAN)).unwrap()),
            other => panic!("reduce_copy has no {} buffers", other.dtype()),
        }
    }

    /// The `n` elements starting `offset` in, as the host buffer it would download to.
    fn view(&self, offset: usize, n: usize) -> Box<dyn KernelInput + '_> {
        match self {
            DevBuf::F32(s) => Box::new(s.slice(offset..offset + n)) as Box<dyn KernelInput>,
            DevBuf::BF16(s) => Box::new(s.slice(offset..offset + n)),
            DevBuf::F16(s) => Box::new(s.slice(offset..offset + n)),
        }
    }
}

/// A poisoned output buffer of `n + SLACK` elements (all-ones bits: a NaN that no
/// finite sum produces), checked after the launch, including the slack around
/// the written range.
struct OutBuf(DevBuf);

impl OutBuf {
    fn new(stream: &Arc<CudaStream>, dtype: DType, n: usize) -> OutBuf {
        let len = n + 2 * SLACK;
        OutBuf(match dtype {
            DType::F32 => DevBuf::F32(
                stream
                    .clone_htod(&vec![f32::from_bits(u32::MAX); len])
                    .unwrap(),
            ),
            DType::BF16 => DevBuf::BF16(
                stream
                    .clone_htod(&vec![bf16::from_bits(u16::MAX); len])
                    .unwrap(),
            ),
            DType::F16 => DevBuf::F16(
                stream
                    .clone_htod(&vec![f16::from_bits(u16::MAX); len])
                    .unwrap(),
            ),
            other => panic!("reduce_copy has no {other} buffers"),
        })
    }

    fn view_mut(&mut self, offset: usize, n: usize) -> ViewMut<'_> {
        match &mut self.0 {
            DevBuf::F32(s) => ViewMut::F32(s.slice_mut(offset..offset + n)),
            DevBuf::BF16(s) => ViewMut::BF16(s.slice_mut(offset..offset + n)),
            DevBuf::F16(s) => ViewMut::F16(s.slice_mut(offset..offset + n)),
        }
    }

    fn download(&self, stream: &Arc<CudaStream>) -> HostBuffer {
        match &self.0 {
            DevBuf::F32(s) => HostBuffer::F32(stream.clone_dtoh(s).unwrap()),
            DevBuf::BF16(s) => HostBuffer::BF16(stream.clone_dtoh(s).unwrap()),
            DevBuf::F16(s) => HostBuffer::F16(stream.clone_dtoh(s).unwrap()),
        }
    }
}

/// A typed mutable view of an output, as one Sized type.
enum ViewMut<'a> {
    F32(CudaViewMut<'a, f32>),
    BF16(CudaViewMut<'a, bf16>),
    F16(CudaViewMut<'a, f16>),
}

impl ViewMut<'_> {
    fn as_output(&mut self) -> &mut dyn KernelOutput {
        match self {
            ViewMut::F32(v) => v,
            ViewMut::BF16(v) => v,
            ViewMut::F16(v) => v,
        }
    }
}

fn padded<T: Copy>(v: &[T], pad: T) -> Vec<T> {
    let mut out = v.to_vec();
    out.extend(std::iter::repeat_n(pad, SLACK));
    out
}

/// Random inputs for one size: `count` distinct buffers per dtype, so a
/// multi-source kernel never reads the same data twice.
struct Inputs {
    host: Vec<Vec<HostBuffer>>,
    dev: Vec<Vec<DevBuf>>,
}

impl Inputs {
    fn new(rng: &mut common::Rng, stream: &Arc<CudaStream>, n: usize) -> Inputs {
        Inputs::with_count(rng, stream, n, 2, 0.0)
    }

    /// `nan_every`: make about one element in that many NaN (0.0: none). NaN
    /// inputs are only for ops whose NaN result has one spelling (min, max):
    /// x86 keeps a NaN operand's payload where the GPU returns the canonical NaN.
    fn with_count(
        rng: &mut common::Rng,
        stream: &Arc<CudaStream>,
        n: usize,
        count: usize,
        nan_every: f64,
    ) -> Inputs {
        let mut host = Vec::new();
        for d in DType::stores() {
            // f16 inputs stay finite (below 2^14), so no Inf - Inf = NaN whose payload
            // the CPU and GPU spell differently; overflow to f16 Inf is still
            // exercised by f32 sums stored as f16.
            let scale = if d == DType::F16 { (-7f32).exp2() } else { 1.0 };
            let mut bufs = Vec::new();
            for _ in 0..count {
                let mut v = rng.values(n);
                if nan_every > 0.0 {
                    for x in v.iter_mut() {
                        if ((rng.next_u64() % 1_000_000) as f64) < 1e6 / nan_every {
                            *x = f32::NAN;
                        }
                    }
                }
                bufs.push(HostBuffer::from_fn(d, n, |i| v[i] * scale));
            }
            host.push(bufs);
        }
        let dev = host
            .iter()
            .map(|bufs| bufs.iter().map(|h| DevBuf::upload(stream, h)).collect())
            .collect();
        Inputs { host, dev }
    }

    fn index(d: DType) -> usize {
        DType::stores().position(|x| x == d).unwrap()
    }
}

/// The host values a launch of `spec` takes, and the twin's copy of them.
fn call_for(spec: &ReduceCopySpec, seed: u64, base: u64) -> (ReduceCopyArgs, Params) {
    let scalar = match spec.op {
        Op::PreMulSum => Some(0.37),
        Op::Avg => Some(3.0),
        _ => None,
    };
    let stochastic = (spec.rounding == Rounding::Stochastic).then_some(Stochastic { seed, base });
    let params = Params {
        op_arg: scalar.unwrap_or(0.0),
        sr_seed: stochastic.map_or(0, |s| s.seed),
        sr_base: stochastic.map_or(0, |s| s.base),
    };
    (ReduceCopyArgs { scalar, stochastic }, params)
}

/// Runs `spec` with each buffer at its offset and compares every output element,
/// and the poison around it, with the CPU twin.
#[allow(clippy::too_many_arguments)]
fn run_and_check(
    rt: &Runtime,
    spec: &ReduceCopySpec,
    inputs: &Inputs,
    n: usize,
    src_offsets: &[usize],
    dst_offsets: &[usize],
    call: (ReduceCopyArgs, Params),
    opts: LaunchOptions,
) {
    let stream = rt.stream();
    let kernel = rt.reduce_copy(spec).unwrap();
    let src_host: Vec<&HostBuffer> = spec
        .srcs
        .iter()
        .enumerate()
        .map(|(k, s)| &inputs.host[Inputs::index(spec.dtype_of(s.role))][k])
        .collect();
    let src_views: Vec<Box<dyn KernelInput + '_>> = spec
        .srcs
        .iter()
        .enumerate()
        .map(|(k, s)| inputs.dev[Inputs::index(spec.dtype_of(s.role))][k].view(src_offsets[k], n))
        .collect();
    let mut outs: Vec<OutBuf> = spec
        .dsts
        .iter()
        .map(|&r| OutBuf::new(stream, spec.dtype_of(r), n))
        .collect();
    {
        // Destinations sit SLACK + offset in, so poison lies on both sides.
        let mut dst_views: Vec<ViewMut<'_>> = outs
            .iter_mut()
            .zip(dst_offsets)
            .map(|(o, &off)| o.view_mut(SLACK + off, n))
            .collect();
        let srcs: Vec<&dyn KernelInput> = src_views.iter().map(|b| b.as_ref()).collect();
        let mut dsts: Vec<&mut dyn KernelOutput> =
            dst_views.iter_mut().map(|v| v.as_output()).collect();
        kernel
            .launch_with(stream, &srcs, &mut dsts, call.0, opts)
            .unwrap();
    }
    stream.synchronize().unwrap();
    // The twin reads the same (offset) elements the kernel read.
    let expect = reference::reduce_copy(spec, &src_host, src_offsets, n, call.1);
    for (d, (out, want)) in outs.iter().zip(&expect).enumerate() {
        let got = out.download(stream);
        let start = SLACK + dst_offsets[d];
        let poison = |i: usize| {
            got.bits(i)
                == if got.dtype() == DType::F32 {
                    u32::MAX
                } else {
                    u32::from(u16::MAX)
                }
        };
        for i in (0..start).chain(start + n..got.len()) {
            assert!(
                poison(i),
                "{}: dst{d}[{i}] outside the view was written (n = {n})",
                spec.name()
            );
        }
        let mut bad = 0usize;
        for i in 0..n {
            if got.bits(start + i) != want.bits(i) {
                if bad < 5 {
                    eprintln!(
                        "{} n={n} srcs@{src_offsets:?} dsts@{dst_offsets:?} {:?}: dst{d}[{i}] = {:#x}, CPU twin {:#x}",
                        spec.name(),
                        call.1,
                        got.bits(start + i),
                        want.bits(i)
                    );
                }
                bad += 1;
            }
        }
        assert_eq!(
            bad,
            0,
            "{}: {bad} of {n} elements differ from the CPU twin",
            spec.name()
        );
    }
}

/// Zero offsets for every buffer of `spec`.
fn aligned(spec: &ReduceCopySpec) -> (Vec<usize>, Vec<usize>) {
    (vec![0; spec.srcs.len()], vec![0; spec.dsts.len()])
}

fn all_specs() -> Vec<ReduceCopySpec> {
    let mut v = Vec::new();
    for &unroll in redjit::codegen::spec::reduce_copy::UNROLLS {
        for &t in [DType::BF16, DType::F16].iter() {
            v.extend(ReduceCopySpec::matrix(unroll, t));
        }
    }
    v
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_config_and_unroll_matches_the_cpu_twin_bit_for_bit() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let specs = all_specs();
    let report = rt.prepare(&specs).unwrap();
    eprintln!(
        "prepared {} kernels ({} compiled) in {:?}",
        report.kernels, report.compiled, report.wall
    );
    let mut rng = common::Rng::fresh("every_config");
    let mut checked = 0;
    for &n in SIZES {
        let inputs = Inputs::new(&mut rng, rt.stream(), n);
        for spec in &specs {
            let (so, dof) = aligned(spec);
            run_and_check(
                &rt,
                spec,
                &inputs,
                n,
                &so,
                &dof,
                call_for(spec, 0, 0),
                LaunchOptions::default(),
            );
            checked += 1;
        }
    }
    eprintln!("checked {checked} (kernel, size) pairs");
}

/// The type matrix at every unroll, and the widest shapes at unroll 4 and 8:
/// eight sources (whose misaligned twins load one source at a time) and two
/// destinations, rounding to nearest and stochastically.
fn misaligned_specs() -> Vec<ReduceCopySpec> {
    let (t, a) = (Src::from(Role::Transport), Src::read_only(Role::Accum));
    let mut v = all_specs();
    for unroll in [4, 8] {
        for rounding in [Rounding::Nearest, Rounding::Stochastic] {
            for (srcs, dsts) in [
                (vec![t, a, t, a, t, a, t, a], vec![Role::Transport]),
                (vec![t, a], vec![Role::Transport, Role::Accum]),
            ] {
                v.push(ReduceCopySpec {
                    unroll,
                    srcs,
                    dsts,
                    rounding,
                    ..ReduceCopySpec::default()
                });
            }
        }
    }
    v
}

/// Every spec of `misaligned_specs` at each size: every buffer off at once, each
/// by a different amount, then each buffer in turn 1..3 elements off.
fn check_misaligned(tag: &str, sizes: &[usize]) {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh(tag);
    for &n in sizes {
        let inputs = Inputs::with_count(&mut rng, rt.stream(), n + SLACK, 8, 0.0);
        for spec in misaligned_specs() {
            let (ns, nd) = (spec.srcs.len(), spec.dsts.len());
            let mut placements = Vec::new();
            for shift in 1..=SLACK {
                let off = |b: usize| (b + shift) % (SLACK + 1);
                placements.push((0..ns + nd).map(off).collect::<Vec<usize>>());
            }
            for buffer in 0..ns + nd {
                for off in 1..=SLACK {
                    let mut p = vec![0; ns + nd];
                    p[buffer] = off;
                    placements.push(p);
                }
            }
            for p in placements {
                let call = call_for(&spec, rng.next_u64(), rng.next_u64() % 1_000_003);
                run_and_check(
                    &rt,
                    &spec,
                    &inputs,
                    n,
                    &p[..ns],
                    &p[ns..],
                    call,
                    LaunchOptions::default(),
                );
            }
        }
    }
}

// 3: no whole pack; 2048 and 2052: whole hunks of every unroll, exactly and with
// one pack more (a misaligned twin leaves its last pack to the tail). Small
// enough for compute-sanitizer (scripts/gpu-run.sh sanitize).
#[test]
#[ignore = "needs a CUDA GPU"]
fn each_buffer_misaligned_small_sizes() {
    check_misaligned("misaligned_small", &[3, 513, 2048, 2052]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn each_buffer_misaligned_a_million_elements() {
    check_misaligned("misaligned_million", &[1_034_837]);
}

/// A table's `write_heavy_blocks_per_sm` holds the kernels of the unrolls it
/// names that write at least what they read to that many blocks an SM (no
/// other kernel), and a held launch with a capped grid still writes the CPU
/// twin's bits.
#[test]
#[ignore = "needs a CUDA GPU"]
fn the_table_holds_write_heavy_kernels_to_its_blocks_an_sm() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let rule = rt.tuning().tuning.reduce_copy_rule().cloned();
    eprintln!(
        "{}: write_heavy_blocks_per_sm {:?}",
        rt.tuning().why,
        rule.as_ref().map(|r| &r.write_heavy_blocks_per_sm)
    );
    let mut rng = common::Rng::fresh("held_blocks");
    let n = 1_034_837;
    let inputs = Inputs::new(&mut rng, rt.stream(), n);
    for &unroll in redjit::codegen::spec::reduce_copy::UNROLLS {
        for spec in ReduceCopySpec::matrix(unroll, DType::BF16) {
            let held = rt.reduce_copy(&spec).unwrap().held_blocks_per_sm().unwrap();
            match rule.as_ref().and_then(|r| r.held_blocks(&spec)) {
                Some(c) => assert!(
                    held.is_some_and(|b| (1..=c).contains(&b)),
                    "{}: {held:?} blocks an SM, the table's {c}",
                    spec.name()
                ),
                None => assert_eq!(held, None, "{}", spec.name()),
            }
            if held.is_none() {
                continue;
            }
            for max_blocks in [None, Some(7)] {
                let (so, dof) = aligned(&spec);
                run_and_check(
                    &rt,
                    &spec,
                    &inputs,
                    n,
                    &so,
                    &dof,
                    call_for(&spec, 0, 0),
                    LaunchOptions::default().max_blocks(max_blocks),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn any_block_size_and_grid_gives_the_same_bits() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("block_sizes");
    let n = 1_034_837;
    let inputs = Inputs::new(&mut rng, rt.stream(), n);
    let spec = ReduceCopySpec::default();
    assert_eq!(spec.max_launch_threads(), 1024);
    for threads in [32, 96, 256, 1024] {
        for max_blocks in [None, Some(1), Some(7)] {
            run_and_check(
                &rt,
                &spec,
                &inputs,
                n,
                &[0, 0],
                &[0],
                call_for(&spec, 0, 0),
                LaunchOptions::default()
                    .threads(Some(threads))
                    .max_blocks(max_blocks),
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_calls_are_errors_and_empty_calls_launch_nothing() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let s = rt.stream();
    let k = rt.reduce_copy(&ReduceCopySpec::default()).unwrap(); // TA_T: bf16 + f32 -> bf16
    let a: CudaSlice<bf16> = s.clone_htod(&vec![bf16::ONE; 100]).unwrap();
    let b: CudaSlice<f32> = s.clone_htod(&vec![2.0f32; 100]).unwrap();
    let b_short: CudaView<f32> = b.slice(0..99);
    let mut out: CudaSlice<bf16> = s.clone_htod(&vec![bf16::NAN; 100]).unwrap();
    let mut wrong_type: CudaSlice<f32> = s.clone_htod(&vec![f32::NAN; 100]).unwrap();
    let launch_err = |e: Error, what: &str, value: &str| {
        let msg = e.to_string();
        assert!(matches!(e, Error::Launch { .. }), "{msg}");
        assert!(
            msg.contains(what) && msg.contains(value),
            "{msg} should name {what} = {value}"
        );
    };
    launch_err(
        k.launch(s, &[&a], &mut [&mut out]).unwrap_err(),
        "number of sources",
        "1",
    );
    launch_err(
        k.launch(s, &[&a, &b], &mut []).unwrap_err(),
        "number of destinations",
        "0",
    );
    launch_err(
        k.launch(s, &[&b, &a], &mut [&mut out]).unwrap_err(),
        "dtype",
        "src0: f32",
    );
    launch_err(
        k.launch(s, &[&a, &b], &mut [&mut wrong_type]).unwrap_err(),
        "dtype",
        "dst0: f32",
    );
    launch_err(
        k.launch(s, &[&a, &b_short], &mut [&mut out]).unwrap_err(),
        "length",
        "src1: 99",
    );
    for threads in [0, 100, 2048] {
        let e = k
            .launch_with(
                s,
                &[&a, &b],
                &mut [&mut out],
                ReduceCopyArgs::default(),
                LaunchOptions::default()
                    .threads(Some(threads))
                    .max_blocks(None),
            )
            .unwrap_err();
        launch_err(e, "threads", &threads.to_string());
    }
    // Unroll 8 is compiled for at most 512 threads per block.
    let k8 = rt
        .reduce_copy(&ReduceCopySpec {
            unroll: 8,
            ..ReduceCopySpec::default()
        })
        .unwrap();
    let e = k8
        .launch_with(
            s,
            &[&a, &b],
            &mut [&mut out],
            ReduceCopyArgs::default(),
            LaunchOptions::default()
                .threads(Some(1024))
                .max_blocks(None),
        )
        .unwrap_err();
    launch_err(e, "threads", "1024");
    // A scalar for an op that takes none, none for one that needs it, a seed
    // for a round-to-nearest kernel, none for a stochastic one.
    let with = |k: &ReduceCopyKernel, call: ReduceCopyArgs, out: &mut CudaSlice<bf16>| {
        k.launch_with(s, &[&a, &b], &mut [out], call, LaunchOptions::default())
            .unwrap_err()
    };
    let sr = Stochastic { seed: 1, base: 2 };
    launch_err(
        with(
            &k,
            ReduceCopyArgs {
                scalar: Some(2.0),
                stochastic: None,
            },
            &mut out,
        ),
        "scalar",
        "2",
    );
    launch_err(
        with(
            &k,
            ReduceCopyArgs {
                scalar: None,
                stochastic: Some(sr),
            },
            &mut out,
        ),
        "stochastic",
        "seed 1 base 2",
    );
    let avg = rt
        .reduce_copy(&ReduceCopySpec {
            op: Op::Avg,
            ..ReduceCopySpec::default()
        })
        .unwrap();
    launch_err(
        with(&avg, ReduceCopyArgs::default(), &mut out),
        "scalar",
        "none",
    );
    launch_err(
        with(
            &avg,
            ReduceCopyArgs {
                scalar: Some(0.0),
                stochastic: None,
            },
            &mut out,
        ),
        "scalar",
        "0",
    );
    launch_err(
        with(
            &avg,
            ReduceCopyArgs {
                scalar: Some(f32::NAN),
                stochastic: None,
            },
            &mut out,
        ),
        "scalar",
        "NaN",
    );
    let srk = rt
        .reduce_copy(&ReduceCopySpec {
            rounding: Rounding::Stochastic,
            ..ReduceCopySpec::default()
        })
        .unwrap();
    launch_err(
        with(&srk, ReduceCopyArgs::default(), &mut out),
        "stochastic",
        "none",
    );
    let late = Stochastic {
        seed: 1,
        base: u64::MAX - 10,
    };
    launch_err(
        with(
            &srk,
            ReduceCopyArgs {
                scalar: None,
                stochastic: Some(late),
            },
            &mut out,
        ),
        "stochastic base",
        &late.base.to_string(),
    );
    // Nothing above may have written: out is still all poison.
    let host = s.clone_dtoh(&out).unwrap();
    assert!(host.iter().all(|x| x.is_nan()));
    // n == 0 returns Ok before any launch.
    let empty_a = a.slice(0..0);
    let empty_b = b.slice(0..0);
    let mut empty_out: CudaViewMut<bf16> = out.slice_mut(0..0);
    k.launch(s, &[&empty_a, &empty_b], &mut [&mut empty_out])
        .unwrap();
    s.synchronize().unwrap();
}

/// The sizes for ops and roundings.
const OP_SIZES: &[usize] = &[1, 5, 513, 1_034_837, (1 << 24) + 3];

/// Specs for the op and rounding matrix: for each transport, config 2 (Ta_T: a
/// volatile transport buffer and a read-only user buffer, as PAT uses them),
/// config 6 (AA_T), the 1-source downcast A_T, eight sources (TaTaTaTa -> T),
/// and two destinations (Ta -> T and A), every op, both roundings.
fn op_specs(unroll: u32) -> Vec<ReduceCopySpec> {
    let (t, a) = (Src::from(Role::Transport), Src::read_only(Role::Accum));
    let shapes: Vec<(Vec<Src>, Vec<Role>)> = vec![
        (vec![t, a], vec![Role::Transport]),
        (
            vec![Role::Accum.into(), Role::Accum.into()],
            vec![Role::Transport],
        ),
        (vec![Role::Accum.into()], vec![Role::Transport]),
        (vec![t, a, t, a, t, a, t, a], vec![Role::Transport]),
        (vec![t, a], vec![Role::Transport, Role::Accum]),
    ];
    let mut out = Vec::new();
    for transport in [DType::BF16, DType::F16] {
        for (srcs, dsts) in &shapes {
            for &op in Op::ALL {
                for &rounding in Rounding::ALL {
                    out.push(ReduceCopySpec {
                        unroll,
                        transport,
                        srcs: srcs.clone(),
                        dsts: dsts.clone(),
                        op,
                        rounding,
                        ..ReduceCopySpec::default()
                    });
                }
            }
        }
    }
    out
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_op_and_rounding_matches_the_cpu_twin_bit_for_bit() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let specs = op_specs(4);
    rt.prepare(&specs).unwrap();
    let mut rng = common::Rng::fresh("ops");
    for &n in OP_SIZES {
        let inputs = Inputs::with_count(&mut rng, rt.stream(), n, 8, 0.0);
        let nan_inputs = Inputs::with_count(&mut rng, rt.stream(), n, 8, 1000.0);
        for spec in &specs {
            let (so, dof) = aligned(spec);
            let seed = rng.next_u64();
            let base = rng.next_u64() % 1_000_003;
            run_and_check(
                &rt,
                spec,
                &inputs,
                n,
                &so,
                &dof,
                call_for(spec, seed, base),
                LaunchOptions::default(),
            );
            if matches!(spec.op, Op::Min | Op::Max) {
                // NaN anywhere among the sources gives NaN.
                run_and_check(
                    &rt,
                    spec,
                    &nan_inputs,
                    n,
                    &so,
                    &dof,
                    call_for(spec, seed, base),
                    LaunchOptions::default(),
                );
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn stochastic_rounding_is_the_same_for_every_unroll_offset_and_block_size() {
    let Some(rt) = common::gpu_or_skip() else {
        return;
    };
    let mut rng = common::Rng::fresh("sr_invariance");
    let n = 1_034_837;
    let inputs = Inputs::with_count(&mut rng, rt.stream(), n + SLACK, 2, 0.0);
    for transport in [DType::BF16, DType::F16] {
        for &unroll in redjit::codegen::spec::reduce_copy::UNROLLS {
            let spec = ReduceCopySpec {
                unroll,
                transport,
                srcs: vec![Role::Transport.into(), Src::read_only(Role::Accum)],
                rounding: Rounding::Stochastic,
                ..ReduceCopySpec::default()
            };
            // Each run is checked against the one CPU twin, which knows nothing of
            // unroll, offsets or grids: equal to it, the runs are equal to each other.
            for base in [0u64, 3, 1 << 40] {
                let call = call_for(&spec, 0xfeed_beef, base);
                run_and_check(
                    &rt,
                    &spec,
                    &inputs,
                    n,
                    &[0, 0],
                    &[0],
                    call,
                    LaunchOptions::default(),
                );
                for off in 1..=SLACK {
                    run_and_check(
                        &rt,
                        &spec,
                        &inputs,
                        n,
                        &[off, 0],
                        &[0],
                        call,
                        LaunchOptions::default(),
                    );
                    run_and_check(
                        &rt,
                        &spec,
                        &inputs,
                        n,
                        &[0, off],
                        &[0],
                        call,
                        LaunchOptions::default(),
                    );
                    run_and_check(
                        &rt,
                        &spec,
                        &inputs,
                        n,
                        &[0, 0],
                        &[off],
                        call,
                        LaunchOptions::default(),
                    );
                }
                let few_blocks = LaunchOptions::default()
                    .threads(Some(64))
                    .max_blocks(Some(3));
                run_and_check(&rt, &spec, &inputs, n, &[0, 0], &[0], call, few_blocks);
            }
        }
    }
}
