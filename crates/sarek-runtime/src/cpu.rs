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

/// Why `kernel` would run on the interpreter core rather than as native code on `cpu` (`None`:
/// native), for `sarek run --verbose`-style notes. Compiles the kernel once, uncached.
pub fn native_note(kernel: &Kernel) -> Option<String> {
    sarek_jit::compile(kernel, &sarek_jit::JitOptions::default())
        .err()
        .map(|e| e.to_string())
}

/// Whether every `cpu` launch of `kernel` runs as native code on the vectors' buffers in
/// place (`HostDevice::dispatch_in_place`) and none falls back to the interpreter core: each
/// vector one non-bool scalar, the kernel native, and no launch able to end divergent (which
/// also means no copies kept to rerun from). Compiles the kernel once, uncached.
pub fn runs_in_place(kernel: &Kernel) -> bool {
    use sarek_compiler::ir::Ty;
    use sarek_compiler::types::Scalar;
    let dense = kernel.params.iter().all(|p| match &kernel.var(*p).ty {
        Ty::Vector(elem) => matches!(elem.as_ref(), Ty::Scalar(s) if *s != Scalar::Bool),
        _ => true,
    });
    dense
        && sarek_jit::compile(kernel, &sarek_jit::JitOptions::default())
            .is_ok_and(|jit| !jit.may_defer())
}

/// A kernel as the `cpu` device holds it: native code (Cranelift, `sarek-jit`), or the reason
/// it runs on the interpreter core.
enum Compiled {
    /// The native code, and per parameter whether a launch may write it
    /// ([`sarek_jit::written_params`]: only those are copied).
    Native(Box<sarek_jit::JitKernel>, Vec<bool>),
    Interpreted(String),
}

/// The `cpu` device's compiled kernels, compared whole (a changed kernel recompiles).
#[derive(Default)]
pub struct JitCache {
    kernels: Mutex<Vec<(Kernel, Arc<Compiled>)>>,
    options: sarek_jit::JitOptions,
    /// Storage for the copies [`JitCache::run_in_place`] takes, reused across launches so
    /// that a copy is one memcpy (no allocation, zeroing or page faults).
    copies: Mutex<Vec<Vec<u8>>>,
}

impl JitCache {
    /// A cache compiling with `options` (the device uses the defaults; benchmarks compare).
    pub fn with_options(options: sarek_jit::JitOptions) -> JitCache {
        JitCache {
            kernels: Mutex::default(),
            options,
            copies: Mutex::default(),
        }
    }

