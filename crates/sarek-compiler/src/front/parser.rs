//! Parser: tokens to the [`crate::front::ast`]. (Stub.)

use crate::diag::{Diagnostic, FileId};
use crate::front::ast::Program;

/// Parse one file. All syntax errors found are returned (with recovery where possible).
pub fn parse(_file: FileId, _source: &str) -> Result<Program, Vec<Diagnostic>> {
    Err(unimplemented("the parser"))
}

fn unimplemented(what: &str) -> Vec<crate::diag::Diagnostic> {
    vec![crate::diag::Diagnostic::error(crate::diag::Span::DUMMY, format!("{what} is not implemented yet"))]
}
