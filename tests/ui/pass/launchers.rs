// Every form of the attribute compiles to a launcher of the documented
// signature, and registers its kernel (checked here without a GPU).
use std::sync::Arc;

use redjit::cudarc::driver::{CudaSlice, CudaStream, CudaView, CudaViewMut};
use redjit::half::{bf16, f16};
use redjit::{Result, Runtime, Stochastic};

/// Docs stay on the launcher.
#[redjit::reduce_copy(unroll = 4, rounding = stochastic, read_only(input))]
pub fn quantize(recv: &[bf16], input: &[f32], send: &mut [bf16]);

#[redjit::reduce_copy(op = "premulsum", unroll = 8)]
fn scaled(a: &[half::f16], b: &[f16], out: &mut [f32], copy: &mut [f16]);

#[redjit::reduce_copy]
fn copy(a: &[f32], out: &mut [f32]);

mod nested {
    // Same kernel as `copy`: registered twice, one spec.
    #[redjit::reduce_copy(unroll = 4, op = sum, rounding = rn)]
    pub(crate) fn copy_again(x: &[f32], y: &mut [f32]);
}

/// Views and sub-slices are buffers too (a view's lifetime is named: a fn
/// pointer generic over it is more general than the launcher's instantiation).
fn views<'v>() {
    let _: fn(
        &Runtime,
        &Arc<CudaStream>,
        &CudaSlice<bf16>,
        &CudaView<'v, f32>,
        &mut CudaViewMut<'v, bf16>,
        Stochastic,
    ) -> Result<()> = quantize;
}

fn main() {
    views();
    let _: fn(
        &Runtime,
        &Arc<CudaStream>,
        &CudaSlice<f16>,
        &CudaSlice<f16>,
        &mut CudaSlice<f32>,
        &mut CudaSlice<f16>,
        f32,
    ) -> Result<()> = scaled;
    let _: fn(&Runtime, &Arc<CudaStream>, &CudaSlice<f32>, &mut CudaSlice<f32>) -> Result<()> = copy;
    let _: fn(&Runtime, &Arc<CudaStream>, &CudaSlice<f32>, &mut CudaSlice<f32>) -> Result<()> =
        nested::copy_again;

    // Paths start with the crate's name (trybuild's, here).
    let mut functions: Vec<&str> = redjit::registered()
        .map(|r| r.function().split_once("::").map_or("", |(_, path)| path))
        .collect();
    functions.sort();
    assert_eq!(
        functions,
        ["copy", "nested::copy_again", "quantize", "scaled"]
    );
    let names: Vec<String> = redjit::registered_specs()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "reduce_copy_u4_f32_bf16_A_A_sum_rn",
            "reduce_copy_u4_f32_bf16_Ta_T_sum_sr",
            "reduce_copy_u8_f32_f16_TT_AT_premulsum_rn",
        ]
    );
}
