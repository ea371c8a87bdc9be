//! Recursion: tail calls to loops, bounded inlining of `[@sarek.inline N]` helpers. (Stub.)

use crate::diag::Diagnostic;
use crate::front::tast::Program;

pub fn eliminate(program: Program) -> Result<Program, Vec<Diagnostic>> {
    Ok(program)
}
