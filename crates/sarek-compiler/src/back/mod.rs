//! Target generators, one folder per target. The C-family targets (OpenCL C, CUDA C, Metal)
//! share one emitter parameterised by a dialect.

pub mod cfamily;
pub mod glsl;
pub mod names;
pub mod ptx;
pub mod support;
pub mod wgsl;

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::target::{Generated, Target, TargetOptions};

/// Dispatch to the generator for `target`. `Target::Ir` returns the IR printer's output.
pub fn generate(
    kernel: &Kernel,
    target: Target,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    if target != Target::Ir
        && let Some(d) = crate::ir::specialize::unspecialized(kernel, target.display_name())
    {
        return Err(vec![d]);
    }
    match target {
        Target::Ir => Ok(Generated {
            source: crate::ir::print::print_kernel(kernel),
            abi: crate::abi::Abi {
                entry_point: kernel.name.clone(),
                params: Vec::new(),
                uniform_size: None,
                uniform_binding: None,
                block_size_in_source: false,
                trap_status: None,
            },
        }),
        Target::Wgsl => wgsl::generate(kernel, options),
        Target::Glsl => glsl::generate(kernel, options),
        Target::OpenCl => cfamily::generate(kernel, cfamily::Dialect::OpenCl, options),
        Target::Cuda => cfamily::generate(kernel, cfamily::Dialect::Cuda, options),
        Target::Metal => cfamily::generate(kernel, cfamily::Dialect::Metal, options),
        Target::Ptx => ptx::generate(kernel, options),
    }
}
