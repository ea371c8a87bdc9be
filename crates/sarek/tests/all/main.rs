//! The facade's integration tests, one binary (one link step): a module per concern.
//! `tests/resident.rs` stays a binary of its own: it counts a device's transfers, and other
//! tests' launches on the shared devices would count too. The deliberate traps of `traps` and
//! `checked_faults` live here since each launch owns its trap status.

mod api;
mod api_hostile;
mod checked_faults;
mod cli;
mod cli_args;
mod conformance;
mod corpus;
mod fusion;
mod hostile;
mod loop_bounds;
mod loop_budget;
mod loop_steps;
mod macros;
mod npy_numpy;
mod partial_warps;
mod traps;
mod upstream;

use sarek::{Backend, Device};
use std::sync::Arc;

/// Interp, cpu and the GPU backends testable without a GPU.
const BACKENDS: [Backend; 5] = [
    Backend::Interp,
    Backend::Cpu,
    Backend::Wgpu,
    Backend::Vulkan,
    Backend::OpenCl,
];

/// The device of `backend`, or `None` (skipped, said on stderr) where it is unavailable and
/// not required (`SAREK_REQUIRE_BACKENDS`).
fn device(backend: Backend) -> Option<Arc<dyn Device>> {
    match sarek::open(backend) {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(
                !sarek_testkit::backends::required(backend.name()),
                "{backend} is required but unavailable: {e}"
            );
            eprintln!("skipping {backend}: {e}");
            None
        }
    }
}
