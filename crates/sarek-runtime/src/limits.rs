//! Resource limits checked before anything is allocated or built (issue 17, item 4): each a
//! clear error naming the limit and the device, instead of an allocation abort, a driver
//! assertion (PoCL with 4 MB of shared memory), a SIGILL (`--grid 65536,65536` on PoCL) or a
//! raw `CUDA_ERROR_INVALID_VALUE`.
//!
//! Written once here and called from the launch paths ([`crate::launch::run_checked`], the
//! CLI's input preparation). The per-backend figures are the documented limits of the
//! targets where the device API cannot be asked from here; a backend that knows its device's
//! own limits (wgpu, Vulkan) also checks them itself.
//! PORT NOTE (issue 12 restructuring): the tables below can become `DeviceInfo` fields.

use crate::device::{Backend, LaunchConfig, RuntimeError};
use sarek_compiler::Target;
use sarek_compiler::abi::LayoutRules;
use sarek_compiler::ir::analysis::{Limit, Support};
use sarek_compiler::ir::{Kernel, StmtKind, Ty, visit};
use sarek_compiler::types::MemSpace;

/// The most elements a vector may have: lengths and indices are int32.
pub const MAX_VECTOR_LEN: u64 = i32::MAX as u64;

/// Static shared memory per block the backend's target accepts, in bytes. CUDA and PTX:
/// 48 KiB of static `__shared__` (more needs dynamic shared memory and an opt-in);
/// OpenCL: 64 KiB, a portable bound below PoCL's and NVIDIA's `CL_DEVICE_LOCAL_MEM_SIZE`
/// (PoCL asserts with 4 MB); wgpu: WebGPU's default `maxComputeWorkgroupStorageSize`
/// (16 KiB); Vulkan: 32 KiB (lavapipe's and the common `maxComputeSharedMemorySize`).
pub fn max_shared_bytes(backend: Backend) -> Option<u64> {
    match backend {
        Backend::Cuda | Backend::Ptx => Some(48 * 1024),
        Backend::OpenCl => Some(64 * 1024),
        Backend::Wgpu => Some(16 * 1024),
        Backend::Vulkan => Some(32 * 1024),
        Backend::Interp | Backend::Cpu => None,
    }
}

/// Shared arrays one block may declare on `interp` and `cpu`, in bytes (C layout): far above
/// any GPU's (48 KiB to 228 KiB), low enough that a block's arrays, held by every worker
/// thread at once (and by the interpreter at 8 bytes per element), never exhaust memory.
pub const HOST_MAX_SHARED_BYTES: u64 = 16 << 20;

/// The largest per-thread (`Local`) array on `interp` and `cpu`, in bytes: CUDA's 512 KiB, so
/// whatever runs on a GPU runs here.
pub const HOST_MAX_LOCAL_ARRAY_BYTES: u64 = 512 << 10;

/// Per-thread arrays of one block together (threads x bytes per thread) on `interp` and
/// `cpu`: each worker holds one block's worth at a time.
pub const HOST_MAX_BLOCK_LOCAL_BYTES: u64 = 256 << 20;

/// Per-thread arrays of one block together on an OpenCL device whose memory is the host's
/// (PoCL, other CPU OpenCL drivers): PoCL runs a work-group on one thread's stack, every
/// work-item's arrays at once, and 8 MiB of them crashed the process (SIGSEGV); 4 MiB ran.
pub const CPU_OPENCL_MAX_BLOCK_LOCAL_BYTES: u64 = 4 << 20;

/// Threads of one launch on `interp` and `cpu` (grid x block over all axes), and threads along
/// one axis (grid x block): global thread indices are int32, and a launch past 2^32 threads
/// would run for hours (`--grid 65536,65536,65536` ran without end).
pub const HOST_MAX_THREADS: u64 = u32::MAX as u64;
pub const HOST_MAX_THREADS_PER_AXIS: u64 = MAX_THREADS_PER_AXIS;

/// Threads along one axis of a launch (grid x block) on every backend: global thread indices
/// are int32, so 2^31 threads (indices 0 to `i32::MAX`, the default launch over a vector of
/// `i32::MAX` elements) and no more; past it a GPU's indices wrap to negative values that
/// pass an `if i < length v` guard.
pub const MAX_THREADS_PER_AXIS: u64 = 1 << 31;

