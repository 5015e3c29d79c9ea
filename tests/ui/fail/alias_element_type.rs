// A `bf16` that is not half::bf16 is caught where the macro checks the types.
#[allow(non_camel_case_types)]
type bf16 = f32;

#[redjit::reduce_copy(unroll = 4)]
fn step(a: &[bf16], b: &[f32], out: &mut [bf16]);

fn main() {}
