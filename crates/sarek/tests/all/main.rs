//! The facade's integration tests, one binary (one link step): a module per concern.
//! `tests/traps.rs` and `tests/checked_faults.rs` stay binaries of their own while a device's
//! synchronisation reports every launch's trap status: their deliberate traps would be
//! reported to unrelated launches here on the same shared device. Fold them in once each
//! launch owns its trap status.

mod api;
mod cli;
mod cli_args;
mod conformance;
mod corpus;
mod fusion;
mod loop_bounds;
mod macros;
mod npy_numpy;
mod resident;
mod upstream;
