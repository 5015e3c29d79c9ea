//! The example's registered kernels: exactly its three specs, the CUDA source
//! they render to (a snapshot), their NVRTC compile (CPU), and the GPU run.

use std::collections::BTreeSet;
use std::sync::Arc;

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
        &Arc<CudaStream>,
        &CudaSlice<bf16>,
        &CudaSlice<f32>,
        &mut CudaSlice<bf16>,
        Stochastic,
    ) -> Result<()>;
    type Rn<A> = fn(
        &Runtime,
        &Arc<CudaStream>,
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

/// The CUDA source of the registered set, as `prepare_registered` compiles it
/// (one program; reviewed like code, in the top-level `snapshots/`).
#[test]
fn source_of_the_registered_set() {
    let specs = redjit::registered_specs();
    let members: Vec<&dyn KernelSpec> = specs.iter().map(|s| s as &dyn KernelSpec).collect();
    let src = redjit::codegen::render_batch(&members).unwrap();
    for s in &specs {
        assert!(
            src.code.contains(&format!("{}(", s.name())),
            "{} is not in the source",
            s.name()
        );
    }
    assert!(!src.code.contains("#include"));
    insta::with_settings!({
        snapshot_path => "../../../snapshots",
        prepend_module_to_snapshot => false,
        omit_expression => true,
    }, {
        insta::assert_snapshot!("macro_example_registered.cu", src.code);
    });
}

/// NVRTC compiles the registered set for sm_90 here, without a GPU (skipped
/// without NVRTC unless REDJIT_REQUIRE_NVRTC=1, as scripts/test.sh sets).
#[test]
fn the_registered_set_compiles_with_nvrtc() {
    if let Err(e) = redjit::Nvrtc::load() {
        if std::env::var("REDJIT_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("REDJIT_REQUIRE_NVRTC=1 but {e}");
        }
        eprintln!("skipping: {e}");
        return;
    }
    let jit = redjit::Jit::new(redjit::Arch::SM90, redjit::CompileCache::in_memory());
    let specs = redjit::registered_specs();
    let t0 = std::time::Instant::now();
    let compiled: Vec<_> = jit
        .compile_all(&specs)
        .into_iter()
        .collect::<Result<_>>()
        .unwrap();
    eprintln!(
        "NVRTC: the {} registered kernels in {:.1} ms (CPU, sm_90, one program)",
        compiled.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(compiled.len(), 3);
    for (c, s) in compiled.iter().zip(&specs) {
        assert_eq!(c.name, s.name());
        assert!(!c.artifact.bytes.is_empty());
    }
}

/// The example's functions on the GPU against the CPU twin, bit for bit, before
/// and after `prepare_registered` (the first calls compile lazily).
#[test]
#[ignore = "needs a CUDA GPU"]
fn runs_on_the_gpu_against_the_cpu_twin() {
    let rt = match Runtime::new(0) {
        Ok(rt) => rt,
        Err(e) if std::env::var("REDJIT_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("REDJIT_REQUIRE_GPU=1 but {e}")
        }
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    eprintln!("seed {seed}");
    // Before prepare: each launcher compiles its kernel on first call.
    for n in [1, 31, 4099] {
        for c in example::run_checks(&rt, n, seed).unwrap() {
            assert_eq!(c.mismatches, 0, "{c:?}");
        }
    }
    let report = redjit::prepare_registered(&rt).unwrap();
    assert_eq!(report.kernels, 3);
    assert_eq!(
        report.compiled + report.from_disk,
        0,
        "all loaded lazily already"
    );
    for c in example::run_checks(&rt, (1 << 22) + 5, seed).unwrap() {
        assert_eq!(c.mismatches, 0, "{c:?}");
    }
}
