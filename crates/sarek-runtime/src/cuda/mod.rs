//! The `cuda` backend: CUDA C from the C-family generator, compiled by NVRTC and run through
//! the CUDA driver API, both loaded at run time (cudarc's `dynamic-loading`), so the binary
//! builds and starts where CUDA is absent and [`open`] says what is missing.
//!
//! - Device 0 of the driver; its compute capability picks the NVRTC target `sm_XY`.
//! - Kernels compile to CUBIN through [`nvrtc::ModuleCache`] (on disk, keyed by source,
//!   architecture, driver and NVRTC versions), then load once per process per source.
//! - Arguments follow the ABI descriptor: a vector is a device allocation holding its packed
//!   image (see `opencl::pack`, shared) plus its `int` length; values are passed as their
//!   packed bytes. Vectors are copied back after the launch.
//! - Kernel time comes from CUDA events around the launch.
//! - Floating point: NVRTC runs with `--fmad=false` (no FMA contraction), IEEE division and
//!   square root; math functions keep CUDA's documented ulp bounds.

pub mod nvrtc;

// Packing is shared with the OpenCL backend; compiled here too when that one is off.
#[cfg(feature = "opencl")]
use crate::opencl::pack;
#[cfg(not(feature = "opencl"))]
#[path = "../opencl/pack.rs"]
mod pack;

use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError};
use crate::value::ArgValue;
use cudarc::driver::{result, sys};
use sarek_compiler::abi::{Abi, AbiParamKind, ArgSlot};
use sarek_compiler::back::cfamily::Dialect;
use sarek_compiler::ir::Kernel;
use sarek_compiler::target::{Target, TargetOptions};
use std::collections::HashMap;
use std::ffi::{CString, c_void};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How a device turns IR into a loadable module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Toolchain {
    /// CUDA C from the C-family generator, compiled to CUBIN by NVRTC (backend `cuda`).
    Nvrtc,
    /// PTX from Sarek's own PTX generator, JIT-compiled by the driver (backend `ptx`).
    DriverJit,
}

/// Open device 0 of the CUDA driver, or say why CUDA is unavailable.
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    open_with(Toolchain::Nvrtc)
}

/// Open device 0 of the CUDA driver for kernels emitted directly as PTX (no NVRTC needed).
pub fn open_ptx() -> Result<Arc<dyn Device>, RuntimeError> {
    open_with(Toolchain::DriverJit)
}

fn open_with(toolchain: Toolchain) -> Result<Arc<dyn Device>, RuntimeError> {
    let backend = match toolchain {
        Toolchain::Nvrtc => Backend::Cuda,
        Toolchain::DriverJit => Backend::Ptx,
    };
    let unavailable = |reason: String| RuntimeError::Unavailable { backend, reason };
    // SAFETY: probing for the driver library only loads it.
    if !unsafe { sys::is_culib_present() } {
        return Err(unavailable(
            "the CUDA driver library (libcuda) is not installed".into(),
        ));
    }
    result::init().map_err(|e| unavailable(format!("cuInit failed: {e}")))?;
    let count =
        result::device::get_count().map_err(|e| unavailable(format!("no CUDA device: {e}")))?;
    if count == 0 {
        return Err(unavailable("the driver reports no CUDA device".into()));
    }
    let nvrtc_version = match toolchain {
        Toolchain::Nvrtc => {
            nvrtc::load().map_err(unavailable)?;
            nvrtc::version().map_err(unavailable)?
        }
        Toolchain::DriverJit => (0, 0),
    };
    let dev = result::device::get(0).map_err(|e| unavailable(format!("cuDeviceGet: {e}")))?;
    let attr = |a| {
        // SAFETY: `dev` is a valid device ordinal's handle.
        unsafe { result::device::get_attribute(dev, a) }
            .map_err(|e| unavailable(format!("cuDeviceGetAttribute: {e}")))
    };
    let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let max_threads = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?;
    let name = result::device::get_name(dev).unwrap_or_else(|_| "CUDA device".into());
    let mut driver = 0;
    // SAFETY: valid out-pointer.
    unsafe { sys::cuDriverGetVersion(&mut driver) }
        .result()
        .map_err(|e| unavailable(format!("cuDriverGetVersion: {e}")))?;
    // SAFETY: retains the device's primary context, released in `Drop`.
    let ctx = unsafe { result::primary_ctx::retain(dev) }
        .map_err(|e| unavailable(format!("cuDevicePrimaryCtxRetain: {e}")))?;
    Ok(Arc::new(CudaDevice {
        dev,
        ctx,
        arch: (major * 10 + minor) as u32,
        driver,
        nvrtc_version,
        toolchain,
        cache: nvrtc::ModuleCache::default_location(),
        info: DeviceInfo {
            backend,
            name,
            max_threads_per_block: max_threads as u32,
            subgroups: true,
            float64: true,
        },
        modules: Mutex::new(HashMap::new()),
    }))
}