/// What `interp` and `cpu` support: every feature, and the resource limits above, checked
/// when a kernel is built so that a refusal is located like a GPU target's.
pub fn host_support(backend: Backend, device: &str) -> Support {
    let language = match backend {
        Backend::Interp => "interp",
        _ => "cpu",
    };
    Support::all(Target::Ir)
        .in_language(language)
        .on_device(device)
        .limit(
            Limit::SharedBytes,
            HOST_MAX_SHARED_BYTES,
            "interp and cpu give a block at most 16 MiB of shared arrays",
        )
        .limit(
            Limit::LocalArrayBytes,
            HOST_MAX_LOCAL_ARRAY_BYTES,
            "interp and cpu give a thread at most 512 KiB per array, as CUDA does",
        )
}

/// The launch limits of `interp` and `cpu` that depend on the launch: threads per launch and
/// per axis, and the per-thread arrays of a block together.
/// `local` is [`local_bytes`] of the kernel, computed once when it is built.
pub fn check_host_launch(
    kernel: &Kernel,
    local: u64,
    config: &LaunchConfig,
    backend: Backend,
) -> Result<(), RuntimeError> {
    let threads_per_block = volume(config.block);
    for (axis, name) in ["x", "y", "z"].iter().enumerate() {
        let along = u64::from(config.grid[axis]) * u64::from(config.block[axis]);
        if along > HOST_MAX_THREADS_PER_AXIS {
            return Err(RuntimeError::Launch(format!(
                "grid {} x block {} = {along} threads along {name}: {backend} allows at most {HOST_MAX_THREADS_PER_AXIS} (global thread indices are int32)",
                config.grid[axis], config.block[axis]
            )));
        }
    }
    let threads = volume(config.grid).saturating_mul(threads_per_block);
    if threads > HOST_MAX_THREADS {
        return Err(RuntimeError::Launch(format!(
            "grid {} x block {} = {threads} threads: {backend} runs at most {HOST_MAX_THREADS} threads per launch",
            dims(config.grid),
            dims(config.block)
        )));
    }
    let block_local = local.saturating_mul(threads_per_block);
    if block_local > HOST_MAX_BLOCK_LOCAL_BYTES {
        return Err(RuntimeError::Launch(format!(
            "kernel `{}` declares {local} bytes of per-thread arrays; a block of {threads_per_block} threads needs {block_local} bytes, {backend} allows at most {HOST_MAX_BLOCK_LOCAL_BYTES} per block (use a smaller block or smaller arrays)",
            kernel.name
        )));
    }
    Ok(())
}

/// The launch limit of a CPU OpenCL device ([`crate::Device::always_checked`] on the
/// `opencl` backend): the per-thread arrays of a block together, at most
/// [`CPU_OPENCL_MAX_BLOCK_LOCAL_BYTES`].
pub fn check_cpu_opencl_launch(
    kernel: &Kernel,
    config: &LaunchConfig,
    device: &str,
) -> Result<(), RuntimeError> {
    let local = local_bytes(kernel)?;
    let threads_per_block = volume(config.block);
    let block_local = local.saturating_mul(threads_per_block);
    if block_local > CPU_OPENCL_MAX_BLOCK_LOCAL_BYTES {
        return Err(RuntimeError::Launch(format!(
            "kernel `{}` declares {local} bytes of per-thread arrays; a block of {threads_per_block} threads needs {block_local} bytes, the opencl device ({device}) runs a block on one CPU thread's stack and allows at most {CPU_OPENCL_MAX_BLOCK_LOCAL_BYTES} (use a smaller block or smaller arrays)",
            kernel.name
        )));
    }
    Ok(())
}

/// The product of three sizes, saturating (three u32 factors can overflow u64: a grid of
/// `u32::MAX` on every axis must be refused, not panic).
fn volume(d: [u32; 3]) -> u64 {
    d.iter().fold(1u64, |n, &x| n.saturating_mul(u64::from(x)))
}