    fn compiled(&self, kernel: &Kernel) -> Arc<Compiled> {
        let mut cache = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, c)) = cache.iter().find(|(k, _)| k == kernel) {
            return c.clone();
        }
        // Compiling under the lock: a second launch of the same kernel waits for it.
        let c = Arc::new(match sarek_jit::compile(kernel, &self.options) {
            Ok(k) => Compiled::Native(Box::new(k), sarek_jit::written_params(kernel)),
            Err(e) => Compiled::Interpreted(e.to_string()),
        });
        cache.push((kernel.clone(), c.clone()));
        c
    }

    /// Why `kernel` runs on the interpreter core rather than as native code (`None`: native).
    pub fn note(&self, kernel: &Kernel) -> Option<String> {
        match &*self.compiled(kernel) {
            Compiled::Native(..) => None,
            Compiled::Interpreted(why) => Some(why.clone()),
        }
    }

    /// Run `kernel` as native code when the code generator handles it, else (and for launches
    /// the interpreter diagnoses exactly: arguments, barriers reached by part of a block) on
    /// the interpreter core. Vectors are updated only when the launch succeeds.
    pub fn run(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<LaunchStats, RuntimeError> {
        match self.run_compiled(kernel, config, args) {
            Native::Done(result) => result,
            Native::Interpret(_) => run(kernel, config, args),
        }
    }

    /// Run `kernel` as native code only, never on the interpreter core: a kernel the code
    /// generator does not handle, a divergent barrier or mismatched arguments are a
    /// [`RuntimeError::Launch`] saying so. For tests and benchmarks of the code generator.
    pub fn run_native(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<LaunchStats, RuntimeError> {
        match self.run_compiled(kernel, config, args) {
            Native::Done(result) => result,
            Native::Interpret(why) => Err(RuntimeError::Launch(why)),
        }
    }

    fn run_compiled(&self, kernel: &Kernel, config: LaunchConfig, args: &mut [ArgValue]) -> Native {
        let total = std::time::Instant::now();
        let compiled = self.compiled(kernel);
        let (jit, written) = match &*compiled {
            Compiled::Native(jit, written) => (jit, written),
            Compiled::Interpreted(why) => return Native::Interpret(why.clone()),
        };
        // The launch writes copies of the vectors it may write (read-only ones are used in
        // place), put back only on success: a failed launch leaves the arguments untouched.
        // (Arguments past the kernel's parameters are copied too: the launch refuses them.)
        let mut copies: Vec<Option<ArgValue>> = args
            .iter()
            .enumerate()
            .map(|(i, a)| written.get(i).is_none_or(|w| *w).then(|| a.clone()))
            .collect();
        let mut launch_args: Vec<sarek_jit::JitArg<'_>> = args
            .iter_mut()
            .zip(copies.iter_mut())
            .map(|(a, c)| jit_arg(c.as_mut().unwrap_or(a)))
            .collect();
        // The kernel time is the device interval (first block's start to last block's end),
        // as the GPU backends' and PoCL's profiling intervals are.
        let result = jit.launch_timed(config.grid, config.block, &mut launch_args);
        drop(launch_args);
        Native::Done(match result {
            Ok(kernel_time) => {
                for (a, c) in args.iter_mut().zip(copies) {
                    if let Some(c) = c {
                        *a = c;
                    }
                }
                Ok(LaunchStats {
                    kernel_time,
                    total_time: total.elapsed(),
                })
            }
            Err(sarek_jit::Fault::Kernel { span, message }) => {
                Err(RuntimeError::Fault { span, message })
            }
            Err(
                sarek_jit::Fault::Divergent { message, .. } | sarek_jit::Fault::Arguments(message),
            ) => return Native::Interpret(message),
        })
    }
}

/// A kernel argument of a launch on a host buffer's storage ([`JitCache::run_in_place`]).
pub enum InPlaceArg<'a> {
    Scalar(sarek_compiler::types::Literal),
    Aggregate(Vec<sarek_compiler::types::Literal>),
    /// A vector of one non-bool scalar leaf stored densely: `len` elements at the start of
    /// `bytes` (which must be aligned for the scalar).
    Vector {
        scalar: sarek_compiler::types::Scalar,
        len: usize,
        bytes: &'a mut [u8],
    },
}

