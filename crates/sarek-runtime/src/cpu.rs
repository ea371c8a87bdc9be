//! The `cpu` backend: the embedded default device, running blocks in parallel on all cores.
//!
//! Blocks are independent except through global memory and atomics, which the interpreter's
//! device memory already makes safe to share (every word is an `AtomicU64`; plain accesses are
//! relaxed loads and stores, atomics compare-and-swap loops), so blocks run on the rayon pool,
//! each pool thread reusing one block worker. Semantics are the interpreter's, faults included
//! (the reported fault is the one of the lowest-numbered faulting block among those run).
//!
//! The block executor sits behind [`BlockProgram`]: a compiled path replaces the interpreter's
//! SIMT core by implementing it, and keeps this driver.

use crate::device::{Device, LaunchConfig, LaunchStats, RuntimeError};
use crate::interp::{self, BlockWorker, Launch};
use crate::value::ArgValue;
use rayon::prelude::*;
use sarek_compiler::ir::Kernel;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Open the cpu device (always available): see [`crate::host`].
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    crate::host::open_cpu()
}

/// A kernel ready to run block by block; blocks may run concurrently, each with its own
/// worker state.
pub trait BlockProgram: Sync {
    type Worker: Send;
    fn blocks(&self) -> u64;
    fn block_index(&self, b: u64) -> [u32; 3];
    fn worker(&self) -> Self::Worker;
    fn run_block(&self, worker: &mut Self::Worker, block: [u32; 3]) -> Result<(), RuntimeError>;
}

impl BlockProgram for Launch {
    type Worker = BlockWorker;
    fn blocks(&self) -> u64 {
        Launch::blocks(self)
    }
    fn block_index(&self, b: u64) -> [u32; 3] {
        Launch::block_index(self, b)
    }
    fn worker(&self) -> BlockWorker {
        Launch::worker(self)
    }
    fn run_block(&self, worker: &mut BlockWorker, block: [u32; 3]) -> Result<(), RuntimeError> {
        Launch::run_block(self, worker, block)
    }
}

/// Run every block of `p` on the rayon pool. After a fault, blocks numbered above the
/// faulting one are skipped and the lowest-numbered fault found is returned.
pub fn run_parallel<P: BlockProgram>(p: &P) -> Result<(), RuntimeError> {
    let first_fault = AtomicU64::new(u64::MAX);
    let fault: Mutex<Option<(u64, RuntimeError)>> = Mutex::new(None);
    (0..p.blocks()).into_par_iter().for_each_init(
        || p.worker(),
        |w, b| {
            if b > first_fault.load(Ordering::Relaxed) {
                return;
            }
            if let Err(e) = p.run_block(w, p.block_index(b)) {
                first_fault.fetch_min(b, Ordering::Relaxed);
                let mut f = fault.lock().unwrap_or_else(|e| e.into_inner());
                if f.as_ref().is_none_or(|(fb, _)| b < *fb) {
                    *f = Some((b, e));
                }
            }
        },
    );
    match fault.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// Run `kernel` over `config` with blocks in parallel; vectors in `args` are updated in place.
pub fn run(
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
) -> Result<LaunchStats, RuntimeError> {
    interp::launch(kernel, config, args, run_parallel)
}