fn dims(d: [u32; 3]) -> String {
    format!("{}x{}x{}", d[0], d[1], d[2])
}

/// Blocks per grid axis. CUDA: 2^31 - 1 along x, 65535 along y and z (the driver's raw
/// `CUDA_ERROR_INVALID_VALUE` otherwise); OpenCL: see [`check_launch`]; the shader backends
/// check their device's own `maxComputeWorkGroupCount` themselves.
pub fn max_grid(backend: Backend) -> [u64; 3] {
    match backend {
        Backend::Cuda | Backend::Ptx => [i32::MAX as u64, 65535, 65535],
        _ => [u32::MAX as u64; 3],
    }
}

/// Shared memory one block of `kernel` declares, in bytes (each element at its natural C
/// size: bools as 4 bytes, variants with a 4-byte tag). Errors when a size overflows.
pub fn shared_bytes(kernel: &Kernel) -> Result<u64, RuntimeError> {
    array_bytes(kernel, MemSpace::Shared)
}

/// Bytes of the per-thread arrays of `kernel` and its helpers, summed.
pub fn local_bytes(kernel: &Kernel) -> Result<u64, RuntimeError> {
    array_bytes(kernel, MemSpace::Local)
}

/// Bytes of the arrays in `space` that `kernel` and its helpers declare, summed (for `Local`:
/// per thread). Errors when a size overflows.
fn array_bytes(kernel: &Kernel, space: MemSpace) -> Result<u64, RuntimeError> {
    let mut total: u64 = 0;
    let mut overflow = None;
    let mut bodies = vec![&kernel.body];
    bodies.extend(kernel.functions.iter().map(|f| &f.body));
    for body in bodies {
        visit::for_each_stmt(body, &mut |s| {
            let StmtKind::Array { var } = &s.kind else {
                return;
            };
            let info = kernel.var(*var);
            if let Ty::Array {
                elem,
                space: s,
                size: Some(n),
            } = &info.ty
                && *s == space
            {
                match u64::from(*n)
                    .checked_mul(elem_bytes(kernel, elem))
                    .and_then(|b| total.checked_add(b))
                {
                    Some(t) => total = t,
                    None => overflow = Some(info.name.clone()),
                }
            }
        });
    }
    match overflow {
        Some(name) => Err(RuntimeError::Launch(format!(
            "kernel `{}`: the byte size of array `{name}` overflows",
            kernel.name
        ))),
        None => Ok(total),
    }
}

fn elem_bytes(kernel: &Kernel, ty: &Ty) -> u64 {
    let leaves = sarek_compiler::abi::leaves(kernel, ty);
    let tag = u64::from(matches!(ty, Ty::Variant(_))) * 4;
    tag + leaves
        .iter()
        .map(|l| u64::from(l.scalar.size().max(4)))
        .sum::<u64>()
}

/// Every check that needs only the kernel, the launch and the backend, with the backend's
/// documented shared-memory figure ([`max_shared_bytes`]).
pub fn check_launch(
    kernel: &Kernel,
    config: &LaunchConfig,
    backend: Backend,
    device: &str,
) -> Result<(), RuntimeError> {
    check_launch_with(kernel, config, backend, device, max_shared_bytes(backend))
}

