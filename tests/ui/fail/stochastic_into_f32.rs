use redjit::half::bf16;

#[redjit::reduce_copy(rounding = stochastic)]
fn step(a: &[bf16], b: &[f32], out: &mut [f32]);

fn main() {}
