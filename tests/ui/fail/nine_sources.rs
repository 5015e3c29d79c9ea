#[redjit::reduce_copy(unroll = 4)]
fn step(
    s0: &[f32],
    s1: &[f32],
    s2: &[f32],
    s3: &[f32],
    s4: &[f32],
    s5: &[f32],
    s6: &[f32],
    s7: &[f32],
    s8: &[f32],
    out: &mut [f32],
);

fn main() {}
