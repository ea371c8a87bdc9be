//! The WGSL generator (seed 002).
//!
//! `generate` is a pure function of the kernel: each step below returns a value the next one
//! reads, and the `writer::Writer` carrying per-generation state is created and consumed
//! inside one call, so generations on several threads cannot see each other.
//!
//! 0. [`crate::ir::analysis::check`] against [`super::support::wgsl`]: the refusals (64-bit
//!    scalars, aggregate equality, warp operations without subgroups, nesting past naga's
//!    limits); then legalize's renames ([`crate::passes::legalize::renames_in`], seed 000;
//!    kernel parameters are module-scope names);
//! 2. [`crate::passes::specialize_helpers`] (storage buffers cannot be passed to WGSL
//!    functions), which sets the renamed names in its copy of the kernel, then `usage`: atomic arrays, shared arrays, helpers in the order called;
//! 3. `names`: every WGSL name, from the one namer ([`crate::back::names::Namer`]);
//! 4. `abi`: bindings and `Params` uniform fields, from which both the declarations and the
//!    ABI descriptor are built;
//! 5. `writer`: the module text.
//!
//! Semantics worth knowing (each is commented where it is emitted):
//! - integer `/` and `mod` are total in WGSL: `x / 0 = x`, `x mod 0 = 0`, `min_int / -1 =
//!   min_int`, `min_int mod -1 = 0` (the interpreter faults instead); shift counts are taken
//!   modulo 32; `lsr` is a `u32` shift through `bitcast`, `asr` the `i32` shift;
//! - float `mod` is C `fmod`, exact, through `sarek_fmod`; `round` rounds half away from zero;
//!   `asin`/`acos` are spelled through `atan2`, as WGSL defines their accuracy;
//! - a block barrier is `storageBarrier(); workgroupBarrier();` (global and shared memory, as
//!   CUDA's `__syncthreads`); a fence is the barrier of its scope where the whole workgroup
//!   reaches it and is dropped (with a comment) under thread-dependent control flow, since WGSL
//!   has no fence and a non-uniform barrier is undefined;
//! - warp operations are subgroup built-ins; the runtime enables them only on 32-lane subgroups;
//! - atomics: an array used atomically anywhere is `array<atomic<i32>>` (`atomic<u32>` holding
//!   float32 bits), plain accesses become `atomicLoad`/`atomicStore`, float32 operations and
//!   `atomic_cas` are compare-exchange loops (WGSL's exchange is weak and may fail spuriously);
//! - bools in storage are `u32` (host-shareable mirror structs for records and variants);
//! - `select()` serves value-position `if` on scalars; aggregates go through a tiny function.
//!
//! The block size is a pipeline-overridable constant (`override sarek_block_x` ...), so one
//! module serves every block size: `Abi::block_size_in_source` is false and the runtime passes
//! the block size as pipeline constants.

mod abi;
pub mod keywords;
mod names;
mod usage;
mod writer;

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::ir::analysis::{self, Feature};
use crate::passes::legalize::renames_in;
use crate::target::{Generated, TargetOptions};

/// Generate a WGSL compute module and its ABI descriptor for `kernel`.
pub fn generate(kernel: &Kernel, options: &TargetOptions) -> Result<Generated, Vec<Diagnostic>> {
    generate_prepared(&super::Prepared::new(kernel, options), options)
}

/// [`generate`] from the target-independent preparation several targets share.
pub fn generate_prepared(
    prepared: &super::Prepared<'_>,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    let kernel = &*prepared.kernel;
    let needs = &prepared.needs;
    analysis::accept(needs, &super::support::wgsl(options))?;
    let subgroups = !needs.uses(Feature::Subgroups).is_empty();
    // Seed 000: kernel parameters are module-scope names (buffers, `params` members) that keep
    // their names; other binders that are not identifiers, are reserved or redeclare a visible
    // name are renamed. The names that stay are escaped by `names`.
    let renames = renames_in(kernel, prepared.module_scoping(), &keywords::KEYWORDS);
    // Helpers cannot take buffers or workgroup arrays: one copy per call shape (see `usage`),
    // made with legalize's names.
    let spec = crate::passes::specialize_helpers::specialize_renamed(kernel, renames);
    let kernel = &*spec.kernel;
    debug_assert_eq!(
        crate::ir::validate::validate(kernel),
        Ok(()),
        "specialisation produced invalid IR"
    );
    let usage = usage::analyse(kernel)?;
    let names = names::Names::new(&spec, &usage);
    let bindings = abi::Bindings::new(kernel, &names);
    let source = writer::Writer::new(kernel, &names, &usage, &bindings, subgroups).write()?;
    Ok(Generated {
        source,
        abi: bindings.abi(kernel, &names),
    })
}
