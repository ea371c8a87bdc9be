//! The reference interpreter of the IR (backend `interp`), also the core of the `cpu` backend.
//!
//! A launch resolves the kernel into a compact register form (`compile`), copies every
//! vector argument into device memory (one atomic word column per leaf), runs the blocks in
//! order (x fastest, then y, then z) with the SIMT executor (`exec`: the threads of a block
//! in lockstep, so barriers and warp operations are exact), and copies the vectors back.
//!
//! Semantics (the oracle every backend is compared with):
//! - exact scalar arithmetic, see `scalar`: wrapping int32/int64, truncated `/` and `mod`,
//!   masked shift counts, float32 in `f32`, float64 in `f64`, saturating float-to-int.
//! - the warp size is 32 ([`WARP_SIZE`]): a warp is 32 consecutive threads of the block in
//!   linear order (x fastest). Shuffles read the source lane's value, or the thread's own value
//!   when the source lane is outside the warp or past the end of the block; `warp_shuffle`
//!   takes the lane modulo 32.
//! - atomics apply in thread order within a step and return the old value.
//! - memory is sequentially consistent; fences are no-ops.
//!
//! It is also a debugger: an out-of-bounds access, an integer division or `mod` by zero, a
//! barrier or warp operation reached by only part of its block or warp, a read of shared
//! (or per-thread local) memory no thread wrote, and a `match` on an invalid variant tag are
//! [`RuntimeError::Fault`]s carrying the statement's span and naming the kernel, the block and
//! the thread. Blocks run in order and stop at the first fault, so faults are deterministic.
//! A launch that fails leaves `args` untouched.
//!
//! Stored variants are deterministic: constructing one zeroes the payload leaves of the other
//! constructors (backends compare whole columns).

pub(crate) mod compile;
pub(crate) mod exec;
pub(crate) mod scalar;

pub use exec::WARP_SIZE;

use crate::device::{Device, LaunchConfig, LaunchStats, RuntimeError};
use crate::value::{ArgValue, Column, HostVector};
use compile::{Param, Program};
use exec::{GVec, Globals, Worker};
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::Scalar;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;

/// The largest block the interpreter and the cpu backend accept.
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;

/// Open the interpreter device (always available): see [`crate::host`].
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    crate::host::open_interp()
}

/// Run `kernel` over `config` on the interpreter, blocks in order; vectors in `args` are
/// updated in place (left untouched when the launch fails).
pub fn run(
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
) -> Result<LaunchStats, RuntimeError> {
    launch(kernel, config, args, |launch| {
        let mut worker = launch.worker();
        for b in 0..launch.blocks() {
            launch.run_block(&mut worker, launch.block_index(b))?;
        }
        Ok(())
    })
}

/// One launch of a resolved kernel: what a block driver (sequential here, parallel in
/// [`crate::cpu`]) needs to run blocks.
pub struct Launch {
    program: Program,
    globals: Globals,
    config: LaunchConfig,
}

impl Launch {
    /// Number of blocks in the grid.
    pub fn blocks(&self) -> u64 {
        self.config.grid.iter().map(|&g| g as u64).product()
    }

    /// Block coordinates of linear block number `b` (x fastest).
    pub fn block_index(&self, b: u64) -> [u32; 3] {
        let [gx, gy, _] = self.config.grid.map(|g| g as u64);
        [
            (b % gx) as u32,
            ((b / gx) % gy) as u32,
            (b / (gx * gy)) as u32,
        ]
    }

    /// State for running blocks one after another on one OS thread.
    pub fn worker(&self) -> BlockWorker {
        BlockWorker(Worker::new(
            &self.program,
            self.config.block,
            self.config.grid,
        ))
    }

    /// Run one block. Blocks may run concurrently (each with its own worker).
    pub fn run_block(&self, worker: &mut BlockWorker, block: [u32; 3]) -> Result<(), RuntimeError> {
        exec::run_block(&self.program, &self.globals, &mut worker.0, block)
    }
}

/// Registers and block-local memory of one executing block (opaque).
pub struct BlockWorker(Worker);

