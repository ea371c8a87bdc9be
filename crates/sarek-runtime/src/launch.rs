//! Launching: the checked, cached path every caller goes through.
//!
//! - [`build`]: the device's build of a kernel, made once per [`BuildKey`] and kept by the
//!   device.
//! - [`enqueue_built`]: check the launch against the device, bind the arguments
//!   ([`crate::bind`]), dispatch, and keep what the launch uses alive until the next
//!   synchronisation (with the trap status word when the kernel has traps).
//! - [`synchronize`]: wait for the device; the first fault of the calling thread's launches
//!   since its last synchronisation (a trap a device reported, an interpreter fault) comes
//!   back here, located. The wait is device-wide, as in CUDA, but a fault is reported to the
//!   thread that enqueued the faulting launch, never to another thread sharing the device.
//! - [`run_checked`]: [`Device::launch`] in checked mode when asked (issue 17); the launch
//!   limits ([`crate::limits::check_launch`]) are checked by [`build_for`], for every launch;
//! - [`run_host`]: one launch with host values, uploaded and downloaded around it (tests,
//!   `sarek run`); [`check_config`] and [`check_args`] word mistakes in host values.

use crate::bind::{BindArg, bind};
use crate::buffer::DeviceVector;
use crate::device::{Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError, trap_fault};
use crate::kernel::{BuildKey, Built, KernelHandle};
use crate::memory::{InFlight, Mem, lock};
use crate::signature::{ParamKind, signature};
use crate::value::{ArgValue, HostVector};
use sarek_compiler::abi::{AbiParamKind, Leaf};
use sarek_compiler::ir::Kernel;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The device's build of `kernel`, made on first use.
pub fn build<D: Device + ?Sized>(
    device: &D,
    kernel: &KernelHandle,
) -> Result<Arc<Built>, RuntimeError> {
    device
        .core()
        .build_cached(&BuildKey::new(kernel), || device.build(kernel))
}

/// The build of `kernel` for a launch over `config`. A kernel with a shared array sized by the
/// block (`= ()`) is specialised to this launch's block x size first (one build per block
/// size, interned by IR); every other kernel builds once.
///
/// Every launch comes through here, so the launch limits that need only the kernel, the
/// configuration and the backend ([`crate::limits::check_launch`]: shared memory, grid
/// sizes) are checked here, before anything is built or dispatched: past them a driver
/// asserts or dies (PoCL) rather than returning an error.
pub fn build_for<D: Device + ?Sized>(
    device: &D,
    kernel: &KernelHandle,
    config: LaunchConfig,
) -> Result<Arc<Built>, RuntimeError> {
    use sarek_compiler::ir::specialize;
    let info = device.info();
    // The block against the device first: the most direct reason when both fail.
    check_config(&info, config)?;
    crate::limits::check_launch_with(
        kernel.ir(),
        &config,
        info.backend,
        &info.name,
        device.max_shared_bytes(),
    )?;
    if info.backend == crate::device::Backend::OpenCl && device.always_checked() {
        crate::limits::check_cpu_opencl_launch(kernel.ir(), &config, &info.name)?;
    }
    if specialize::needs_block_size(kernel.ir()) {
        let sized = specialize::block_size(kernel.ir(), config.block[0]);
        return build(device, &device.core().intern(&sized));
    }
    build(device, kernel)
}

