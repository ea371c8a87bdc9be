//! Sarek's compiled `cpu` backend: an IR kernel becomes one native function per block through
//! Cranelift, and a launch runs the blocks of the grid on the rayon pool.
//!
//! The SIMT model on a CPU (as MCUDA and PoCL do it):
//! - one block is one call of the compiled *block function*, one rayon task;
//! - the threads of a block are loops over the block ("thread loops"); the kernel body is cut
//!   into *segments* at every synchronisation point (a barrier, a warp operation) and each
//!   segment is one thread loop, so every thread finishes a segment before any starts the
//!   next: that is the barrier;
//! - control flow that contains a synchronisation point (a loop around barriers, an `if` with
//!   a barrier in a branch) runs once per block, outside the thread loops; its condition is
//!   computed per thread and checked to be uniform across the block;
//! - variables live across segments are kept per thread in a frame (a row per scalar leaf, a
//!   cell per thread, so consecutive threads' values are adjacent); everything else stays in
//!   registers;
//! - calls of helpers that synchronise are inlined, and a `match` whose arms synchronise
//!   becomes uniform `if`s on its tag, before the schedule is cut (`prepare.rs`);
//! - warp operations read the frame slots of the other lanes of the warp (32 lanes, linear
//!   thread order, as the interpreter);
//! - shared memory is per block, local arrays per thread; global atomics are real atomics.
//!
//! Arithmetic is the interpreter's bit for bit (wrapping integers, masked shifts, truncated
//! division, saturating float-to-int, float32 in float32; math functions call the same Rust
//! functions the interpreter uses). Out-of-bounds accesses, integer division by zero, traps and
//! invalid variant tags are located [`Fault`]s. A synchronisation point reached by part of a
//! block is [`Fault::Divergent`]: the caller reruns the launch on the interpreter, which
//! reports it exactly (or runs it, when the divergence never reaches a barrier).
//!
//! A construct the code generator does not handle is [`JitError::Unsupported`]: the caller
//! falls back to the interpreter core, never to a wrong result.

mod codegen;
mod launch;
mod math;
mod prepare;
mod structure;

pub use launch::{Column, JitArg, VectorArg};

use sarek_compiler::Span;
use sarek_compiler::ir::Kernel;
use std::time::{Duration, Instant};

/// Threads per warp (the interpreter's).
pub const WARP_SIZE: u32 = 32;
/// The largest block a launch accepts (the interpreter's).
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// Code generation options.
#[derive(Clone, Debug)]
pub struct JitOptions {
    /// Cranelift optimisation level `speed` (else `none`, faster to compile).
    pub optimize: bool,
    /// Run segments whose control flow is the same for consecutive threads four threads at
    /// a time (see docs/backends.md); else every segment thread by thread.
    pub lane_groups: bool,
    /// Keep the generated Cranelift IR (after optimisation) and the machine code listing,
    /// for [`JitKernel::listing`] (`cpu_bench --dump KERNEL`).
    pub keep_listing: bool,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            optimize: true,
            lane_groups: true,
            keep_listing: false,
        }
    }
}

/// Why a kernel was not compiled.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum JitError {
    /// A construct this code generator does not handle yet: run the kernel on the
    /// interpreter instead. The span is where it is (may be dummy).
    #[error("the cpu code generator does not handle {what} (kernel `{kernel}`)")]
    Unsupported {
        kernel: String,
        what: String,
        span: Span,
    },
    /// Cranelift rejected the generated function: a Sarek bug.
    #[error("cranelift failed on kernel `{kernel}`: {message}")]
    Codegen { kernel: String, message: String },
}

/// A failed launch.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Fault {
    /// A located fault in the kernel (out of bounds, division by zero, trap, invalid tag):
    /// `message` names the kernel, the block and the thread, like the interpreter's.
    #[error("{message}")]
    Kernel { span: Span, message: String },
    /// A barrier or warp operation (or the uniform control flow around one) was reached by
    /// part of a block only. The launch must be rerun on the interpreter, which reports it.
    #[error("{message}")]
    Divergent { span: Span, message: String },
    /// Arguments or launch configuration that do not fit the kernel.
    #[error("{0}")]
    Arguments(String),
}

/// A compiled kernel: launch it any number of times with any grid and block.
pub struct JitKernel {
    pub(crate) inner: launch::Compiled,
    compile_time: Duration,
}

