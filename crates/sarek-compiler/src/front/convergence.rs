//! Convergence check: barriers and warp collectives only under uniform control flow. (Stub.)

use crate::diag::Diagnostic;
use crate::front::tast::Program;

pub fn check(_program: &Program) -> Result<(), Vec<Diagnostic>> {
    Ok(())
}