/// A loaded module and its entry point.
struct Loaded {
    module: sys::CUmodule,
    function: sys::CUfunction,
    abi: Abi,
}

struct CudaDevice {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    /// Compute capability as `major * 10 + minor` (90 on an H100/H200).
    arch: u32,
    driver: i32,
    nvrtc_version: (i32, i32),
    toolchain: Toolchain,
    cache: nvrtc::ModuleCache,
    info: DeviceInfo,
    /// Generated source -> module loaded in `ctx`.
    modules: Mutex<HashMap<String, Arc<Loaded>>>,
}

// SAFETY: driver handles are plain identifiers valid in any thread once `ctx` is current;
// every use makes it current first, and the module table is behind a lock.
unsafe impl Send for CudaDevice {}
unsafe impl Sync for CudaDevice {}
unsafe impl Send for Loaded {}
unsafe impl Sync for Loaded {}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        if let Ok(modules) = self.modules.get_mut() {
            for m in modules.values() {
                // SAFETY: the module was loaded in this context and no launch is running.
                unsafe {
                    let _ = result::ctx::set_current(self.ctx);
                    let _ = result::module::unload(m.module);
                }
            }
        }
        // SAFETY: balances the retain in `open`.
        unsafe {
            let _ = result::primary_ctx::release(self.dev);
        }
    }
}

fn drv(what: &'static str) -> impl Fn(result::DriverError) -> RuntimeError {
    move |e| RuntimeError::Launch(format!("CUDA: {what} failed: {e}"))
}

/// Device memory freed on drop (also on early error returns).
struct DeviceAlloc(sys::CUdeviceptr);

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        // SAFETY: allocated by `malloc_sync` in the current context, freed once.
        unsafe {
            let _ = result::free_sync(self.0);
        }
    }
}

impl CudaDevice {
    fn load(&self, kernel: &Kernel) -> Result<Arc<Loaded>, RuntimeError> {
        let options = TargetOptions {
            subgroups: true,
            float64: true,
            int64_atomics: true,
            checked: false, // issue 17: checks are inserted per launch (`sarek_runtime::checked`)
        };
        let generated = match self.toolchain {
            Toolchain::Nvrtc => {
                sarek_compiler::back::cfamily::generate(kernel, Dialect::Cuda, &options)
                    .map_err(|d| pack::refused(kernel, Dialect::Cuda, &d))?
            }
            Toolchain::DriverJit => sarek_compiler::back::ptx::generate(kernel, &options)
                .map_err(|d| RuntimeError::refused(Target::Ptx, &kernel.name, d))?,
        };
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = modules.get(&generated.source) {
            return Ok(m.clone());
        }
        // The driver takes a CUBIN image, or PTX text terminated by NUL (JIT-compiled).
        let image = match self.toolchain {
            Toolchain::Nvrtc => {
                self.cache
                    .get_or_compile(
                        &generated.source,
                        self.arch,
                        self.driver,
                        self.nvrtc_version,
                        nvrtc::compile,
                    )?
                    .image
            }
            Toolchain::DriverJit => {
                let mut text = generated.source.clone().into_bytes();
                text.push(0);
                text
            }
        };
        // SAFETY: the image is a complete CUBIN or NUL-terminated PTX; the context is current.
        let module = unsafe { result::module::load_data(image.as_ptr().cast()) }.map_err(|e| {
            RuntimeError::Compile(format!(
                "CUDA: the driver refused the module of `{}`: {e}",
                kernel.name
            ))
        })?;
        let name = CString::new(generated.abi.entry_point.clone()).expect("identifier");
        // SAFETY: `module` was just loaded.
        let function = unsafe { result::module::get_function(module, name) }.map_err(|e| {
            RuntimeError::Compile(format!(
                "CUDA: no entry point `{}`: {e}",
                generated.abi.entry_point
            ))
        })?;
        let loaded = Arc::new(Loaded {
            module,
            function,
            abi: generated.abi,
        });
        modules.insert(generated.source, loaded.clone());
        Ok(loaded)
    }
}

