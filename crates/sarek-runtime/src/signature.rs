//! Kernel signatures as the runtime checks them: each parameter's name, type and how a
//! launch passes it (defined in [`sarek_compiler::host`], shared with the GPU-free crates).

pub use sarek_compiler::host::{Param, ParamKind, signature, type_name};
