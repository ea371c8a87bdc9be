//! PTX generator: the IR straight to NVIDIA's virtual ISA, JIT-compiled by the CUDA driver.
//!
//! Design, in brief:
//! - Every value is a list of virtual registers, one per scalar leaf of its type
//!   ([`crate::abi::leaves`]): records, tuples and variants live in registers, never in memory,
//!   and `ptxas` allocates the physical registers. Mutable variables are registers reassigned.
//! - Memory (vectors, shared and local arrays) holds elements in the C layout
//!   (`LayoutRules::C`, bool as one byte), so the CUDA C and PTX targets share an ABI shape.
//! - Helpers are inlined at each call (the IR has no recursion left); `Return` assigns the
//!   result registers and branches to the end of the inlined body. A helper whose inlined
//!   copies would grow the module (bounded recursion calling the next level twice) is written
//!   once as a `.func` and called, arguments and result in `.param` space. No user identifier reaches
//!   the output (registers, labels and symbols are numbered), so no legalize pass is needed;
//!   only the entry point name is escaped ([`crate::back::names::Namer::escape`]).
//! - Shaped for `ptxas`, which optimises less than NVRTC's front end: the IR optimisation
//!   stage runs first (constants propagated, divisions by powers of two as shifts, values a
//!   `while` condition shares with its body carried across the back edge, counted `while`
//!   loops unrolled, loop invariants hoisted); integer literals are immediates; shared memory
//!   is addressed in 32 bits with a constant index term as the `[reg+imm]` offset (ptxas
//!   merges neighbouring accesses into `LDS.64`/`LDS.128` itself); `&&`/`||` whose right
//!   operand cannot fault become predicate instructions; loops are tested at the bottom
//!   (`for`: after the step, against `end + step`).
//! - Float `add/sub/mul/div` carry `.rn`, which forbids FMA contraction: results match the
//!   interpreter bit for bit. Transcendentals use the `.approx` instructions (documented
//!   tolerance); float `mod` (exact) and the float64 functions PTX has no instruction for are
//!   software routines ([`crate::back::softmath`]), each written once per kernel as a `.func`, so no math
//!   function is refused.

pub mod keywords;

mod writer;

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::target::{Generated, TargetOptions};

pub use writer::PTX_LAYOUT;

/// Generate a PTX module with one `.entry` for `kernel`, after the IR optimisation stage
/// ([`crate::passes::opt`]: ptxas does not strength-reduce or propagate for us).
pub fn generate(kernel: &Kernel, options: &TargetOptions) -> Result<Generated, Vec<Diagnostic>> {
    generate_taking_folded(&mut super::Prepared::new(kernel, options), options)
}

/// [`generate`] from the target-independent preparation several targets share.
pub fn generate_prepared(
    prepared: &super::Prepared<'_>,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    crate::ir::analysis::accept(&prepared.needs, &super::support::ptx())?;
    write_optimized(prepared.folded().clone(), options)
}

/// [`generate_prepared`] by the last target to use `prepared`'s folded kernel: the optimiser
/// rewrites it in place instead of a copy.
pub fn generate_taking_folded(
    prepared: &mut super::Prepared<'_>,
    options: &TargetOptions,
) -> Result<Generated, Vec<Diagnostic>> {
    crate::ir::analysis::accept(&prepared.needs, &super::support::ptx())?;
    write_optimized(prepared.take_folded(), options)
}

fn write_optimized(folded: Kernel, options: &TargetOptions) -> Result<Generated, Vec<Diagnostic>> {
    let kernel = crate::passes::opt::optimize_folded(folded);
    writer::Writer::new(&kernel, options).finish()
}
