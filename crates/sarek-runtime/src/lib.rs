//! The Sarek runtime: devices, buffers, launches; the reference interpreter, the CPU
//! executor and one module per GPU API behind a cargo feature.
//!
//! Every backend implements one narrow interface ([`Device`]: build, alloc, upload,
//! download, dispatch, sync). What they share sits above it: the build cache and the
//! launches in flight ([`memory::DeviceCore`]), one binder ([`bind`]: ABI x arguments ->
//! launch plan), one packer ([`pack`]), the checked launch path ([`launch`]) and the buffers
//! a program holds across launches ([`buffer`]). docs/memory-model.md says when data moves.

pub mod access;
pub mod bind;
pub mod buffer;
pub mod capability;
pub mod cpu;
pub mod device;
pub mod discover;
pub mod foreign;
pub mod host;
pub mod interp;
pub mod kernel;
pub mod launch;
pub mod limits;
pub mod memory;
pub mod npy;
pub mod pack;
pub mod signature;
pub mod spirv;
pub mod value;

#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(feature = "opencl")]
pub mod opencl;
#[cfg(feature = "vulkan")]
pub mod vulkan;
#[cfg(feature = "wgpu")]
pub mod wgpu_backend;

pub use buffer::{AsDevice, Buffer, DeviceRef, DeviceVector, Element, Launch, Mirrored, Vector};
pub use device::{Backend, Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError};
pub use kernel::{BuildKey, KernelHandle, KernelId};
pub use launch::synchronize;
pub use memory::Transfers;
pub use value::{ArgValue, Column, HostVector};
