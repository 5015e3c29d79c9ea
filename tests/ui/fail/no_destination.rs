use redjit::half::bf16;

#[redjit::reduce_copy(unroll = 4)]
fn step(a: &[bf16], b: &[f32]);

fn main() {}
