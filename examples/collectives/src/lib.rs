//! A downstream crate of redjit: the reduce+copy steps of NCCLX's quantized
//! collectives, declared with `#[redjit::reduce_copy]`, and a check of each
//! against redjit's CPU twin. `src/main.rs` runs them on GPU 0 and prints the
//! start-up JIT time.

use redjit::cudarc::driver::CudaSlice;
use redjit::half::bf16;
use redjit::reference::{self, HostBuffer, Params};
use redjit::{DType, KernelSpec, ReduceCopySpec, Runtime, Stochastic};

/// PAT ReduceScatterQuantize: a peer's bf16 partial plus this rank's f32 input,
/// summed in f32 and sent on as bf16, stochastically rounded.
#[redjit::reduce_copy(unroll = 4, rounding = stochastic, read_only(input))]
pub fn reduce_scatter_quantize(recv: &[bf16], input: &[f32], send: &mut [bf16]);

/// The last ReduceScatter step: a peer's bf16 partial plus this rank's f32 input,
/// kept in f32 (the rank's output).
#[redjit::reduce_copy(unroll = 4, read_only(input))]
pub fn reduce_scatter_finish(recv: &[bf16], input: &[f32], out: &mut [f32]);

/// An unquantized step: f32 + f32 -> f32.
#[redjit::reduce_copy(unroll = 4, read_only(input))]
pub fn reduce_f32(recv: &[f32], input: &[f32], out: &mut [f32]);

/// The same kernel as `reduce_scatter_finish` under another name (unroll 4 is
/// the default): registered twice, compiled once.
#[redjit::reduce_copy(read_only(local))]
pub fn accumulate_peer(peer: &[bf16], local: &[f32], acc: &mut [f32]);

/// The kernel names the three configurations above must have; the GPU check
/// runs each against a spec parsed from its name, so a macro that built another
/// spec than the signature says fails the check.
pub const KERNELS: [&str; 3] = [
    "reduce_copy_u4_f32_bf16_Ta_T_sum_sr",
    "reduce_copy_u4_f32_bf16_Ta_A_sum_rn",
    "reduce_copy_u4_f32_bf16_Aa_A_sum_rn",
];

/// One step's result on the GPU against the CPU twin.
#[derive(Debug)]
pub struct Check {
    pub function: &'static str,
    pub n: usize,
    /// Elements whose bits differ from the CPU twin's.
    pub mismatches: usize,
    pub first_mismatch: Option<String>,
}

/// SplitMix64 values: finite, both signs, magnitudes 2^-8..2^8.
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let sign = if z & 1 == 0 { 1.0 } else { -1.0 };
            let mant = 1.0 + ((z >> 1) & 0x7f_ffff) as f32 / 8_388_608.0;
            let exp = ((z >> 24) % 17) as i32 - 8;
            sign * mant * (exp as f32).exp2()
        })
        .collect()
}

fn host(dtype: DType, v: &[f32]) -> HostBuffer {
    HostBuffer::from_fn(dtype, v.len(), |i| v[i])
}

fn compare(function: &'static str, want: &HostBuffer, got: &HostBuffer) -> Check {
    let n = want.len();
    let bad: Vec<usize> = (0..n).filter(|&i| want.bits(i) != got.bits(i)).collect();
    Check {
        function,
        n,
        mismatches: bad.len(),
        first_mismatch: bad.first().map(|&i| {
            format!(
                "element {i}: GPU {} ({:#x}), CPU {} ({:#x})",
                got.get_f32(i),
                got.bits(i),
                want.get_f32(i),
                want.bits(i)
            )
        }),
    }
}

type BoxError = Box<dyn std::error::Error>;

/// Runs the four functions on `n` random elements each (any n: odd sizes reach
/// the kernels' tails) and compares every output bit with the CPU twin.
pub fn run_checks(rt: &Runtime, n: usize, seed: u64) -> Result<Vec<Check>, BoxError> {
    let s = rt.stream();
    let spec = |name: &str| -> Result<ReduceCopySpec, BoxError> { Ok(name.parse()?) };
    let (sr_spec, finish_spec, f32_spec) =
        (spec(KERNELS[0])?, spec(KERNELS[1])?, spec(KERNELS[2])?);

    let recv_f = values(seed, n);
    let input_f = values(seed ^ 0x5555, n);
    let recv = host(DType::BF16, &recv_f);
    let input = host(DType::F32, &input_f);
    let recv32 = host(DType::F32, &recv_f);
    let (HostBuffer::BF16(recv_h), HostBuffer::F32(input_h), HostBuffer::F32(recv32_h)) =
        (&recv, &input, &recv32)
    else {
        return Err("host buffers of the wrong type".into());
    };
    let d_recv = s.clone_htod(recv_h)?;
    let d_input = s.clone_htod(input_h)?;
    let d_recv32 = s.clone_htod(recv32_h)?;
    let mut checks = Vec::new();

    // Poisoned outputs: a kernel that skips an element leaves a NaN the CPU twin
    // never produces.
    let mut send: CudaSlice<bf16> = s.clone_htod(&vec![bf16::from_bits(0xffff); n])?;
    let sr = Stochastic {
        seed: seed.rotate_left(17),
        base: 4 * (seed % 1000),
    };
    reduce_scatter_quantize(rt, s, &d_recv, &d_input, &mut send, sr)?;
    let params = Params {
        op_arg: 0.0,
        sr_seed: sr.seed,
        sr_base: sr.base,
    };
    let want = reference::reduce_copy(&sr_spec, &[&recv, &input], &[0, 0], n, params);
    let got = HostBuffer::BF16(s.clone_dtoh(&send)?);
    checks.push(compare("reduce_scatter_quantize", &want[0], &got));

    let nearest = Params::default();
    let want = reference::reduce_copy(&finish_spec, &[&recv, &input], &[0, 0], n, nearest);
    let mut out: CudaSlice<f32> = s.clone_htod(&vec![f32::NAN; n])?;
    reduce_scatter_finish(rt, s, &d_recv, &d_input, &mut out)?;
    checks.push(compare(
        "reduce_scatter_finish",
        &want[0],
        &HostBuffer::F32(s.clone_dtoh(&out)?),
    ));
    let mut acc: CudaSlice<f32> = s.clone_htod(&vec![f32::NAN; n])?;
    accumulate_peer(rt, s, &d_recv, &d_input, &mut acc)?;
    checks.push(compare(
        "accumulate_peer",
        &want[0],
        &HostBuffer::F32(s.clone_dtoh(&acc)?),
    ));

    let want = reference::reduce_copy(&f32_spec, &[&recv32, &input], &[0, 0], n, nearest);
    let mut out: CudaSlice<f32> = s.clone_htod(&vec![f32::NAN; n])?;
    reduce_f32(rt, s, &d_recv32, &d_input, &mut out)?;
    checks.push(compare(
        "reduce_f32",
        &want[0],
        &HostBuffer::F32(s.clone_dtoh(&out)?),
    ));
    // The specs checked above are the ones the functions registered.
    for (check, spec) in checks
        .iter()
        .zip([&sr_spec, &finish_spec, &finish_spec, &f32_spec])
    {
        let registered = redjit::registered()
            .find(|r| r.function().ends_with(&format!("::{}", check.function)))
            .ok_or_else(|| format!("{} is not registered", check.function))?;
        if registered.spec() != spec {
            return Err(format!(
                "{} registered {}, expected {}",
                check.function,
                registered.name(),
                spec.name()
            )
            .into());
        }
    }
    Ok(checks)
}
