//! The example's registered kernels: exactly its three specs, the CUDA source
//! they render to (a snapshot), their NVRTC compile (CPU), and the GPU run.

use std::collections::BTreeSet;

use redjit::cudarc::driver::{CudaSlice, CudaStream};
use redjit::half::bf16;
use redjit::{KernelSpec, Result, Runtime, Stochastic};
use redjit_example_collectives as example;

/// Takes each launcher as a function pointer of the signature the macro must
/// generate, which also makes the linker keep the functions (and with them
/// their registrations) in this test binary.
#[test]
fn launchers_have_the_documented_signatures() {
    type Sr = fn(
        &Runtime,
        &CudaStream,
        &CudaSlice<bf16>,
        &CudaSlice<f32>,
        &mut CudaSlice<bf16>,
        Stochastic,
    ) -> Result<()>;
    type Rn<A> = fn(
        &Runtime,
        &CudaStream,
        &CudaSlice<A>,
        &CudaSlice<f32>,
        &mut CudaSlice<f32>,
    ) -> Result<()>;
    let _: Sr = example::reduce_scatter_quantize;
    let _: Rn<bf16> = example::reduce_scatter_finish;
    let _: Rn<f32> = example::reduce_f32;
    let _: Rn<bf16> = example::accumulate_peer;
}

#[test]
fn the_registered_set_is_exactly_the_three_specs() {
    let functions: BTreeSet<&str> = redjit::registered().map(|r| r.function()).collect();
    let expected: BTreeSet<String> = [
        "reduce_scatter_quantize",
        "reduce_scatter_finish",
        "reduce_f32",
        "accumulate_peer",
    ]
    .iter()
    .map(|f| format!("redjit_example_collectives::{f}"))
    .collect();
    assert_eq!(
        functions,
        expected.iter().map(String::as_str).collect::<BTreeSet<_>>()
    );
    // One entry per function, none twice.
    assert_eq!(redjit::registered().count(), 4);

    let names: Vec<String> = redjit::registered_specs()
        .iter()
        .map(|s| s.name())
        .collect();
    let mut want: Vec<String> = example::KERNELS.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want, "two functions share a spec: three kernels");

    for r in redjit::registered() {
        // The name the macro derived at compile time is the runtime's name of the spec.
        assert_eq!(r.name(), r.spec().name(), "{}", r.function());
        r.spec().validate().unwrap();
    }
}
