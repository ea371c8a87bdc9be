//! The facade's integration tests, one binary (one link step): a module per concern.

mod api;
mod checked_faults;
mod cli;
mod cli_args;
mod conformance;
mod corpus;
mod fusion;
mod loop_bounds;
mod macros;
mod npy_numpy;
mod resident;
mod traps;
mod upstream;
