//! Facts about one GPU, read once when a runtime starts: what the launchers
//! plan with and what picks the device's tuning table.

use redjit_codegen::Arch;

/// Facts about the GPU a runtime drives.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// The device's ordinal.
    pub ordinal: usize,
    /// Its name as the driver reports it (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// Its compute capability.
    pub arch: Arch,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache size.
    pub l2_bytes: u64,
    /// The most shared memory a block may take once it asks for it
    /// (`cuFuncSetAttribute`): 227 KiB on sm_90.
    pub max_shared_per_block: u64,
    /// Device memory.
    pub total_mem: u64,
    /// The driver's CUDA version as `cuDriverGetVersion` reports it (13000 for 13.0).
    pub driver_version: i32,
    /// Whether kernels are launched cooperatively where a launcher asks for it
    /// (`CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH`, unless
    /// [`RuntimeOptions::no_cooperative_launch`](crate::RuntimeOptions::no_cooperative_launch)).
    pub cooperative_launch: bool,
}
