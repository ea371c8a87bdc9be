//! The C-family generator (OpenCL C, CUDA C, Metal), one emitter parameterised by a dialect. (Stub.)

use crate::diag::Diagnostic;
use crate::ir::Kernel;
use crate::target::{Generated, TargetOptions};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    OpenCl,
    Cuda,
    Metal,
}

pub fn generate(_kernel: &Kernel, _dialect: Dialect, _options: &TargetOptions) -> Result<Generated, Vec<Diagnostic>> {
    Err(unimplemented("the C-family generator"))
}

fn unimplemented(what: &str) -> Vec<crate::diag::Diagnostic> {
    vec![crate::diag::Diagnostic::error(crate::diag::Span::DUMMY, format!("{what} is not implemented yet"))]
}
