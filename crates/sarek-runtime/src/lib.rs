//! The Sarek runtime: devices, host values, launches; the reference interpreter, the CPU
//! executor and one module per GPU API behind a cargo feature.

pub mod buffer;
pub mod capability;
pub mod cpu;
pub mod device;
pub mod discover;
pub mod harness;
pub mod interp;
pub mod limits;
pub mod npy;
pub mod value;

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "opencl")]
pub mod opencl;
#[cfg(feature = "vulkan")]
pub mod vulkan;
#[cfg(feature = "wgpu")]
pub mod wgpu_backend;

pub use device::{Backend, Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError};
pub use value::{ArgValue, Column, HostVector};