/// [`check_launch`] against `max_shared` bytes of shared memory per block (a device's own
/// limit, [`crate::Device::max_shared_bytes`]).
pub fn check_launch_with(
    kernel: &Kernel,
    config: &LaunchConfig,
    backend: Backend,
    device: &str,
    max_shared: Option<u64>,
) -> Result<(), RuntimeError> {
    // A block-sized shared array (`let%shared (t : T) = ()`) has the launch's block x size.
    let shared = if sarek_compiler::ir::specialize::needs_block_size(kernel) {
        shared_bytes(&sarek_compiler::ir::specialize::block_size(
            kernel,
            config.block[0],
        ))?
    } else {
        shared_bytes(kernel)?
    };
    if let Some(max) = max_shared
        && shared > max
    {
        return Err(RuntimeError::Launch(format!(
            "kernel `{}` declares {shared} bytes of shared memory per block; the {backend} device ({device}) allows {max}",
            kernel.name
        )));
    }
    for (axis, name) in ["x", "y", "z"].iter().enumerate() {
        let along = u64::from(config.grid[axis]) * u64::from(config.block[axis]);
        if along > MAX_THREADS_PER_AXIS {
            return Err(RuntimeError::Launch(format!(
                "grid {} x block {} = {along} threads along {name}: global thread indices are int32, so at most {MAX_THREADS_PER_AXIS} threads along an axis ({backend}, {device})",
                config.grid[axis], config.block[axis]
            )));
        }
    }
    let max = max_grid(backend);
    for (axis, name) in ["x", "y", "z"].iter().enumerate() {
        let g = u64::from(config.grid[axis]);
        if g > max[axis] {
            return Err(RuntimeError::Launch(format!(
                "grid of {g} blocks along {name}: the {backend} device ({device}) allows at most {}",
                max[axis]
            )));
        }
    }
    // OpenCL counts work-items and work-groups of the whole launch in 32 bits on PoCL (a
    // `--grid 65536,65536` launch died with SIGILL); CUDA allows far more.
    if backend == Backend::OpenCl {
        let threads = volume(config.grid).saturating_mul(volume(config.block));
        if threads > u64::from(u32::MAX) {
            return Err(RuntimeError::Launch(format!(
                "grid {:?} x block {:?} = {threads} threads: the {backend} device ({device}) allows at most {} per launch",
                config.grid,
                config.block,
                u32::MAX
            )));
        }
    }
    Ok(())
}

/// Where a device keeps a launch's vectors, as far as this process's memory is concerned:
/// what [`peak_bytes`] counts besides the caller's own columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residence {
    /// In memory of its own (a GPU): the host packs one vector at a time into a staging copy
    /// when its columns are not already the device's bytes.
    Device(LayoutRules),
    /// In buffers in this process's memory (PoCL and other CPU OpenCL drivers, llvmpipe under
    /// Vulkan; `cpu` when its native code runs on them in place), plus the staging copy.
    HostBuffers(LayoutRules),
    /// `wgpu` on llvmpipe: buffers in this process's memory, each upload's own copy queued
    /// until the queue runs it, and a download through a mapped copy read out into another.
    QueuedHostBuffers(LayoutRules),
    /// `interp`, and `cpu` when a launch of the kernel may run on the interpreter core: a host
    /// buffer per vector ([`crate::host::HOST_LAYOUT`]), the launch's columns unpacked from
    /// it, and the interpreter core's one 8-byte word per leaf element.
    Interpreter,
}

impl Residence {
    /// Where `device` keeps the vectors of `kernel`: the interpreter core holds its own
    /// copies, `cpu`'s native code works in place when it can ([`crate::cpu::runs_in_place`]),
    /// a device whose memory is the host's ([`crate::Device::always_checked`], llvmpipe
    /// under wgpu too) keeps buffers here, any other its own memory.
    pub fn of(device: &dyn crate::Device, kernel: &Kernel) -> Residence {
        let info = device.info();
        let rules = device.layout_rules();
        match info.backend {
            Backend::Cpu if crate::cpu::runs_in_place(kernel) => Residence::HostBuffers(rules),
            Backend::Interp | Backend::Cpu => Residence::Interpreter,
            Backend::Wgpu if info.name.contains("llvmpipe") => Residence::QueuedHostBuffers(rules),
            _ if device.always_checked() || info.name.contains("llvmpipe") => {
                Residence::HostBuffers(rules)
            }
            _ => Residence::Device(rules),
        }
    }
}

/// What a command keeps in this process's memory while it launches a kernel, for
/// [`peak_bytes`].
#[derive(Clone, Copy, Debug)]
pub enum Command<'a> {
    /// `sarek run` and `sarek bench`: the arguments and one device's holding.
    Run(Residence),
    /// `sarek verify`: the arguments and interp's results (computed on a copy, by the
    /// interpreter), then, device after device, another copy of the arguments and that
    /// device's holding.
    Verify(&'a [Residence]),
}

