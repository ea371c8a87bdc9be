//! Launching a compiled kernel: argument checks, the launch context the block function reads,
//! per-worker block memory, blocks on the rayon pool, and faults decoded into messages.

use crate::{Fault, MAX_THREADS_PER_BLOCK};
use cranelift_jit::JITModule;
use rayon::prelude::*;
use sarek_compiler::Span;
use sarek_compiler::ir::{Kernel, StmtKind, Ty, VarId};
use sarek_compiler::types::{Literal, MemSpace, Scalar};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) const STATUS_FAULT: i64 = 1;
/// A launch of at least this many block-function calls per pool worker wakes the whole pool
/// before its first block (smaller ones would pay the extra round trip for little work).
const WAKE_CALLS_PER_WORKER: u64 = 4;
pub(crate) const STATUS_DIVERGENT: i64 = 2;

/// What the block function reads at entry.
#[repr(C)]
pub(crate) struct Ctx {
    pub block_dim: [i32; 3],
    pub grid_dim: [i32; 3],
    pub nthreads: i32,
    pub _pad: i32,
    /// One 8-byte slot per scalar leaf of the by-value parameters, in order.
    pub params: *const u64,
    /// One [`VecDesc`] per vector parameter, in order.
    pub vecs: *const VecDesc,
}

#[repr(C)]
pub(crate) struct VecDesc {
    pub len: i64,
    /// One base pointer per leaf column.
    pub cols: *const *mut u8,
}

/// Written by a faulting block function.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FaultRecord {
    pub site: u32,
    pub thread: u32,
    /// The faulting block among those of the call (counted along x from its first).
    pub block: u32,
    pub _pad: u32,
    pub a: i64,
    pub b: i64,
}

/// A place in the generated code that can fault.
pub(crate) struct Site {
    pub span: Span,
    pub kind: SiteKind,
}

pub(crate) enum SiteKind {
    Oob {
        what: &'static str,
        name: String,
    },
    DivZero {
        rem: bool,
    },
    Trap(String),
    BadTag,
    Divergent,
    /// A lane group failed a bounds check after a store (see `codegen::lanes`).
    GroupFault,
}

/// A declared shared or local array: elements, leaf scalars, byte offset of each leaf column
/// (for local arrays: per thread of the block, multiplied by the block's thread count).
pub(crate) struct ArrLayout {
    pub size: usize,
    pub leaves: Vec<Scalar>,
    pub offsets: Vec<usize>,
}

pub(crate) struct Layout {
    pub param_slot: HashMap<VarId, u32>,
    pub nparam_slots: usize,
    pub vec_leaves: Vec<Vec<Scalar>>,
    pub arrays: Vec<(VarId, (MemSpace, u32))>,
    pub shared: Vec<ArrLayout>,
    pub shared_bytes: usize,
    pub local: Vec<ArrLayout>,
    pub local_bytes_per_thread: usize,
    /// Frame bytes per thread (spilled variables).
    pub stride: usize,
}

fn scalars(k: &Kernel, ty: &Ty) -> Vec<Scalar> {
    sarek_compiler::abi::leaves(k, ty)
        .into_iter()
        .map(|l| l.scalar)
        .collect()
}

fn arrays_in(b: &sarek_compiler::ir::Block, out: &mut Vec<VarId>) {
    sarek_compiler::ir::visit::for_each_stmt(b, &mut |s| {
        if let StmtKind::Array { var } = s.kind
            && !out.contains(&var)
        {
            out.push(var);
        }
    });
}

