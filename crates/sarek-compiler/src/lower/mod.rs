//! Lowering of the typed program to the IR (seed 003). (Stub.)

use crate::diag::Diagnostic;
use crate::front::tast::Program;
use crate::ir::Kernel;

/// Lower kernel `name` of `program` (with every helper it reaches).
pub fn lower_kernel(_program: &Program, _name: &str) -> Result<Kernel, Vec<Diagnostic>> {
    Err(unimplemented("lowering"))
}

fn unimplemented(what: &str) -> Vec<crate::diag::Diagnostic> {
    vec![crate::diag::Diagnostic::error(crate::diag::Span::DUMMY, format!("{what} is not implemented yet"))]
}