impl JitKernel {
    /// Time Cranelift (and the preparation passes) took for this kernel.
    pub fn compile_time(&self) -> Duration {
        self.compile_time
    }

    /// How many of the kernel's segments (thread loops between barriers) run four
    /// consecutive threads at a time.
    pub fn lane_group_segments(&self) -> usize {
        self.inner.lane_group_segments
    }

    /// How many `for` loops run a copy with their bounds checks hoisted before the loop
    /// (lane-group loops whose accesses are affine in the counter).
    pub fn hoisted_loops(&self) -> usize {
        self.inner.hoisted_loops
    }

    /// The optimised Cranelift IR and machine code of the block functions, when compiled
    /// with [`JitOptions::keep_listing`].
    pub fn listing(&self) -> Option<&str> {
        self.inner.listing.as_deref()
    }

    /// Whether a launch can end in [`Fault::Divergent`], after blocks may have stored: a
    /// caller that then reruns the launch on the interpreter must keep copies of the vectors
    /// the kernel writes ([`written_params`]) to rerun it from. (Any kernel with an element
    /// access can end in [`Fault::Kernel`].)
    pub fn may_defer(&self) -> bool {
        self.inner.may_defer()
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.inner.kernel.name
    }

    /// Run the grid; vectors in `args` (kernel parameter order) are updated in place. On a
    /// fault, vectors may be partly written (callers that need them untouched pass copies).
    pub fn launch(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [JitArg<'_>],
    ) -> Result<(), Fault> {
        self.inner.launch(grid, block, args).map(|_| ())
    }

    /// [`JitKernel::launch`], returning the device interval: from the first block's start to
    /// the last block's end (as a GPU's or PoCL's profiling interval; waking the rayon pool
    /// and returning to the caller are outside it).
    pub fn launch_timed(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [JitArg<'_>],
    ) -> Result<Duration, Fault> {
        self.inner.launch(grid, block, args)
    }
}

/// Per kernel parameter, whether a launch may write it: a vector stored into, updated by an
/// atomic or passed to a helper anywhere in the kernel or its helpers (conservatively: a
/// helper may store into it); scalars never. A caller that must leave the arguments of a
/// failed launch untouched copies only these.
pub fn written_params(kernel: &Kernel) -> Vec<bool> {
    use sarek_compiler::intrinsics::Intrinsic;
    use sarek_compiler::ir::{ExprKind, LValue, StmtKind};
    let mut written = std::collections::HashSet::new();
    let mut note = |s: &sarek_compiler::ir::Stmt| {
        if let StmtKind::Assign { place, .. } = &s.kind {
            let mut p = place;
            while let LValue::Field { base, .. } = p {
                p = base;
            }
            if let LValue::Index { base, .. } = p {
                written.insert(*base);
            }
        }
        for e in prepare::own_exprs(s) {
            prepare::walk_expr(e, &mut |x| match &x.kind {
                ExprKind::Intrinsic {
                    op: Intrinsic::Atomic(_),
                    args,
                } => {
                    if let Some(ExprKind::Var(v)) = args.first().map(|a| &a.kind) {
                        written.insert(*v);
                    }
                }
                ExprKind::Call { args, .. } => {
                    for a in args {
                        if let ExprKind::Var(v) = a.kind {
                            written.insert(v);
                        }
                    }
                }
                _ => {}
            });
        }
    };
    sarek_compiler::ir::visit::for_each_stmt(&kernel.body, &mut note);
    for f in &kernel.functions {
        sarek_compiler::ir::visit::for_each_stmt(&f.body, &mut note);
    }
    kernel
        .params
        .iter()
        .map(|p| {
            matches!(kernel.var(*p).ty, sarek_compiler::ir::Ty::Vector(_)) && written.contains(p)
        })
        .collect()
}

/// Compile `kernel` to native code for this machine.
pub fn compile(kernel: &Kernel, options: &JitOptions) -> Result<JitKernel, JitError> {
    let start = Instant::now();
    let prepared = prepare::prepare(kernel)?;
    let tree = structure::build(&prepared)?;
    let inner = codegen::compile(prepared, tree, options)?;
    Ok(JitKernel {
        inner,
        compile_time: start.elapsed(),
    })
}