impl JitCache {
    /// Run `kernel` as native code directly on vectors' storage, with no column copies.
    /// A launch that faults (a located [`RuntimeError::Fault`]) leaves the vectors it writes
    /// partly written, as a GPU does. A launch that must be rerun on the interpreter core
    /// (a barrier reached by part of a block) is undone first: when the code can end so
    /// ([`sarek_jit::JitKernel::may_defer`]) the vectors the kernel may write are copied
    /// before it runs (one memcpy each) and put back. `None`: the launch did not run (or was
    /// undone) and must take the general path (a kernel or launch for the interpreter core,
    /// a misaligned or short vector).
    pub fn run_in_place(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [InPlaceArg<'_>],
    ) -> Option<Result<LaunchStats, RuntimeError>> {
        let total = std::time::Instant::now();
        let compiled = self.compiled(kernel);
        let Compiled::Native(jit, written) = &*compiled else {
            return None;
        };
        if args.len() != written.len() {
            return None;
        }
        let mut saved: Vec<Option<Vec<u8>>> = Vec::with_capacity(args.len());
        for (a, w) in args.iter().zip(written) {
            saved.push(match a {
                InPlaceArg::Vector { scalar, len, bytes } => {
                    let n = len.checked_mul(scalar.size() as usize)?;
                    if n > bytes.len() {
                        return None;
                    }
                    (*w && jit.may_defer()).then(|| {
                        let pooled = self.copies.lock().unwrap_or_else(|e| e.into_inner()).pop();
                        copy_parallel(&bytes[..n], pooled.unwrap_or_default())
                    })
                }
                _ => None,
            });
        }
        let mut launch_args = Vec::with_capacity(args.len());
        for a in args.iter_mut() {
            launch_args.push(match a {
                InPlaceArg::Scalar(l) => sarek_jit::JitArg::Scalar(*l),
                InPlaceArg::Aggregate(ls) => sarek_jit::JitArg::Aggregate(ls.clone()),
                InPlaceArg::Vector { scalar, len, bytes } => {
                    let n = *len * scalar.size() as usize;
                    sarek_jit::JitArg::Vector(sarek_jit::VectorArg {
                        len: *len,
                        columns: vec![column_on(*scalar, &mut bytes[..n])?],
                    })
                }
            });
        }
        let result = jit.launch_timed(config.grid, config.block, &mut launch_args);
        drop(launch_args);
        for (a, s) in args.iter_mut().zip(saved) {
            if let (InPlaceArg::Vector { bytes, .. }, Some(s)) = (a, s) {
                if matches!(result, Err(sarek_jit::Fault::Divergent { .. })) {
                    bytes[..s.len()].copy_from_slice(&s);
                }
                if s.capacity() <= KEPT_COPY_BYTES {
                    self.copies
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(s);
                }
            }
        }
        match result {
            Ok(kernel_time) => Some(Ok(LaunchStats {
                kernel_time,
                total_time: total.elapsed(),
            })),
            Err(sarek_jit::Fault::Kernel { span, message }) => {
                Some(Err(RuntimeError::Fault { span, message }))
            }
            Err(sarek_jit::Fault::Divergent { .. } | sarek_jit::Fault::Arguments(_)) => None,
        }
    }
}

/// `bytes` as a column of `scalar`s (`None`: misaligned, or bool, whose bytes may hold
/// values other than 0 and 1).
fn column_on(
    scalar: sarek_compiler::types::Scalar,
    bytes: &mut [u8],
) -> Option<sarek_jit::Column<'_>> {
    use sarek_compiler::types::Scalar;
    Some(match scalar {
        Scalar::I32 => sarek_jit::Column::I32(bytemuck::try_cast_slice_mut(bytes).ok()?),
        Scalar::I64 => sarek_jit::Column::I64(bytemuck::try_cast_slice_mut(bytes).ok()?),
        Scalar::F32 => sarek_jit::Column::F32(bytemuck::try_cast_slice_mut(bytes).ok()?),
        Scalar::F64 => sarek_jit::Column::F64(bytemuck::try_cast_slice_mut(bytes).ok()?),
        Scalar::Bool => return None,
    })
}

/// The largest copy storage [`JitCache`] keeps for reuse.
const KEPT_COPY_BYTES: usize = 256 << 20;

/// A copy of `bytes` in `storage`, made by the pool's threads in 1 MiB pieces (one thread's
/// memcpy does not reach a many-core host's memory bandwidth).
fn copy_parallel(bytes: &[u8], mut copy: Vec<u8>) -> Vec<u8> {
    const PIECE: usize = 1 << 20;
    // Only growth zeroes: a reused storage is overwritten as it is.
    copy.truncate(bytes.len());
    copy.resize(bytes.len(), 0);
    copy.par_chunks_mut(PIECE)
        .zip(bytes.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
    copy
}

/// What a native launch came to: a result, or why the interpreter core must run it.
enum Native {
    Done(Result<LaunchStats, RuntimeError>),
    Interpret(String),
}

fn jit_arg(a: &mut ArgValue) -> sarek_jit::JitArg<'_> {
    use crate::value::Column;
    match a {
        ArgValue::Scalar(l) => sarek_jit::JitArg::Scalar(*l),
        ArgValue::Aggregate(ls) => sarek_jit::JitArg::Aggregate(ls.clone()),
        ArgValue::Vector(v) => sarek_jit::JitArg::Vector(sarek_jit::VectorArg {
            len: v.len,
            columns: v
                .columns
                .iter_mut()
                .map(|c| match c {
                    Column::Bool(x) => sarek_jit::Column::Bool(x),
                    Column::I32(x) => sarek_jit::Column::I32(x),
                    Column::I64(x) => sarek_jit::Column::I64(x),
                    Column::F32(x) => sarek_jit::Column::F32(x),
                    Column::F64(x) => sarek_jit::Column::F64(x),
                })
                .collect(),
        }),
    }
}
