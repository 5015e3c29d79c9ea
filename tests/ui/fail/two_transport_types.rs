use redjit::half::{bf16, f16};

#[redjit::reduce_copy(unroll = 4)]
fn step(a: &[bf16], b: &[f16], out: &mut [bf16]);

fn main() {}