impl Layout {
    pub fn new(k: &Kernel, nslots: u32) -> Layout {
        let mut param_slot = HashMap::new();
        let mut nparam_slots = 0usize;
        let mut vec_leaves = Vec::new();
        for p in &k.params {
            match &k.var(*p).ty {
                Ty::Vector(e) => vec_leaves.push(scalars(k, e)),
                ty => {
                    param_slot.insert(*p, nparam_slots as u32);
                    nparam_slots += scalars(k, ty).len();
                }
            }
        }
        let mut declared = Vec::new();
        arrays_in(&k.body, &mut declared);
        for f in &k.functions {
            arrays_in(&f.body, &mut declared);
        }
        let (mut shared, mut local, mut arrays) = (Vec::new(), Vec::new(), Vec::new());
        let (mut shared_bytes, mut local_bytes) = (0usize, 0usize);
        for v in declared {
            let Ty::Array {
                elem,
                space,
                size: Some(size),
            } = &k.var(v).ty
            else {
                continue;
            };
            let leaves = scalars(k, elem);
            let size = *size as usize;
            let at = if *space == MemSpace::Local {
                &mut local_bytes
            } else {
                &mut shared_bytes
            };
            let mut offsets = Vec::new();
            for l in &leaves {
                offsets.push(*at);
                *at += (size * l.size() as usize).div_ceil(8) * 8;
            }
            let a = ArrLayout {
                size,
                leaves,
                offsets,
            };
            if *space == MemSpace::Local {
                arrays.push((v, (MemSpace::Local, local.len() as u32)));
                local.push(a);
            } else {
                arrays.push((v, (MemSpace::Shared, shared.len() as u32)));
                shared.push(a);
            }
        }
        Layout {
            param_slot,
            nparam_slots,
            vec_leaves,
            arrays,
            shared,
            shared_bytes,
            local,
            local_bytes_per_thread: local_bytes,
            stride: nslots as usize * 8,
        }
    }
}

/// `(ctx, block_x, block_y, block_z, shared, frame, fault, count)`: runs `count` blocks
/// from `(block_x, block_y, block_z)` along x.
type BlockFn =
    unsafe extern "C" fn(*const Ctx, i32, i32, i32, *mut u8, *mut u8, *mut FaultRecord, i32) -> i32;

/// The native code and what a launch needs to call it.
pub(crate) struct Compiled {
    pub kernel: Kernel,
    layout: Layout,
    sites: Vec<Site>,
    /// Segments run in lane groups (see docs/backends.md).
    pub lane_group_segments: usize,
    /// Loops with their bounds checks hoisted (see `codegen::hoist`).
    pub hoisted_loops: usize,
    /// Cranelift IR and machine code, when asked for ([`crate::JitOptions::keep_listing`]).
    pub listing: Option<String>,
    module: Option<JITModule>,
    /// Block functions: any block shape, and 1-D blocks.
    func: [BlockFn; 2],
}

// SAFETY: the module is never touched after finalisation except to free it on drop; the code
// it owns is immutable and reentrant (each call gets its own block memory).
unsafe impl Send for Compiled {}
unsafe impl Sync for Compiled {}

impl Drop for Compiled {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: no function pointer into the module outlives `self`.
            unsafe { m.free_memory() };
        }
    }
}