impl Device for CudaDevice {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn launch(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<LaunchStats, RuntimeError> {
        let started = Instant::now();
        // SAFETY: the primary context lives as long as `self`.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(drv("making the context current"))?;
        let loaded = self.load(kernel)?;
        let abi = &loaded.abi;
        if args.len() != abi.params.len() {
            return Err(RuntimeError::Arguments(format!(
                "kernel `{}` takes {} arguments, got {}",
                kernel.name,
                abi.params.len(),
                args.len()
            )));
        }
        // Argument images, 8-byte aligned, indexed by kernel argument number.
        let mut slots: Vec<(u32, Vec<u64>)> = Vec::new();
        let mut allocs: Vec<Option<(DeviceAlloc, usize)>> = Vec::new();
        for (param, arg) in abi.params.iter().zip(args.iter()) {
            match (&param.kind, arg) {
                (
                    AbiParamKind::Vector {
                        elem,
                        buffer,
                        length,
                    },
                    ArgValue::Vector(v),
                ) => {
                    let bytes = pack::pack_vector(v, elem, &param.name)?;
                    // SAFETY: fresh allocation of the image's size, then a synchronous copy.
                    let ptr = DeviceAlloc(
                        unsafe { result::malloc_sync(bytes.len()) }.map_err(drv("allocating"))?,
                    );
                    unsafe { result::memcpy_htod_sync(ptr.0, &bytes) }
                        .map_err(drv("copying to the device"))?;
                    let len = i32::try_from(v.len).map_err(|_| {
                        RuntimeError::Arguments(format!(
                            "vector `{}` is longer than int32 allows",
                            param.name
                        ))
                    })?;
                    slots.push((argument(buffer)?, vec![ptr.0]));
                    slots.push((argument(length)?, words(&len.to_le_bytes())));
                    allocs.push(Some((ptr, bytes.len())));
                }
                (AbiParamKind::Value { layout, slot }, a) => {
                    slots.push((
                        argument(slot)?,
                        words(&pack::pack_value(a, layout, &param.name)?),
                    ));
                    allocs.push(None);
                }
                (AbiParamKind::Vector { .. }, _) => {
                    return Err(RuntimeError::Arguments(format!(
                        "parameter `{}` takes a vector",
                        param.name
                    )));
                }
            }
        }
        let trap = match &abi.trap_status {
            Some(slot) => {
                // SAFETY: fresh 4-byte allocation, zeroed by a synchronous copy.
                let ptr =
                    DeviceAlloc(unsafe { result::malloc_sync(4) }.map_err(drv("allocating"))?);
                unsafe { result::memcpy_htod_sync(ptr.0, &[0u8; 4]) }
                    .map_err(drv("copying to the device"))?;
                slots.push((argument(slot)?, vec![ptr.0]));
                Some(ptr)
            }
            None => None,
        };
        slots.sort_by_key(|s| s.0);
        let mut params: Vec<*mut c_void> =
            slots.iter_mut().map(|s| s.1.as_mut_ptr().cast()).collect();
        let start = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(drv("creating an event"))?;
        let end = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
            .map_err(drv("creating an event"))?;
        let stream = result::stream::null();
        let [gx, gy, gz] = config.grid;
        let [bx, by, bz] = config.block;
        // SAFETY: `params` points at one image per kernel argument, in order, alive until
        // the synchronisation below; the function belongs to the current context.
        let launched = unsafe {
            result::event::record(start, stream)
                .and_then(|()| {
                    result::launch_kernel(
                        loaded.function,
                        (gx, gy, gz),
                        (bx, by, bz),
                        0,
                        stream,
                        &mut params,
                    )
                })
                .and_then(|()| result::event::record(end, stream))
                .and_then(|()| result::event::synchronize(end))
        };
        // SAFETY: both events were recorded (or the launch failed before use); synchronised.
        let elapsed = unsafe { result::event::elapsed(start, end) };
        unsafe {
            let _ = result::event::destroy(start);
            let _ = result::event::destroy(end);
        }
        launched.map_err(drv("running the kernel"))?;
        let kernel_time = elapsed.map_or_else(
            |_| started.elapsed(),
            |ms| Duration::from_secs_f64(f64::from(ms) / 1e3),
        );
        for ((param, arg), alloc) in abi.params.iter().zip(args.iter_mut()).zip(&allocs) {
            if let (AbiParamKind::Vector { elem, .. }, ArgValue::Vector(v), Some((ptr, size))) =
                (&param.kind, arg, alloc)
            {
                let mut bytes = vec![0u8; *size];
                // SAFETY: the allocation holds `size` bytes; the kernel has finished.
                unsafe { result::memcpy_dtoh_sync(&mut bytes, ptr.0) }
                    .map_err(drv("copying back"))?;
                pack::unpack_vector(&bytes, v, elem);
            }
        }
        if let Some(ptr) = &trap {
            let mut word = [0u8; 4];
            // SAFETY: the allocation holds 4 bytes; the kernel has finished.
            unsafe { result::memcpy_dtoh_sync(&mut word, ptr.0) }
                .map_err(drv("reading the trap status word"))?;
            let code = i32::from_le_bytes(word);
            if code != 0 {
                return Err(crate::device::trap_fault(kernel, code, self.info().backend));
            }
        }
        Ok(LaunchStats {
            kernel_time,
            total_time: started.elapsed(),
        })
    }
}

fn argument(slot: &ArgSlot) -> Result<u32, RuntimeError> {
    match slot {
        ArgSlot::Argument(n) => Ok(*n),
        other => Err(RuntimeError::Launch(format!(
            "CUDA ABI slot {other:?} is not a kernel argument"
        ))),
    }
}

/// Bytes as 8-byte-aligned words (the driver reads each argument through a pointer).
fn words(bytes: &[u8]) -> Vec<u64> {
    let mut w = vec![0u64; bytes.len().div_ceil(8).max(1)];
    // SAFETY: `w` has at least `bytes.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), w.as_mut_ptr().cast::<u8>(), bytes.len())
    };
    w
}