/// Check, bind and dispatch one launch of `built`; `timed` asks for the device timer.
pub fn enqueue_built<D: Device + ?Sized>(
    device: &D,
    built: &Arc<Built>,
    config: LaunchConfig,
    args: &[BindArg<'_>],
    timed: bool,
) -> Result<(), RuntimeError> {
    check_config(&device.info(), config)?;
    let core = device.core();
    let trap = match built.abi.trap_status {
        Some(_) => {
            let m = Mem::new(core, 4, device.alloc(4)?);
            device.upload(&m, &[0; 4])?;
            Some(m)
        }
        None => None,
    };
    let mut plan = bind(core, built, config, args, trap.as_ref())?;
    plan.timed = timed;
    plan.launch = core.next_launch();
    device.dispatch(built, &plan)?;
    let keep = plan.buffers().cloned().collect();
    lock(&core.in_flight).push(InFlight {
        id: plan.launch,
        owner: std::thread::current().id(),
        kernel: Some(built.kernel.clone()),
        keep,
        trap,
    });
    Ok(())
}

/// Build (cached) and enqueue one launch of `kernel` on buffers.
pub fn enqueue<D: Device + ?Sized>(
    device: &D,
    kernel: &KernelHandle,
    config: LaunchConfig,
    args: &[BindArg<'_>],
) -> Result<(), RuntimeError> {
    let built = build_for(device, kernel, config)?;
    enqueue_built(device, &built, config, args, false)
}

/// Copy `bytes` bytes from `src` to `dst` on `device` (ordered with the launches around
/// it); both stay alive until the calling thread's next synchronisation, as a launch's
/// buffers do.
pub fn enqueue_copy<D: Device + ?Sized>(
    device: &D,
    src: &Mem,
    dst: &Mem,
    bytes: usize,
) -> Result<(), RuntimeError> {
    let core = device.core();
    device.copy(src, dst, bytes)?;
    core.count_device_copy(bytes);
    lock(&core.in_flight).push(InFlight {
        id: core.next_launch(),
        owner: std::thread::current().id(),
        kernel: None,
        keep: vec![src.clone(), dst.clone()],
        trap: None,
    });
    Ok(())
}

/// Wait for every launch on `device`; the device-timed kernel time of the timed ones, or
/// the first fault among the launches the calling thread enqueued since its last
/// synchronisation, located. Other threads' launches stay in flight (alive, their faults
/// kept) until those threads synchronise.
pub fn synchronize<D: Device + ?Sized>(device: &D) -> Result<Duration, RuntimeError> {
    let core = device.core();
    let me = std::thread::current().id();
    // Every launch of this thread was dispatched before this call, so the wait covers them.
    let waited = device.sync();
    let flights: Vec<InFlight> = {
        let mut all = lock(&core.in_flight);
        let (mine, others) = std::mem::take(&mut *all)
            .into_iter()
            .partition(|f| f.owner == me);
        *all = others;
        mine
    };
    let deferred = {
        let mut all = lock(&core.deferred);
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut *all)
            .into_iter()
            .partition(|(id, _)| flights.iter().any(|f| f.id == *id));
        *all = others;
        // The earliest launch's fault: later launches ran on what it left.
        mine.into_iter().min_by_key(|(id, _)| *id).map(|(_, e)| e)
    };
    let time = waited?;
    if let Some(e) = deferred {
        return Err(e);
    }
    for f in &flights {
        if let Some(word) = &f.trap {
            let mut code = [0u8; 4];
            device.download(word, &mut code)?;
            let code = i32::from_le_bytes(code);
            if let (Some(kernel), true) = (&f.kernel, code != 0) {
                return Err(trap_fault(kernel.ir(), code, device.info().backend));
            }
        }
    }
    // Dropping `flights` releases what the launches kept alive.
    Ok(time)
}

/// Run `kernel` once with host values: vectors uploaded, launched (timed), synchronised,
/// and those the kernel may write downloaded back into `args` (left untouched when the
/// launch fails).
pub fn run_host<D: Device + ?Sized>(
    device: &D,
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
) -> Result<LaunchStats, RuntimeError> {
    let total = Instant::now();
    check_config(&device.info(), config)?;
    // A kernel this device refuses is refused whatever the arguments.
    let handle = device.core().intern(kernel);
    let built = build_for(device, &handle, config)?;
    check_args(kernel, args)?;
    let mut copies: Vec<Option<DeviceVector>> = Vec::with_capacity(args.len());
    for (param, arg) in built.abi.params.iter().zip(args.iter()) {
        copies.push(match (&param.kind, arg) {
            (AbiParamKind::Vector { elem, .. }, ArgValue::Vector(v)) => Some(
                DeviceVector::from_host(device, v, elem.clone(), &param.name)?,
            ),
            _ => None,
        });
    }
    let bind_args: Vec<BindArg<'_>> = args
        .iter()
        .zip(&copies)
        .map(|(a, c)| match (a, c) {
            (_, Some(copy)) => BindArg::Vector(copy),
            (ArgValue::Scalar(l), _) => BindArg::Scalar(*l),
            (ArgValue::Aggregate(ls), _) => BindArg::Aggregate(ls),
            (ArgValue::Vector(_), None) => unreachable!("check_args matched vectors"),
        })
        .collect();
    enqueue_built(device, &built, config, &bind_args, true)?;
    let kernel_time = synchronize(device)?;
    // Vectors the kernel only reads are what they were: not downloaded.
    for ((arg, copy), usage) in args.iter_mut().zip(&copies).zip(handle.uses()) {
        if let (ArgValue::Vector(v), Some(copy)) = (arg, copy)
            && usage.writes
        {
            copy.download(device, v)?;
        }
    }
    Ok(LaunchStats {
        kernel_time,
        total_time: total.elapsed(),
    })
}

/// [`Device::launch`] in checked mode when `checked` (issue 17): on a GPU backend the kernel launches
/// with bounds and divisor checks ([`sarek_compiler::passes::checked`]), and a failed check
/// is a located [`RuntimeError::Fault`] after the launch. A device that always checks
/// ([`Device::always_checked`]: `interp` and `cpu`, with the index and thread in the
/// message; devices on host memory) runs the kernel as it is.
pub fn run_checked(
    device: &dyn Device,
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
    checked: bool,
) -> Result<LaunchStats, RuntimeError> {
    // The launch limits are checked by `build_for`, on the way of every launch.
    if checked && !device.always_checked() {
        let kernel = sarek_compiler::passes::checked::insert_checks(kernel);
        device.launch(&kernel, config, args)
    } else {
        device.launch(kernel, config, args)
    }
}

/// Check that `config` can run on the device `info` describes.
pub fn check_config(info: &DeviceInfo, config: LaunchConfig) -> Result<(), RuntimeError> {
    if config.grid.contains(&0) || config.block.contains(&0) {
        return Err(RuntimeError::Arguments(format!(
            "grid {} and block {} must be positive on every axis",
            dims(config.grid),
            dims(config.block)
        )));
    }
    // Three u32 factors can overflow u64: saturate (the check only needs "too many").
    let threads = config
        .block
        .iter()
        .fold(1u64, |n, &d| n.saturating_mul(u64::from(d)));
    if threads > u64::from(info.max_threads_per_block) {
        return Err(RuntimeError::Arguments(format!(
            "block {} has {threads} threads, more than the {} allowed per block on {} ({})",
            dims(config.block),
            info.max_threads_per_block,
            info.backend,
            info.name
        )));
    }
    Ok(())
}

fn dims(d: [u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

/// Check `args` against `kernel`'s parameters.
pub fn check_args(kernel: &Kernel, args: &[ArgValue]) -> Result<(), RuntimeError> {
    let sig = signature(kernel);
    let err = |m: String| Err(RuntimeError::Arguments(m));
    if sig.len() != args.len() {
        return err(format!(
            "kernel `{}` takes {} arguments, {} given",
            kernel.name,
            sig.len(),
            args.len()
        ));
    }
    for (p, a) in sig.iter().zip(args) {
        let what = |a: &ArgValue| match a {
            ArgValue::Scalar(l) => l.scalar().name().to_string(),
            ArgValue::Aggregate(_) => "an aggregate".to_string(),
            ArgValue::Vector(_) => "a vector".to_string(),
        };
        match (&p.kind, a) {
            (ParamKind::Scalar(s), ArgValue::Scalar(l)) if l.scalar() == *s => {}
            (ParamKind::Aggregate(leaves), ArgValue::Aggregate(vals))
                if vals.len() == leaves.len()
                    && vals.iter().zip(leaves).all(|(v, l)| v.scalar() == l.scalar) => {}
            (ParamKind::Vector { leaves, .. }, ArgValue::Vector(v)) => {
                check_vector(&p.name, &p.type_name, leaves, v)?
            }
            _ => {
                return err(format!(
                    "parameter `{}` has type {}, but {} was given",
                    p.name,
                    p.type_name,
                    what(a)
                ));
            }
        }
    }
    Ok(())
}

fn check_vector(
    name: &str,
    type_name: &str,
    leaves: &[Leaf],
    v: &HostVector,
) -> Result<(), RuntimeError> {
    let fits = v.columns.len() == leaves.len()
        && v.columns
            .iter()
            .zip(leaves)
            .all(|(c, l)| c.scalar() == l.scalar);
    if !fits {
        let given: Vec<&str> = v.columns.iter().map(|c| c.scalar().name()).collect();
        return Err(RuntimeError::Arguments(format!(
            "parameter `{name}` has type {type_name}, but the vector given has columns ({})",
            given.join(", ")
        )));
    }
    if let Some(c) = v.columns.iter().find(|c| c.len() != v.len) {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}` says it has {} elements but a column holds {}",
            v.len,
            c.len()
        )));
    }
    if v.len > i32::MAX as usize {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}` has {} elements; `length` is an int32, so at most {}",
            v.len,
            i32::MAX
        )));
    }
    Ok(())
}