/// One column of a vector argument: the host's memory, updated in place.
pub enum Column<'a> {
    Bool(&'a mut [bool]),
    I32(&'a mut [i32]),
    I64(&'a mut [i64]),
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
}

impl Column<'_> {
    pub fn scalar(&self) -> Scalar {
        match self {
            Column::Bool(_) => Scalar::Bool,
            Column::I32(_) => Scalar::I32,
            Column::I64(_) => Scalar::I64,
            Column::F32(_) => Scalar::F32,
            Column::F64(_) => Scalar::F64,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Column::Bool(v) => v.len(),
            Column::I32(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F32(v) => v.len(),
            Column::F64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn ptr(&mut self) -> *mut u8 {
        match self {
            Column::Bool(v) => v.as_mut_ptr().cast(),
            Column::I32(v) => v.as_mut_ptr().cast(),
            Column::I64(v) => v.as_mut_ptr().cast(),
            Column::F32(v) => v.as_mut_ptr().cast(),
            Column::F64(v) => v.as_mut_ptr().cast(),
        }
    }
}

/// A vector argument: `len` elements, one column per scalar leaf of the element type
/// ([`sarek_compiler::abi::leaves`]), as the host keeps vectors.
pub struct VectorArg<'a> {
    pub len: usize,
    pub columns: Vec<Column<'a>>,
}

/// One kernel argument.
pub enum JitArg<'a> {
    Scalar(Literal),
    /// A record/variant/tuple by value: its leaves in order.
    Aggregate(Vec<Literal>),
    Vector(VectorArg<'a>),
}

fn bits(l: Literal) -> u64 {
    match l {
        Literal::Bool(b) => b as u64,
        Literal::I32(x) => x as u32 as u64,
        Literal::I64(x) => x as u64,
        Literal::F32(x) => x.to_bits() as u64,
        Literal::F64(x) => x.to_bits(),
    }
}

/// Notes when a worker's share of the blocks ends (its state is dropped then).
struct Interval<'a> {
    epoch: Instant,
    ended: &'a AtomicU64,
}

impl Drop for Interval<'_> {
    fn drop(&mut self) {
        self.ended
            .fetch_max(self.epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
}

/// The launch context shared by all blocks.
struct Shared<'a> {
    ctx: &'a Ctx,
}
// SAFETY: the context's pointers are read-only for the launch's duration; vector memory is
// written by blocks concurrently as on a GPU (atomics are real atomics).
unsafe impl Sync for Shared<'_> {}

impl Shared<'_> {
    fn get(&self) -> *const Ctx {
        self.ctx
    }
}

impl Compiled {
    pub(crate) fn new(
        kernel: Kernel,
        layout: Layout,
        sites: Vec<Site>,
        module: JITModule,
        code: [*const u8; 2],
    ) -> Compiled {
        // SAFETY: `code` holds finalised block functions with the signature `BlockFn`.
        let func = code.map(|c| unsafe { std::mem::transmute::<*const u8, BlockFn>(c) });
        Compiled {
            kernel,
            layout,
            sites,
            lane_group_segments: 0,
            hoisted_loops: 0,
            listing: None,
            module: Some(module),
            func,
        }
    }

    /// Whether a launch can end in [`Fault::Divergent`] (a barrier's uniformity test, a lane
    /// group failing a check after a store): the caller then reruns it on the interpreter.
    pub(crate) fn may_defer(&self) -> bool {
        self.sites
            .iter()
            .any(|s| matches!(s.kind, SiteKind::Divergent | SiteKind::GroupFault))
    }

    fn check(&self, grid: [u32; 3], block: [u32; 3], args: &[JitArg<'_>]) -> Result<(), Fault> {
        let k = &self.kernel;
        let err = |m: String| Err(Fault::Arguments(m));
        if grid.contains(&0) || block.contains(&0) {
            return err(format!(
                "launch of kernel `{}` with an empty grid or block (grid {grid:?}, block {block:?})",
                k.name
            ));
        }
        let threads: u64 = block.iter().map(|&b| b as u64).product();
        if threads > MAX_THREADS_PER_BLOCK as u64 {
            return err(format!(
                "a block of {threads} threads ({}x{}x{}) exceeds the maximum of {MAX_THREADS_PER_BLOCK}",
                block[0], block[1], block[2]
            ));
        }
        if grid.iter().any(|&g| g > i32::MAX as u32) {
            return err(format!("grid {grid:?} exceeds int32 block indices"));
        }
        if args.len() != k.params.len() {
            return err(format!(
                "kernel `{}` takes {} arguments, got {}",
                k.name,
                k.params.len(),
                args.len()
            ));
        }
        for (p, a) in k.params.iter().zip(args) {
            let v = k.var(*p);
            let ok = match (&v.ty, a) {
                (Ty::Vector(e), JitArg::Vector(va)) => {
                    let want = scalars(k, e);
                    va.len <= i32::MAX as usize
                        && va.columns.len() == want.len()
                        && va
                            .columns
                            .iter()
                            .zip(&want)
                            .all(|(c, s)| c.scalar() == *s && c.len() == va.len)
                }
                (Ty::Vector(_), _) | (_, JitArg::Vector(_)) => false,
                (ty, JitArg::Scalar(l)) => ty.scalar() == Some(l.scalar()),
                (ty, JitArg::Aggregate(ls)) => {
                    ty.scalar().is_none()
                        && scalars(k, ty) == ls.iter().map(|l| l.scalar()).collect::<Vec<_>>()
                }
            };
            if !ok {
                return err(format!(
                    "argument `{}` of kernel `{}` does not match its type",
                    v.name, k.name
                ));
            }
        }
        Ok(())
    }

    /// Run the grid; the device interval (first block's start to last block's end).
    pub(crate) fn launch(
        &self,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut [JitArg<'_>],
    ) -> Result<Duration, Fault> {
        self.check(grid, block, args)?;
        let mut params = vec![0u64; self.layout.nparam_slots.max(1)];
        let mut cols: Vec<Vec<*mut u8>> = Vec::new();
        let mut lens = Vec::new();
        let mut slot = 0;
        for a in args.iter_mut() {
            match a {
                JitArg::Scalar(l) => {
                    params[slot] = bits(*l);
                    slot += 1;
                }
                JitArg::Aggregate(ls) => {
                    for l in ls.iter() {
                        params[slot] = bits(*l);
                        slot += 1;
                    }
                }
                JitArg::Vector(v) => {
                    cols.push(v.columns.iter_mut().map(|c| c.ptr()).collect());
                    lens.push(v.len as i64);
                }
            }
        }
        let descs: Vec<VecDesc> = cols
            .iter()
            .zip(&lens)
            .map(|(c, &len)| VecDesc {
                len,
                cols: c.as_ptr(),
            })
            .collect();
        let nthreads: u32 = block.iter().product();
        let ctx = Ctx {
            block_dim: block.map(|b| b as i32),
            grid_dim: grid.map(|g| g as i32),
            nthreads: nthreads as i32,
            _pad: 0,
            params: params.as_ptr(),
            vecs: descs.as_ptr(),
        };
        let shared_ctx = Shared { ctx: &ctx };
        let l = &self.layout;
        let shared_words = l.shared_bytes.div_ceil(8);
        let n = nthreads as usize;
        let spill_words = n * l.stride / 8;
        let local_words = (n * l.local_bytes_per_thread).div_ceil(8);
        let [gx, gy, gz] = grid.map(|g| g as u64);
        let first = AtomicU64::new(u64::MAX);
        let found: Mutex<Option<(u64, FaultRecord, i32)>> = Mutex::new(None);
        let func = self.func[usize::from(block[1] == 1 && block[2] == 1)];
        // One call runs a few consecutive blocks of a row (about 4096 threads), so small
        // blocks do not pay a call and a task each.
        let per_call = (4096 / n as u64).clamp(1, gx);
        let calls_x = gx.div_ceil(per_call);
        let calls = calls_x * gy * gz;
        // A launch with work for every worker wakes them all at once first: left asleep, the
        // first worker to wake starts alone and wakes the next only when it splits its work,
        // so on a virtual machine (an idle vCPU halts) the second worker joined a 4 ms saxpy
        // after milliseconds, while one core alone nearly saturates the memory bandwidth.
        let workers = rayon::current_num_threads() as u64;
        if workers > 1 && calls >= WAKE_CALLS_PER_WORKER * workers {
            rayon::broadcast(|_| ());
        }
        // The device interval: from the first block's start to the last block's end, in
        // nanoseconds after `epoch` (what a GPU's or PoCL's profiling interval measures: the
        // pool waking up and the caller noticing the end are not part of it).
        let epoch = Instant::now();
        let (started, ended) = (AtomicU64::new(u64::MAX), AtomicU64::new(0));
        (0..calls).into_par_iter().for_each_init(
            || {
                started.fetch_min(epoch.elapsed().as_nanos() as u64, Ordering::Relaxed);
                (
                    vec![0u64; shared_words.max(1)],
                    vec![0u64; (spill_words + local_words).max(1)],
                    Interval {
                        epoch,
                        ended: &ended,
                    },
                )
            },
            |(shared, frame, _), c| {
                let (cx, row) = (c % calls_x, c / calls_x);
                let (by, bz) = (row % gy, row / gy);
                let bx = cx * per_call;
                let count = per_call.min(gx - bx);
                let b0 = (bz * gy + by) * gx + bx;
                if b0 > first.load(Ordering::Relaxed) {
                    return;
                }
                let mut rec = FaultRecord::default();
                let ctx = shared_ctx.get();
                // SAFETY: the block function reads the context and the argument columns
                // (lengths checked above), and writes only within the columns (indices
                // checked against their lengths), its block memory (zeroed per block by the
                // function) and `rec`.
                let status = unsafe {
                    func(
                        ctx,
                        bx as i32,
                        by as i32,
                        bz as i32,
                        shared.as_mut_ptr().cast(),
                        frame.as_mut_ptr().cast(),
                        &mut rec,
                        count as i32,
                    )
                };
                if status != 0 {
                    let b = b0 + rec.block as u64;
                    first.fetch_min(b, Ordering::Relaxed);
                    let mut f = found.lock().unwrap_or_else(|e| e.into_inner());
                    if f.as_ref().is_none_or(|(fb, _, _)| b < *fb) {
                        *f = Some((b, rec, status));
                    }
                }
            },
        );
        let fault = found.into_inner().unwrap_or_else(|e| e.into_inner());
        let (started, ended) = (started.into_inner(), ended.into_inner());
        match fault {
            None => Ok(Duration::from_nanos(ended.saturating_sub(started))),
            Some((b, rec, status)) => {
                let bi = [b % gx, (b / gx) % gy, b / (gx * gy)].map(|x| x as u32);
                Err(self.fault(bi, block, rec, status as i64))
            }
        }
    }

    fn fault(&self, bi: [u32; 3], dims: [u32; 3], rec: FaultRecord, status: i64) -> Fault {
        let t = rec.thread;
        let (x, y, z) = (
            t % dims[0],
            (t / dims[0]) % dims[1],
            t / (dims[0] * dims[1]),
        );
        let k = &self.kernel.name;
        let [bx, by, bz] = bi;
        let Some(site) = self.sites.get(rec.site as usize) else {
            return Fault::Arguments(format!("kernel `{k}` reported an unknown fault site"));
        };
        let what = match &site.kind {
            SiteKind::Oob { what, name } => format!(
                "out-of-bounds {what} `{name}` (index {}, length {})",
                rec.a, rec.b
            ),
            SiteKind::DivZero { rem: false } => "integer division by zero".into(),
            SiteKind::DivZero { rem: true } => "integer `mod` by zero".into(),
            SiteKind::Trap(m) => m.clone(),
            SiteKind::BadTag => format!("variant value with invalid tag {} matched", rec.a),
            SiteKind::GroupFault => {
                return Fault::Divergent {
                    span: site.span,
                    message: format!(
                        "a group of four threads of kernel `{k}`, block ({bx},{by},{bz}), \
                         faulted after a store: the launch is rerun on the interpreter"
                    ),
                };
            }
            SiteKind::Divergent => {
                return Fault::Divergent {
                    span: site.span,
                    message: format!(
                        "block-uniform control flow around a barrier or warp operation \
                         diverges in kernel `{k}`, block ({bx},{by},{bz}), thread ({x},{y},{z})"
                    ),
                };
            }
        };
        debug_assert_eq!(status, STATUS_FAULT);
        Fault::Kernel {
            span: site.span,
            message: format!(
                "{what} in kernel `{k}`, block ({bx},{by},{bz}), thread ({x},{y},{z})"
            ),
        }
    }
}
