//! Random-kernel differential testing for Sarek.
//!
//! [`generator`] writes random well-typed, terminating kernels as source text from LANGUAGE.md;
//! [`runner`] puts each through `check`, every generator with its real validator
//! ([`validate`]) and every backend compared with `interp`; [`shrink`] reduces a failing
//! kernel to a small one that fails the same way. The `sarek-difftest` binary drives it
//! (docs/difftest.md). All calls into the Sarek library go through [`exec`], so a change of
//! the runtime API touches that module only.

pub mod exec;
pub mod generator;
pub mod runner;
pub mod shrink;
pub mod tree;
pub mod validate;
