// A rejected signature still defines `step`, so its callers raise no second error.
use redjit::half::bf16;
use redjit::Stochastic;

#[redjit::reduce_copy(unroll = 16, rounding = stochastic)]
fn step(a: &[bf16], b: &[f32], out: &mut [bf16]);

fn run(rt: &redjit::Runtime) -> redjit::Result<()> {
    let s = rt.stream();
    let a = s.alloc_zeros::<bf16>(16).unwrap();
    let b = s.alloc_zeros::<f32>(16).unwrap();
    let mut out = s.alloc_zeros::<bf16>(16).unwrap();
    step(rt, s, &a, &b, &mut out, Stochastic { seed: 1, base: 0 })
}

fn main() {
    let _ = run;
}
