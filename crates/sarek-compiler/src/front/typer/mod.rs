//! Type checker: AST to the typed program ([`crate::front::tast`]). (Stub.)

use crate::diag::Diagnostic;
use crate::front::{ast, tast};

/// Type-check a whole file; every independent error is reported.
pub fn check_program(_program: &ast::Program) -> Result<tast::Program, Vec<Diagnostic>> {
    Err(unimplemented("the type checker"))
}

fn unimplemented(what: &str) -> Vec<crate::diag::Diagnostic> {
    vec![crate::diag::Diagnostic::error(crate::diag::Span::DUMMY, format!("{what} is not implemented yet"))]
}