/// Bytes of this process's memory `command` holds at its peak for the vectors of `kernel`,
/// `len(name)` elements each. Each vector is counted in the forms it is held in: the
/// caller's columns (a bool is one byte), a buffer laid out by the device's rules, the
/// interpreter's words, and the largest staging copy of one vector.
pub fn peak_bytes(kernel: &Kernel, len: &dyn Fn(&str) -> u64, command: Command<'_>) -> u64 {
    let vectors: Vec<(&Ty, u64)> = (kernel.params.iter())
        .filter_map(|p| {
            let var = kernel.var(*p);
            match &var.ty {
                Ty::Vector(elem) => Some((elem.as_ref(), len(&var.name))),
                _ => None,
            }
        })
        .collect();
    let sum = |bytes: &dyn Fn(&Ty) -> u64| {
        (vectors.iter()).fold(0u64, |t, (elem, n)| {
            t.saturating_add(bytes(elem).saturating_mul(*n))
        })
    };
    let leaves = |elem: &Ty| sarek_compiler::abi::leaves(kernel, elem);
    let columns = sum(&|elem| {
        leaves(elem)
            .iter()
            .map(|l| u64::from(l.scalar.size()))
            .sum()
    });
    let stride = |rules: LayoutRules| {
        move |elem: &Ty| u64::from(sarek_compiler::abi::elem_layout(kernel, elem, rules).stride)
    };
    // A vector whose one column is not its buffer's bytes as they are is packed (uploads) or
    // unpacked (downloads) through a copy of the buffer, one vector at a time.
    let staging = |rules: LayoutRules| {
        (vectors.iter())
            .filter(|(elem, _)| {
                !crate::pack::is_dense(&sarek_compiler::abi::elem_layout(kernel, elem, rules))
            })
            .map(|(elem, n)| stride(rules)(elem).saturating_mul(*n))
            .max()
            .unwrap_or(0)
    };
    let held = |residence: Residence| match residence {
        Residence::Device(rules) => staging(rules),
        Residence::HostBuffers(rules) => sum(&stride(rules)).saturating_add(staging(rules)),
        Residence::QueuedHostBuffers(rules) => {
            let largest = (vectors.iter())
                .map(|(elem, n)| stride(rules)(elem).saturating_mul(*n))
                .max()
                .unwrap_or(0);
            (sum(&stride(rules)).saturating_mul(2))
                .saturating_add(staging(rules).max(largest.saturating_mul(2)))
        }
        Residence::Interpreter => {
            let words = sum(&|elem| 8 * leaves(elem).len() as u64);
            // The staging copy that puts results back is made once the words are freed.
            (sum(&stride(crate::host::HOST_LAYOUT)))
                .saturating_add(columns)
                .saturating_add(words)
        }
    };
    match command {
        Command::Run(residence) => columns.saturating_add(held(residence)),
        Command::Verify(devices) => {
            let each = devices
                .iter()
                .map(|d| columns.saturating_add(held(*d)))
                .fold(held(Residence::Interpreter), u64::max);
            columns.saturating_mul(2).saturating_add(each)
        }
    }
}

/// `--size` and `--len NAME=N` before any vector is allocated: every vector at most
/// [`MAX_VECTOR_LEN`] elements, and what `command` will hold of them ([`peak_bytes`])
/// within the memory this machine has available. A vector named in `lengths` has that
/// length, the others `size`.
pub fn check_size(
    kernel: &Kernel,
    size: u64,
    lengths: &[(&str, u64)],
    command: Command<'_>,
) -> Result<(), String> {
    check_size_within(kernel, size, lengths, command, available_memory())
}

