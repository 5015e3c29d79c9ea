use redjit::half::bf16;

#[redjit::reduce_copy(unroll = 4, op = mean)]
fn step(a: &[bf16], b: &[f32], out: &mut [bf16]);

fn main() {}