/// Validate, prepare, run through `drive`, and copy results back into `args`.
pub(crate) fn launch(
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
    drive: impl FnOnce(&Launch) -> Result<(), RuntimeError>,
) -> Result<LaunchStats, RuntimeError> {
    let total = Instant::now();
    check_config(kernel, config)?;
    let program = compile::compile(kernel)?;
    check_args(kernel, &program, args)?;
    let globals = Globals {
        vecs: args
            .iter()
            .filter_map(|a| match a {
                ArgValue::Vector(v) => Some(to_device(v)),
                _ => None,
            })
            .collect(),
    };
    let launch = Launch {
        program,
        globals,
        config,
    };
    // Scalar and aggregate parameters live in registers no statement writes: they become
    // constants, filled once per worker.
    let launch = with_params(launch, args);
    let start = Instant::now();
    drive(&launch)?;
    let kernel_time = start.elapsed();
    let mut vecs = launch.globals.vecs.into_iter();
    for a in args.iter_mut() {
        if let ArgValue::Vector(v) = a {
            from_device(
                vecs.next().expect("one device vector per vector argument"),
                v,
            );
        }
    }
    Ok(LaunchStats {
        kernel_time,
        total_time: total.elapsed(),
    })
}

fn with_params(mut launch: Launch, args: &[ArgValue]) -> Launch {
    for (p, a) in launch.program.params.iter().zip(args) {
        let values: Vec<u64> = match a {
            ArgValue::Scalar(l) => vec![scalar::lit_bits(*l)],
            ArgValue::Aggregate(ls) => ls.iter().map(|l| scalar::lit_bits(*l)).collect(),
            ArgValue::Vector(_) => continue,
        };
        if let Param::Value { reg, .. } = p {
            for (i, v) in values.into_iter().enumerate() {
                launch.program.consts.push((reg + i as u32, v));
            }
        }
    }
    launch
}

fn check_config(kernel: &Kernel, c: LaunchConfig) -> Result<(), RuntimeError> {
    if c.grid.contains(&0) || c.block.contains(&0) {
        return Err(RuntimeError::Launch(format!(
            "launch of kernel `{}` with an empty grid or block (grid {:?}, block {:?})",
            kernel.name, c.grid, c.block
        )));
    }
    let threads = c.block.iter().map(|&b| b as u64).product::<u64>();
    if threads > MAX_THREADS_PER_BLOCK as u64 {
        return Err(RuntimeError::Launch(format!(
            "a block of {threads} threads ({}x{}x{}) exceeds the maximum of {MAX_THREADS_PER_BLOCK}",
            c.block[0], c.block[1], c.block[2]
        )));
    }
    Ok(())
}

fn describe(a: &ArgValue) -> String {
    match a {
        ArgValue::Scalar(l) => format!("{} scalar", article(l.scalar())),
        ArgValue::Aggregate(ls) => format!("an aggregate of {} values", ls.len()),
        ArgValue::Vector(v) => format!("a vector of {} columns", v.columns.len()),
    }
}