/// [`check_size`] against `available` bytes (`None`: unknown, only the int32 limit).
fn check_size_within(
    kernel: &Kernel,
    size: u64,
    lengths: &[(&str, u64)],
    command: Command<'_>,
    available: Option<u64>,
) -> Result<(), String> {
    if size > MAX_VECTOR_LEN {
        return Err(format!(
            "--size {size}: vectors have at most {MAX_VECTOR_LEN} elements (lengths and indices are int32)"
        ));
    }
    let len = |name: &str| {
        (lengths.iter())
            .find(|(given, _)| *given == name)
            .map_or(size, |(_, len)| *len)
    };
    for p in &kernel.params {
        let var = kernel.var(*p);
        if matches!(var.ty, Ty::Vector(_)) && len(&var.name) > MAX_VECTOR_LEN {
            return Err(format!(
                "--len {}={}: vectors have at most {MAX_VECTOR_LEN} elements (lengths and indices are int32)",
                var.name,
                len(&var.name)
            ));
        }
    }
    let bytes = peak_bytes(kernel, &len, command);
    if let Some(available) = available
        && bytes > available
    {
        let lens: String = lengths
            .iter()
            .map(|(name, len)| format!(", --len {name}={len}"))
            .collect();
        let copies = match command {
            Command::Run(Residence::Device(_)) => "the arguments and a staging copy",
            Command::Run(Residence::HostBuffers(_) | Residence::QueuedHostBuffers(_)) => {
                "the arguments and the device's buffers, which are in host memory"
            }
            Command::Run(Residence::Interpreter) => {
                "the arguments, the device's buffers and the interpreter's copy"
            }
            Command::Verify(_) => "the arguments, interp's results and each backend's copies",
        };
        return Err(format!(
            "--size {size}{lens}: the vectors of kernel `{}` need {bytes} bytes ({copies}), more than the {available} bytes of memory available",
            kernel.name
        ));
    }
    Ok(())
}

/// `MemAvailable` of `/proc/meminfo` (Linux); `None` elsewhere.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The build of `kernel` on a device whose memory is the host process's own (`on_host`:
/// PoCL and other CPU OpenCL devices, llvmpipe under Vulkan): the kernel in checked mode
/// ([`sarek_compiler::passes::checked`]), interned so that a fault finds its trap site. There
/// an out-of-bounds access of a kernel writes the process's heap (PoCL died of it from a safe
/// launch), so no launch runs unchecked; elsewhere the kernel is unchanged.
pub fn check_on_host(
    core: &crate::memory::DeviceCore,
    on_host: bool,
    kernel: &crate::kernel::KernelHandle,
) -> crate::kernel::KernelHandle {
    if on_host {
        core.intern(&sarek_compiler::passes::checked::insert_checks(kernel.ir()))
    } else {
        kernel.clone()
    }
}

/// The loop iterations a thread may run on a device that stops its loops silently past a
/// budget (llvmpipe: lavapipe, and wgpu on it), for `passes::loop_budget`; `None` elsewhere.
pub fn loop_budget(device_name: &str) -> Option<u32> {
    device_name
        .contains("llvmpipe")
        .then_some(sarek_compiler::passes::loop_budget::LLVMPIPE_LOOP_BUDGET)
}

