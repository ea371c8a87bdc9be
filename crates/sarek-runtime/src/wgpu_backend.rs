//! wgpu_backend backend. (Stub.)

use crate::device::{Backend, Device, RuntimeError};
use std::sync::Arc;

/// Open the best device of this backend, or say why it is unavailable.
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    Err(RuntimeError::Unavailable { backend: Backend::Wgpu, reason: "not implemented yet".into() })
}
