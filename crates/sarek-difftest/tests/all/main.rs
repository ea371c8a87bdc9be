//! The differential tester's integration tests, one binary: a module per concern.

mod batch;
mod bounded;
mod findings;
mod generator;
