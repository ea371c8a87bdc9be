//! Monomorphisation: one instance of each polymorphic helper per argument-type tuple. (Stub.)

use crate::diag::Diagnostic;
use crate::front::tast::Program;

pub fn monomorphise(program: Program) -> Result<Program, Vec<Diagnostic>> {
    Ok(program)
}
