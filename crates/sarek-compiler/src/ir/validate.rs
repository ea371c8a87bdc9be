//! IR validator: every variable bound before use, types consistent, places assignable. (Stub.)

use crate::ir::Kernel;

/// A structural problem in a kernel (a compiler bug, not a user error).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid IR in kernel `{kernel}`: {message}")]
pub struct ValidationError {
    pub kernel: String,
    pub message: String,
}

pub fn validate(_kernel: &Kernel) -> Result<(), ValidationError> {
    Ok(())
}
