//! Prints the CUDA source of one reduce_copy kernel: `cargo run --example print_source -- <name>`.
use redjit_codegen::{KernelSpec, ReduceCopySpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| ReduceCopySpec::default().name());
    let spec: ReduceCopySpec = name.parse()?;
    print!("{}", spec.render()?.code);
    Ok(())
}
