//! Facade crate.
pub use sarek_compiler as compiler;
pub use sarek_runtime as runtime;
