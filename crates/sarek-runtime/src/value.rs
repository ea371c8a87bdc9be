//! Host-side values: scalars, by-value aggregates and vectors stored as one column per leaf
//! (defined in [`sarek_compiler::host`], shared with the GPU-free crates).

pub use sarek_compiler::host::{ArgValue, Column, HostVector};
