//! The IR optimisation stage: small passes, each a function from a kernel to a kernel that
//! keeps `ir::validate` green and the interpreter's results bit for bit (integer wrapping,
//! truncating division, float operations never reassociated or contracted).
//!
//! It runs before generators whose target compiler does not already do this work on our
//! output: PTX, which `ptxas` assembles with little high-level optimisation (a division by
//! a constant in a register stays a software division), and the compiled CPU backend. The
//! C-family, GLSL and WGSL generators leave it to NVRTC, clang, glslang and naga's consumers;
//! the C family takes only [`shift_guarded_divisions`], the one rewrite nvcc misses.
//!
//! Order: fold constants, then propagate literal-bound variables and fold again until
//! nothing changes (bounded), then unroll the constant loops the kernel asks to unroll and
//! fold their now-constant indices, then strength-reduce divisions by constants, then fold
//! the shifts and masks that produced when their operands were constant; last, the motions
//! across loop boundaries ptxas does not make: `while` loops with a constant trip count
//! unrolled completely ([`unroll_constant_trip_loops`]), values a `while` condition shares with its
//! body carried over the back edge ([`reuse_loop_conditions`]), counted `while` loops
//! unrolled by four or eight ([`unroll_counted_loops`]), then loop-invariant values hoisted before
//! their loop ([`hoist_invariants`]).

mod constprop;
mod contract;
mod cse;
mod divconst;
mod licm;
mod unroll;
mod unroll_while;
mod walk;

pub use constprop::propagate_constants;
pub use contract::contract_fma;
pub use cse::reuse_loop_conditions;
pub use divconst::{reduce_division, shift_guarded_divisions};
pub use licm::hoist_invariants;
pub use unroll::unroll_constant_loops;
pub use unroll_while::{unroll_constant_trip_loops, unroll_counted_loops};

use crate::ir::Kernel;
use crate::passes::constfold::{fold_constants, fold_in_place};

/// How many propagate-then-fold rounds run at most (each round exposes the constants the
/// previous fold produced; real kernels settle in two).
const MAX_PROPAGATION_ROUNDS: usize = 8;

/// Every optimisation pass, in order, on a copy of `kernel`.
pub fn optimize(kernel: &Kernel) -> Kernel {
    optimize_folded(fold_constants(kernel))
}

/// [`optimize`] of a kernel whose constants are already folded
/// ([`crate::passes::constfold::fold_constants`]).
pub fn optimize_folded(mut k: Kernel) -> Kernel {
    for _ in 0..MAX_PROPAGATION_ROUNDS {
        if !propagate_constants(&mut k) {
            break;
        }
        fold_in_place(&mut k);
    }
    if unroll_constant_loops(&mut k) {
        fold_in_place(&mut k);
    }
    if reduce_division(&mut k) {
        fold_in_place(&mut k);
    }
    if unroll_constant_trip_loops(&mut k) {
        fold_in_place(&mut k);
    }
    reuse_loop_conditions(&mut k);
    unroll_counted_loops(&mut k);
    hoist_invariants(&mut k);
    k
}