/// "an int32", "a float32".
fn article(s: Scalar) -> String {
    let a = if s.name().starts_with(['i', 'a', 'e', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{a} {s}")
}

fn type_list(s: &[Scalar]) -> String {
    s.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

/// Check `args` against the kernel's signature: count, kinds, scalar types, columns.
fn check_args(k: &Kernel, p: &Program, args: &[ArgValue]) -> Result<(), RuntimeError> {
    let err = |m: String| Err(RuntimeError::Arguments(m));
    if args.len() != p.params.len() {
        let names: Vec<&str> = p
            .params
            .iter()
            .map(|p| match p {
                Param::Value { name, .. } | Param::Vector { name, .. } => name.as_str(),
            })
            .collect();
        return err(format!(
            "kernel `{}` takes {} arguments ({}), got {}",
            k.name,
            names.len(),
            names.join(", "),
            args.len()
        ));
    }
    for (param, arg) in p.params.iter().zip(args) {
        match (param, arg) {
            (
                Param::Value {
                    name, ty, leaves, ..
                },
                ArgValue::Scalar(l),
            ) => {
                if leaves.len() != 1 || leaves[0] != l.scalar() || ty.scalar().is_none() {
                    return err(format!(
                        "argument `{name}` of kernel `{}` has type {}, got {} value",
                        k.name,
                        ty_name(k, ty),
                        article(l.scalar())
                    ));
                }
            }
            (
                Param::Value {
                    name, ty, leaves, ..
                },
                ArgValue::Aggregate(ls),
            ) => {
                let got: Vec<Scalar> = ls.iter().map(|l| l.scalar()).collect();
                if ty.scalar().is_some() || &got != leaves {
                    return err(format!(
                        "argument `{name}` of kernel `{}` has type {} (leaves: {}), got an aggregate of ({})",
                        k.name,
                        ty_name(k, ty),
                        type_list(leaves),
                        type_list(&got)
                    ));
                }
            }
            (Param::Vector { name, ty, leaves }, ArgValue::Vector(v)) => {
                if v.columns.len() != leaves.len() {
                    let want: Vec<String> = leaves
                        .iter()
                        .map(|l| {
                            if l.name.is_empty() {
                                l.scalar.to_string()
                            } else {
                                format!("{}: {}", l.name, l.scalar)
                            }
                        })
                        .collect();
                    return err(format!(
                        "argument `{name}` of kernel `{}` ({}) needs {} column(s) ({}), got {}",
                        k.name,
                        ty_name(k, ty),
                        leaves.len(),
                        want.join(", "),
                        v.columns.len()
                    ));
                }
                if v.len > i32::MAX as usize {
                    return err(format!(
                        "argument `{name}` has {} elements, more than int32 indices reach",
                        v.len
                    ));
                }
                for (leaf, col) in leaves.iter().zip(&v.columns) {
                    let cname = if leaf.name.is_empty() {
                        String::new()
                    } else {
                        format!(" column `{}`", leaf.name)
                    };
                    if col.scalar() != leaf.scalar {
                        return err(format!(
                            "argument `{name}`{cname} of kernel `{}` holds {} elements, expected {}",
                            k.name,
                            col.scalar(),
                            leaf.scalar
                        ));
                    }
                    if col.len() != v.len {
                        return err(format!(
                            "argument `{name}`{cname} of kernel `{}` has {} elements, the vector has {}",
                            k.name,
                            col.len(),
                            v.len
                        ));
                    }
                }
            }
            (Param::Value { name, ty, .. }, a) | (Param::Vector { name, ty, .. }, a) => {
                return err(format!(
                    "argument `{name}` of kernel `{}` has type {}, got {}",
                    k.name,
                    ty_name(k, ty),
                    describe(a)
                ));
            }
        }
    }
    Ok(())
}

fn ty_name(k: &Kernel, ty: &sarek_compiler::ir::Ty) -> String {
    use sarek_compiler::ir::Ty;
    match ty {
        Ty::Unit => "unit".into(),
        Ty::Scalar(s) => s.name().into(),
        Ty::Record(r) => k.record(*r).name.clone(),
        Ty::Variant(v) => k.variant(*v).name.clone(),
        Ty::Vector(e) => format!("{} vector", ty_name(k, e)),
        Ty::Array { elem, .. } => format!("{} array", ty_name(k, elem)),
    }
}

fn to_device(v: &HostVector) -> GVec {
    let cols = v
        .columns
        .iter()
        .map(|c| {
            let words: Vec<AtomicU64> = match c {
                Column::Bool(x) => x.iter().map(|&b| AtomicU64::new(b as u64)).collect(),
                Column::I32(x) => x.iter().map(|&i| AtomicU64::new(scalar::w32(i))).collect(),
                Column::I64(x) => x.iter().map(|&i| AtomicU64::new(scalar::w64(i))).collect(),
                Column::F32(x) => x.iter().map(|&f| AtomicU64::new(scalar::wf32(f))).collect(),
                Column::F64(x) => x.iter().map(|&f| AtomicU64::new(scalar::wf64(f))).collect(),
            };
            words
        })
        .collect();
    GVec { len: v.len, cols }
}

fn from_device(g: GVec, v: &mut HostVector) {
    for (col, words) in v.columns.iter_mut().zip(g.cols) {
        let w = words.into_iter().map(AtomicU64::into_inner);
        match col {
            Column::Bool(x) => x.iter_mut().zip(w).for_each(|(o, b)| *o = b != 0),
            Column::I32(x) => x.iter_mut().zip(w).for_each(|(o, b)| *o = scalar::r32(b)),
            Column::I64(x) => x.iter_mut().zip(w).for_each(|(o, b)| *o = scalar::r64(b)),
            Column::F32(x) => x.iter_mut().zip(w).for_each(|(o, b)| *o = scalar::rf32(b)),
            Column::F64(x) => x.iter_mut().zip(w).for_each(|(o, b)| *o = scalar::rf64(b)),
        }
    }
}
