#[redjit::reduce_copy(unroll = 4)]
fn step(a: &[f64], b: &[f32], out: &mut [f32]);

fn main() {}
