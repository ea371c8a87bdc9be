//! The C-family generator: OpenCL C 1.2, CUDA C, Metal and HIP from one emitter.
//!
//! The languages share C's statements, expressions and structs; they differ in qualifiers,
//! address spaces, kernel parameters, geometry, warp operations, atomics, built-in names and
//! capabilities. Each dialect's file in `dialect/` answers those questions (the `Rules`
//! trait) and `writer::Writer` does everything else without matching on the dialect, so a fix
//! lands in all of them and a new dialect is one file. HIP is a library dialect (validated by
//! hipcc in the tests): it has no `--target` spelling and no runtime backend.
//!
//! Design decisions, the same on every dialect:
//! - `legalize` (seed 000) decides first, with the dialect's reserved words ([`keywords`]),
//!   which binders are renamed; the writer takes those renames into its table of names
//!   (`legalize::renames_in`), so the kernel is not copied. Kernel parameters are renamable
//!   (arguments are bound by position). The
//!   writer's own names (types, fields, constructors, lengths, helpers) come from the one
//!   namer ([`crate::back::names::Namer::claim`]).
//! - Kernel arguments, in parameter order: a vector is a global pointer followed by its `int`
//!   length; scalars, records and variants are passed by value (Metal: `constant T&`), each
//!   one [`ArgSlot::Argument`](crate::abi::ArgSlot) (Metal: one `[[buffer(n)]]` each).
//! - Records and `_tup_*` tuples are typedef'd structs with a `new_*` constructor function (CUDA reserves `make_*`);
//!   a variant is `struct { int tag; every constructor's payload fields flattened }` (the
//!   [`abi::elem_layout`](crate::abi::elem_layout) layout under [`writer::LAYOUT`]), built by
//!   one `new_<variant>_<Ctor>` function per constructor that zeroes inactive fields.
//! - `bool` in memory (buffers, struct members, kernel arguments) is a 32-bit `int` 0/1:
//!   OpenCL forbids `bool` there. Locals and helper parameters are real `bool`s.
//! - `match` is an `if` chain on the tag (a `switch` would capture a loop's `break`).
//! - Helpers take vectors and arrays as pointers in the right address space plus a length.
//!   Shared arrays are hoisted to kernel scope (OpenCL and Metal demand it).
//!
//! Arithmetic semantics:
//! - Signed `+ - *`, negation and `lsl` go through the unsigned type, since signed overflow is
//!   undefined in C and the language wraps; `lsr` shifts the unsigned type. The exception is
//!   an operation marked `nowrap` by [`crate::passes::loop_step`] (a counted loop's step
//!   proven not to overflow): plain signed arithmetic, so the C compiler can count trips
//!   and unroll.
//! - CUDA spells `(-x) asr n` as `~((x - 1) asr n)`: ptxas 13.0 folds a negation under an
//!   arithmetic shift into a `LEA.HI.SX32` that is off by one for odd negative `x`, and
//!   `~x + 1` reaches it as the same negation.
//! - Integer `/` and `mod` are C's (truncating, remainder with the dividend's sign), which is
//!   the language's. Division by zero (and `min_int / -1`) is undefined behaviour in C: the
//!   interpreter reports it as a fault, a GPU returns an unspecified value and PoCL on a CPU
//!   may trap. Float `mod` is `fmod`.
//! - Float to int conversion truncates, saturates and maps NaN to 0, like the interpreter,
//!   through a generated helper on every dialect: NVIDIA's OpenCL `convert_<int>_sat_rtz` and
//!   `cvt.rzi` give min_int for NaN from float64 or into int64.
//!
//! Floating-point contraction (results must match the interpreter, which rounds every
//! operation once):
//! - OpenCL: `#pragma OPENCL FP_CONTRACT OFF` in the source; the runtime also builds with
//!   `-cl-fp32-correctly-rounded-divide-sqrt` where the device supports it. Built-in math
//!   functions keep the OpenCL spec's ulp bounds (e.g. `sin` 4 ulp, `exp` 3 ulp).
//! - CUDA: the runtime compiles with NVRTC `--fmad=false` (no FMA contraction) and the
//!   defaults `--prec-div=true --prec-sqrt=true`; math functions have CUDA's documented ulp
//!   bounds (`sinf` 2 ulp, `expf` 2 ulp, `powf` 4 ulp).
//! - Metal: the source cannot turn fast math off; a host must compile with
//!   `MTLMathModeSafe` (not run in this project).
//! - HIP: `#pragma clang fp contract(off)` in the source (hipcc and hiprtc contract by default).
//!
//! Refusals are decided before writing by [`crate::ir::analysis`] against
//! [`super::support`]: float64 on Metal or on an OpenCL device without `cl_khr_fp64`; int64
//! atomics on Metal or an OpenCL device without the `cl_khr_int64_*_atomics` extensions; warp
//! operations on an OpenCL device without subgroups; shared arrays inside helpers on OpenCL
//! and Metal; CUDA's shared-memory and parameter-space limits; HIP's shared-memory limit.
//! Each dialect declares its support (`Rules::support`).

mod dialect;
pub mod keywords;
mod writer;

pub use dialect::Dialect;
pub use writer::LAYOUT;

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::passes::legalize::renames_in;
use crate::target::{Generated, TargetOptions};

/// Generate `dialect` source and its ABI for one kernel.
pub fn generate(
    kernel: &Kernel,
    dialect: Dialect,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    generate_prepared(&super::Prepared::new(kernel, options), dialect, options)
}

/// [`generate`] from the target-independent preparation several targets share.
pub fn generate_prepared(
    prepared: &super::Prepared<'_>,
    dialect: Dialect,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    let kernel = &*prepared.kernel;
    let rules = dialect.rules();
    crate::ir::analysis::accept(&prepared.needs, &rules.support(options))?;
    // Loop steps marked (issue 14) once for the three dialects, with legalize's scoping.
    let (stepped, scoping) = prepared.c_family();
    // Legalize's renames go to the writer's table of names: the kernel is not copied.
    let renames = renames_in(stepped, scoping, rules.keywords());
    writer::Writer::new(stepped, rules, renames).finish(kernel)
}