/// The build of `kernel` on a device with a loop budget (see [`loop_budget`]): the kernel
/// with the pass's canaries, interned so that a fault finds its trap site in the kernel the
/// device ran.
pub fn guard_loops(
    core: &crate::memory::DeviceCore,
    device_name: &str,
    kernel: &crate::kernel::KernelHandle,
) -> crate::kernel::KernelHandle {
    match loop_budget(device_name) {
        Some(budget) => core.intern(&sarek_compiler::passes::loop_budget::guard_loops(
            kernel.ir(),
            budget,
        )),
        None => kernel.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sarek_compiler::ir::build::KernelBuilder;
    use sarek_compiler::ir::{Stmt, StmtKind};
    use sarek_compiler::types::Scalar;

    fn shared_kernel(n: u32) -> Kernel {
        let mut kb = KernelBuilder::new("k");
        let s = kb.array("s", Ty::Scalar(Scalar::F32), MemSpace::Shared, n);
        kb.finish(vec![Stmt {
            kind: StmtKind::Array { var: s },
            span: Default::default(),
        }])
    }

    #[test]
    fn a_cpu_opencl_block_of_per_thread_arrays_is_refused_past_4_mib() {
        // 8192 int32 per thread: 32 KiB; a block of 128 threads is 4 MiB (ran on PoCL), one
        // of 256 is 8 MiB (PoCL crashed with SIGSEGV).
        let mut kb = KernelBuilder::new("k");
        let a = kb.array("a", Ty::Scalar(Scalar::I32), MemSpace::Local, 8192);
        let k = kb.finish(vec![Stmt {
            kind: StmtKind::Array { var: a },
            span: Default::default(),
        }]);
        let block = |n: u32| LaunchConfig {
            grid: [1, 1, 1],
            block: [n, 1, 1],
        };
        check_cpu_opencl_launch(&k, &block(128), "PoCL").unwrap();
        let e = check_cpu_opencl_launch(&k, &block(256), "PoCL").unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("8388608 bytes") && text.contains("4194304"),
            "{text}"
        );
    }

    #[test]
    fn shared_memory_is_counted_and_refused_past_the_backend_limit() {
        let k = shared_kernel(65536); // 256 KiB of float32
        assert_eq!(shared_bytes(&k).unwrap(), 262_144);
        let e = check_launch(&k, &LaunchConfig::linear(64), Backend::Cuda, "H200").unwrap_err();
        assert!(e.to_string().contains("262144 bytes"), "{e}");
        assert!(e.to_string().contains("allows 49152"), "{e}");
        check_launch(&k, &LaunchConfig::linear(64), Backend::Interp, "interp").unwrap();
        check_launch(
            &shared_kernel(1024),
            &LaunchConfig::linear(64),
            Backend::Wgpu,
            "x",
        )
        .unwrap();
    }

    #[test]
    fn grids_past_the_axis_limits_are_refused() {
        let k = shared_kernel(1);
        let config = LaunchConfig {
            grid: [65536, 65536, 1],
            block: [256, 1, 1],
        };
        let e = check_launch(&k, &config, Backend::OpenCl, "PoCL").unwrap_err();
        assert!(e.to_string().contains("1099511627776 threads"), "{e}");
        let e = check_launch(&k, &config, Backend::Cuda, "H200").unwrap_err();
        assert!(e.to_string().contains("along y"), "{e}");
    }

    #[test]
    fn threads_along_an_axis_fit_int32_indices_on_every_backend() {
        let k = shared_kernel(1);
        // The default launch over i32::MAX elements: 2^31 threads, indices up to i32::MAX.
        let at_most = LaunchConfig::linear(i32::MAX as u32);
        assert_eq!(u64::from(at_most.grid[0]) * 256, 1 << 31);
        let past = LaunchConfig {
            grid: [at_most.grid[0] + 1, 1, 1],
            block: [256, 1, 1],
        };
        for backend in [
            Backend::Cuda,
            Backend::OpenCl,
            Backend::Wgpu,
            Backend::Interp,
        ] {
            check_launch(&k, &at_most, backend, "d").unwrap();
            let e = check_launch(&k, &past, backend, "d").unwrap_err();
            assert!(e.to_string().contains("threads along x"), "{e}");
        }
    }

    #[test]
    fn sizes_past_int32_are_refused_before_allocating() {
        let mut kb = KernelBuilder::new("k");
        kb.vector("v", Ty::Scalar(Scalar::F64));
        let k = kb.finish(Vec::new());
        let run = Command::Run(Residence::Interpreter);
        let e = check_size(&k, 1 << 31, &[], run).unwrap_err();
        assert!(e.contains("int32"), "{e}");
        let e = check_size(&k, 1_000_000_000_000, &[], run).unwrap_err();
        assert!(e.contains("int32"), "{e}");
        check_size(&k, 1024, &[], run).unwrap();
        // `--len v=N` overrides --size for `v`, under the same limits.
        let e = check_size(&k, 1024, &[("v", 3_000_000_000)], run).unwrap_err();
        assert!(
            e.starts_with("--len v=3000000000: vectors have at most"),
            "{e}"
        );
        check_size(&k, 1 << 40, &[], run).unwrap_err();
        check_size(&k, 4, &[("v", 1024), ("other", 1 << 40)], run).unwrap();
        // float64 on the interpreter: 8 (columns) + 8 (buffer) + 8 (unpacked) + 8 (words).
        let past = |available: u64| {
            check_size_within(&k, 4, &[("v", available / 32 + 1)], run, Some(available))
        };
        let e = past(1 << 30).unwrap_err();
        assert!(
            e.contains("--len v=") && e.contains("memory available"),
            "{e}"
        );
        check_size_within(&k, 4, &[("v", (1 << 30) / 32)], run, Some(1 << 30)).unwrap();
    }

    /// A kernel of `source` (one kernel `k`), lowered.
    fn lowered(source: &str) -> Kernel {
        let mut sources = sarek_compiler::SourceMap::new();
        let file = sources.add("k.sarek", source);
        let program = sarek_compiler::check(&sources, file).expect("checks");
        sarek_compiler::lower_kernel(&program, "k").expect("lowers")
    }

    /// Per element, by hand: a float32 vector is 4 bytes as a column and in every buffer
    /// layout (dense: no staging copy), 8 as the interpreter's word. A record
    /// `{ i : int32; d : float64; b : bool }` is 13 bytes as columns (a bool column holds one
    /// byte), 24 in a C buffer (`d` aligned to 8, the stride to 8) and in std430 (the bool a
    /// 4-byte word), 24 as words (three leaves); it is never dense, so it has a staging copy.
    #[test]
    fn the_estimate_counts_every_copy_the_device_holds() {
        let k = lowered(
            "type r = { i : int32; d : float64; b : bool }\n\
             let%kernel k (a : float32 vector) (x : r vector) (n : int32) =\n\
               let t = global_thread_id in\n\
               if t < n then a.(t) <- a.(t) +. 1.0\n",
        );
        let (na, nx) = (1000u64, 10u64);
        let len = |name: &str| if name == "a" { na } else { nx };
        let columns = 4 * na + 13 * nx;
        let interp_held = (4 * na + 24 * nx) + columns + (8 * na + 24 * nx);
        assert_eq!(
            peak_bytes(&k, &len, Command::Run(Residence::Interpreter)),
            columns + interp_held
        );
        let std430 = Residence::Device(LayoutRules::Std430);
        assert_eq!(
            peak_bytes(&k, &len, Command::Run(std430)),
            columns + 24 * nx
        );
        let pocl = Residence::HostBuffers(crate::host::HOST_LAYOUT);
        let pocl_held = (4 * na + 24 * nx) + 24 * nx;
        assert_eq!(
            peak_bytes(&k, &len, Command::Run(pocl)),
            columns + pocl_held
        );
        // verify: the arguments and interp's results throughout, then the larger of interp's
        // holding and a device's copy of the arguments with its holding.
        assert_eq!(
            peak_bytes(&k, &len, Command::Verify(&[std430, pocl])),
            2 * columns + interp_held.max(columns + pocl_held)
        );
        assert_eq!(
            peak_bytes(&k, &len, Command::Verify(&[])),
            2 * columns + interp_held
        );
        // wgpu on llvmpipe: buffers and their queued upload copies, and the largest vector
        // twice for a download (the mapped copy and its read-out).
        let wgpu = Residence::QueuedHostBuffers(LayoutRules::Std430);
        let buffers = 4 * na + 24 * nx;
        assert_eq!(
            peak_bytes(&k, &len, Command::Run(wgpu)),
            columns + 2 * buffers + 2 * (4 * na).max(24 * nx)
        );
        // Only the float32 vector: dense everywhere, so no staging copy.
        let only_a = |name: &str| if name == "a" { na } else { 0 };
        assert_eq!(peak_bytes(&k, &only_a, Command::Run(std430)), 4 * na);
    }

    #[test]
    fn a_size_the_host_copy_fits_is_refused_when_the_interpreter_would_not() {
        let mut kb = KernelBuilder::new("k");
        kb.vector("v", Ty::Scalar(Scalar::F32));
        let k = kb.finish(Vec::new());
        // 1 GiB available; 2^27 float32 elements are 512 MiB as the caller's column alone
        // (what the check counted before), 2.5 GiB with the interpreter's copies.
        let size = 1 << 27;
        let available = Some(1 << 30);
        let gpu = Command::Run(Residence::Device(LayoutRules::Std430));
        check_size_within(&k, size, &[], gpu, available).unwrap();
        let e = check_size_within(
            &k,
            size,
            &[],
            Command::Run(Residence::Interpreter),
            available,
        )
        .unwrap_err();
        assert!(e.contains(&format!("need {} bytes", 20u64 << 27)), "{e}");
        assert!(e.contains("interpreter"), "{e}");
    }
}
