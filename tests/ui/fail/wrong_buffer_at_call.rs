// The launcher is typed: a buffer of another element type does not compile.
use redjit::half::bf16;

#[redjit::reduce_copy(unroll = 4)]
fn step(a: &[bf16], b: &[f32], out: &mut [bf16]);

fn run(rt: &redjit::Runtime) -> redjit::Result<()> {
    let s = rt.stream();
    let a = s.alloc_zeros::<f32>(16).unwrap();
    let b = s.alloc_zeros::<f32>(16).unwrap();
    let mut out = s.alloc_zeros::<bf16>(16).unwrap();
    step(rt, s, &a, &b, &mut out)
}

fn main() {
    let _ = run;
}
