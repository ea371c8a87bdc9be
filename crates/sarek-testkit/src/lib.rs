//! What the workspace's tests (and benches) share, as a dev-dependency of every crate: the
//! test folders ([`files`]), the library of hand-built IR kernels ([`ir_kernels`], with the
//! interpreter tests' builder and classic kernels in [`interp`]), and the one policy for a
//! backend or tool that is absent ([`backends`]). GPU-free: the runtime without its GPU
//! features.

pub mod backends;
pub mod files;
pub mod interp;
pub mod ir_kernels;
