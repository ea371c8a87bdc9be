//! Target generators, one folder per target. The C-family targets (OpenCL C, CUDA C, Metal)
//! share one emitter parameterised by a dialect.

pub mod cfamily;
pub mod glsl;
pub mod loops;
pub mod names;
pub mod ptx;
pub mod support;
pub mod wgsl;

use std::borrow::Cow;

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::ir::analysis::Needs;
use crate::target::{Generated, Target, TargetOptions};

/// What every target's generation of one kernel starts from: the kernel after the
/// target-independent passes the options ask for ([`crate::passes::for_target`]) and what
/// it needs ([`Needs::of`]). Computed once when one kernel is written for several targets.
pub struct Prepared<'k> {
    pub kernel: Cow<'k, Kernel>,
    pub needs: Needs,
}

impl<'k> Prepared<'k> {
    pub fn new(kernel: &'k Kernel, options: &TargetOptions) -> Self {
        let kernel = crate::passes::for_target(kernel, options);
        let needs = Needs::of(&kernel);
        Prepared { kernel, needs }
    }
}

/// Dispatch to the generator for `target`. `Target::Ir` returns the IR printer's output.
pub fn generate(
    kernel: &Kernel,
    target: Target,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    if target == Target::Ir {
        return generate_prepared(kernel, None, target, options);
    }
    if let Some(d) = crate::ir::specialize::unspecialized(kernel, target.display_name()) {
        return Err(vec![d]);
    }
    generate_prepared(
        kernel,
        Some(&Prepared::new(kernel, options)),
        target,
        options,
    )
}

/// [`generate`] for each of `targets`, in order, sharing the work that does not depend on
/// the target ([`Prepared`]).
pub fn generate_many(
    kernel: &Kernel,
    targets: &[Target],
    options: &TargetOptions,
) -> Vec<Result<Generated, Vec<Diagnostic>>> {
    let mut prepared = None;
    targets
        .iter()
        .map(|&target| {
            if target == Target::Ir {
                return generate_prepared(kernel, None, target, options);
            }
            if let Some(d) = crate::ir::specialize::unspecialized(kernel, target.display_name()) {
                return Err(vec![d]);
            }
            let p = prepared.get_or_insert_with(|| Prepared::new(kernel, options));
            generate_prepared(kernel, Some(p), target, options)
        })
        .collect()
}

/// The generator for `target` from `prepared` (`None` only for `Target::Ir`).
fn generate_prepared(
    kernel: &Kernel,
    prepared: Option<&Prepared<'_>>,
    target: Target,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    let Some(p) = prepared.filter(|_| target != Target::Ir) else {
        return Ok(Generated {
            source: crate::ir::print::print_kernel(kernel),
            abi: crate::abi::Abi {
                entry_point: kernel.name.clone(),
                params: Vec::new(),
                uniform_size: None,
                uniform_binding: None,
                block_size_in_source: false,
                trap_status: None,
            },
        });
    };
    match target {
        Target::Ir => unreachable!("the IR printout is handled above"),
        Target::Wgsl => wgsl::generate_prepared(p, options),
        Target::Glsl => glsl::generate_prepared(p, options, glsl::Warps::Native),
        Target::OpenCl => cfamily::generate_prepared(p, cfamily::Dialect::OpenCl, options),
        Target::Cuda => cfamily::generate_prepared(p, cfamily::Dialect::Cuda, options),
        Target::Metal => cfamily::generate_prepared(p, cfamily::Dialect::Metal, options),
        Target::Ptx => ptx::generate_prepared(p, options),
    }
}
