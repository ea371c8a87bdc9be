//! ptx generator. (Stub.)

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::target::{Generated, TargetOptions};

pub fn generate(_kernel: &Kernel, _options: &TargetOptions) -> Result<Generated, Vec<Diagnostic>> {
    Err(unimplemented("the ptx generator"))
}

fn unimplemented(what: &str) -> Vec<crate::diag::Diagnostic> {
    vec![crate::diag::Diagnostic::error(crate::diag::Span::DUMMY, format!("{what} is not implemented yet"))]
}
