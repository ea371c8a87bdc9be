//! The runtime's integration tests, one binary (one link step): a module per backend or concern.

mod cpu_kernels;
mod cpu_native;
mod cuda_cache;
mod interp_aggregates;
mod interp_e2e;
mod interp_faults;
mod interp_kernels;
mod interp_scalar_ops;
mod opencl_corpus;
mod opencl_run;
mod vulkan_corpus;
mod vulkan_device;
mod vulkan_math;
mod vulkan_params;
mod vulkan_refusals;
mod wgpu_corpus;
mod wgpu_run;
