//! The facade's integration tests, one binary (one link step): a module per concern.
//! Three stay binaries of their own, because devices are shared within a process:
//! `tests/traps.rs` and `tests/checked_faults.rs` while a device's synchronisation reports
//! every launch's trap status (their deliberate traps would be reported to unrelated launches
//! here; fold them in once each launch owns its trap status), and `tests/resident.rs`, which
//! counts a device's transfers (other tests' launches would count too).

mod api;
mod cli;
mod cli_args;
mod conformance;
mod corpus;
mod fusion;
mod loop_bounds;
mod loop_budget;
mod loop_steps;
mod macros;
mod npy_numpy;
mod partial_warps;
mod upstream;
