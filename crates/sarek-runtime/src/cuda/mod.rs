//! The `cuda` backend: CUDA C from the C-family generator, compiled by NVRTC and run through
//! the CUDA driver API, both loaded at run time (cudarc's `dynamic-loading`), so the binary
//! builds and starts where CUDA is absent and [`open`] says what is missing.
//!
//! - Device 0 of the driver; its compute capability picks the NVRTC target `sm_XY`.
//! - Kernels compile to CUBIN through [`nvrtc::ModuleCache`] (on disk, keyed by source,
//!   architecture, driver and NVRTC versions), then load once per device per build key.
//! - Buffers are `cuMemAlloc` allocations; uploads are synchronous copies on the legacy
//!   default stream, which launches use too, so everything is in order. Downloads of
//!   [`staging::MIN_STAGED`] bytes or more go through page-locked staging chunks, copied
//!   asynchronously on the same stream while the host empties the previous chunk
//!   ([`staging`]); smaller ones are one synchronous copy. Copies between buffers are
//!   `cuMemcpyDtoDAsync` on that stream.
//! - Dispatch passes the plan's positional arguments ([`crate::bind`]) to `cuLaunchKernel`
//!   and returns; a timed launch records two events around itself, read at `sync`
//!   (`cuCtxSynchronize`), which is also where a device error of a launch appears.
//! - Floating point: NVRTC runs with `--fmad=false` (no FMA contraction), IEEE division and
//!   square root; math functions keep CUDA's documented ulp bounds.

pub mod nvrtc;
pub mod staging;

use crate::bind::{LaunchPlan, Positional};
use crate::device::{Backend, Device, DeviceInfo, RuntimeError};
use crate::kernel::{Built, KernelHandle};
use crate::memory::{Allocation, DeviceCore, Mem};
use cudarc::driver::{result, sys};
use sarek_compiler::abi::LayoutRules;
use sarek_compiler::back::cfamily::Dialect;
use sarek_compiler::target::{Target, TargetOptions};
use std::ffi::{CString, c_void};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
    Ok(crate::memory::register(CudaDevice {
        dev,
        ctx,
        arch: (major * 10 + minor) as u32,
        driver,
        nvrtc_version,
        toolchain,
        cache: nvrtc::ModuleCache::default_location(),
        core: DeviceCore::new(format!("{backend} ({name})")),
        timed: Mutex::new(Vec::new()),
        staging: Mutex::new(None),
        info: DeviceInfo {
            backend,
            name,
            max_threads_per_block: max_threads as u32,
            subgroups: true,
            float64: true,
        },
    }))
}

/// A loaded module and its entry point, unloaded on drop.
struct Loaded {
    ctx: sys::CUcontext,
    module: sys::CUmodule,
    function: sys::CUfunction,
}

impl Drop for Loaded {
    fn drop(&mut self) {
        // SAFETY: loaded in `ctx`, which the device keeps until its builds are dropped.
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::module::unload(self.module);
        }
    }
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
    core: DeviceCore,
    /// Event pairs around the timed launches since the last sync.
    timed: Mutex<Vec<(sys::CUevent, sys::CUevent)>>,
    /// Page-locked download staging, made by the first large download (`None` inside
    /// until then; `Err` when the driver could not pin it: downloads then copy directly).
    staging: Mutex<Option<Result<Pinned, RuntimeError>>>,
}

/// [`staging::SLOTS`] page-locked chunks of [`staging::CHUNK`] bytes and the event marking
/// each one's copy done.
struct Pinned {
    base: *mut u8,
    done: [sys::CUevent; staging::SLOTS],
}

impl Pinned {
    /// Allocate in the current context.
    fn new() -> Result<Pinned, RuntimeError> {
        // SAFETY: a plain page-locked allocation, freed in `release`.
        let base = unsafe { result::malloc_host(staging::CHUNK * staging::SLOTS, 0) }
            .map_err(drv("pinning download staging"))?;
        let mut done = [std::ptr::null_mut(); staging::SLOTS];
        for (k, e) in done.iter_mut().enumerate() {
            match result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING) {
                Ok(ev) => *e = ev,
                Err(err) => {
                    // SAFETY: made above, none used yet.
                    unsafe {
                        done[..k].iter().for_each(|e| {
                            let _ = result::event::destroy(*e);
                        });
                        let _ = result::free_host(base);
                    }
                    return Err(drv("creating an event")(err));
                }
            }
        }
        Ok(Pinned {
            base: base.cast(),
            done,
        })
    }

    fn slot(&self, k: usize) -> *mut u8 {
        // SAFETY: `k < SLOTS`, inside the allocation.
        unsafe { self.base.add(k * staging::CHUNK) }
    }

    /// Free everything (the context current, no copy in flight).
    fn release(&self) {
        // SAFETY: made by `new`, released once (by the device's drop).
        unsafe {
            for e in self.done {
                let _ = result::event::destroy(e);
            }
            let _ = result::free_host(self.base.cast());
        }
    }
}

// SAFETY: driver handles are plain identifiers valid in any thread once `ctx` is current;
// every use makes it current first, and the mutable tables (and the staging memory) are
// behind locks.
unsafe impl Send for CudaDevice {}
unsafe impl Sync for CudaDevice {}
unsafe impl Send for Loaded {}
unsafe impl Sync for Loaded {}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // Modules unload and staging is freed while the context is still retained.
        self.core.clear_builds();
        let staging = self.staging.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(Ok(pinned)) = staging.take()
            && self.current().is_ok()
        {
            let _ = result::ctx::synchronize();
            pinned.release();
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

/// Device memory, freed on drop.
struct CudaAlloc {
    ctx: sys::CUcontext,
    ptr: sys::CUdeviceptr,
}

// SAFETY: a device pointer is a plain address, valid in any thread with the context current.
unsafe impl Send for CudaAlloc {}
unsafe impl Sync for CudaAlloc {}

impl Allocation for CudaAlloc {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for CudaAlloc {
    fn drop(&mut self) {
        // SAFETY: allocated by `malloc_sync` in `ctx`, freed once; launches using it have
        // finished (they keep their buffers alive until the sync that waited for them).
        unsafe {
            let _ = result::ctx::set_current(self.ctx);
            let _ = result::free_sync(self.ptr);
        }
    }
}

impl CudaDevice {
    fn current(&self) -> Result<(), RuntimeError> {
        // SAFETY: the primary context lives as long as `self`.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(drv("making the context current"))
    }

    fn load(
        &self,
        kernel: &KernelHandle,
    ) -> Result<(Loaded, sarek_compiler::abi::Abi), RuntimeError> {
        let options = TargetOptions {
            subgroups: true,
            float64: true,
            int64_atomics: true,
            checked: false, // issue 17: checks are inserted per launch (`sarek_runtime::checked`)
            portable: false,
        };
        let ir = kernel.ir();
        let support = match self.toolchain {
            Toolchain::Nvrtc => sarek_compiler::back::support::cuda(),
            Toolchain::DriverJit => sarek_compiler::back::support::ptx(),
        };
        crate::capability::check(ir, &support.on_device(&self.info.name))?;
        let generated = match self.toolchain {
            Toolchain::Nvrtc => {
                sarek_compiler::back::cfamily::generate(ir, Dialect::Cuda, &options)
                    .map_err(|d| RuntimeError::refused(Target::Cuda, &ir.name, d))?
            }
            Toolchain::DriverJit => sarek_compiler::back::ptx::generate(ir, &options)
                .map_err(|d| RuntimeError::refused(Target::Ptx, &ir.name, d))?,
        };
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
        self.current()?;
        // SAFETY: the image is a complete CUBIN or NUL-terminated PTX; the context is current.
        let module = unsafe { result::module::load_data(image.as_ptr().cast()) }.map_err(|e| {
            RuntimeError::Compile(format!(
                "CUDA: the driver refused the module of `{}`: {e}",
                ir.name
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
        Ok((
            Loaded {
                ctx: self.ctx,
                module,
                function,
            },
            generated.abi,
        ))
    }
}

impl Device for CudaDevice {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn core(&self) -> &DeviceCore {
        &self.core
    }

    fn layout_rules(&self) -> LayoutRules {
        match self.toolchain {
            Toolchain::Nvrtc => sarek_compiler::back::cfamily::LAYOUT,
            Toolchain::DriverJit => sarek_compiler::back::ptx::PTX_LAYOUT,
        }
    }

    fn build(&self, kernel: &KernelHandle) -> Result<Built, RuntimeError> {
        let (loaded, abi) = self.load(kernel)?;
        Ok(Built {
            kernel: kernel.clone(),
            abi,
            exe: Box::new(loaded),
        })
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn Allocation>, RuntimeError> {
        self.current()?;
        // SAFETY: a plain allocation in the current context.
        let ptr = unsafe { result::malloc_sync(bytes) }.map_err(|e| {
            if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                RuntimeError::OutOfMemory {
                    device: self.core.name().to_string(),
                    bytes,
                }
            } else {
                drv("allocating")(e)
            }
        })?;
        Ok(Box::new(CudaAlloc { ctx: self.ctx, ptr }))
    }

    fn upload(&self, mem: &Mem, bytes: &[u8]) -> Result<(), RuntimeError> {
        self.current()?;
        // SAFETY: the allocation holds at least `bytes.len()` bytes (the caller sized it).
        unsafe { result::memcpy_htod_sync(mem.raw::<CudaAlloc>().ptr, bytes) }
            .map_err(drv("copying to the device"))
    }

    fn download(&self, mem: &Mem, out: &mut [u8]) -> Result<(), RuntimeError> {
        self.current()?;
        let src = mem.raw::<CudaAlloc>().ptr;
        // Small downloads (trap words, results of a few elements) skip the staging lock.
        let mut guard = (out.len() >= staging::MIN_STAGED)
            .then(|| self.staging.lock().unwrap_or_else(|p| p.into_inner()));
        let pinned = match guard.as_deref_mut() {
            None => None,
            Some(Some(p)) => p.as_ref().ok(),
            Some(none) => none.insert(Pinned::new()).as_ref().ok(),
        };
        let Some(pinned) = pinned else {
            // SAFETY: the allocation holds at least `out.len()` bytes; the synchronous copy
            // on the legacy stream waits for earlier launches.
            return unsafe { result::memcpy_dtoh_sync(out, src) }.map_err(drv("copying back"));
        };
        let stream = result::stream::null();
        let outcome = staging::schedule(
            out.len(),
            staging::CHUNK,
            staging::SLOTS,
            |slot, r| {
                // SAFETY: the slot holds CHUNK >= r.len() bytes and was drained (its previous
                // copy waited for) before this fill; the source range is inside the
                // allocation; the copy is ordered after earlier launches on the stream.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(
                        pinned.slot(slot).cast(),
                        src + r.start as u64,
                        r.len(),
                        stream,
                    )
                    .result()
                    .map_err(drv("copying back"))?;
                    result::event::record(pinned.done[slot], stream)
                        .map_err(drv("recording an event"))
                }
            },
            |slot, r| {
                // SAFETY: the event follows the slot's copy; once it is reached the slot
                // holds `r.len()` bytes and nothing writes it until the next fill.
                unsafe {
                    result::event::synchronize(pinned.done[slot]).map_err(drv("copying back"))?;
                    let filled = std::slice::from_raw_parts(pinned.slot(slot), r.len());
                    staging::drain(filled, &mut out[r]);
                }
                Ok(())
            },
        );
        if outcome.is_err() {
            // No copy may still be writing the staging when the next download fills it.
            let _ = result::ctx::synchronize();
        }
        outcome
    }

    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), RuntimeError> {
        self.current()?;
        // SAFETY: both allocations hold at least `bytes` bytes and are distinct; the copy is
        // ordered on the legacy stream with the launches, and the runtime keeps both alive
        // until the next synchronisation.
        unsafe {
            result::memcpy_dtod_async(
                dst.raw::<CudaAlloc>().ptr,
                src.raw::<CudaAlloc>().ptr,
                bytes,
                result::stream::null(),
            )
        }
        .map_err(drv("copying on the device"))
    }

    fn dispatch(&self, built: &Built, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        let loaded = built.exe::<Loaded>();
        self.current()?;
        // Argument images, 8-byte aligned, in kernel argument order.
        let mut images: Vec<[u64; 4]> = Vec::with_capacity(plan.positional.len());
        for arg in &plan.positional {
            let mut w = [0u64; 4];
            match arg {
                Positional::Mem(m) => w[0] = m.raw::<CudaAlloc>().ptr,
                Positional::Bytes(b) if b.len() <= 32 => {
                    bytemuck::cast_slice_mut::<u64, u8>(&mut w)[..b.len()].copy_from_slice(b)
                }
                Positional::Bytes(b) => {
                    return Err(RuntimeError::Launch(format!(
                        "CUDA: a by-value argument of {} bytes (at most 32 are passed)",
                        b.len()
                    )));
                }
            }
            images.push(w);
        }
        let mut params: Vec<*mut c_void> =
            images.iter_mut().map(|w| w.as_mut_ptr().cast()).collect();
        let stream = result::stream::null();
        let [gx, gy, gz] = plan.config.grid;
        let [bx, by, bz] = plan.config.block;
        let events = if plan.timed {
            let start = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
                .map_err(drv("creating an event"))?;
            let end = result::event::create(sys::CUevent_flags::CU_EVENT_DEFAULT)
                .map_err(drv("creating an event"))?;
            // SAFETY: fresh events on the current context's legacy stream.
            unsafe { result::event::record(start, stream) }.map_err(drv("recording an event"))?;
            Some((start, end))
        } else {
            None
        };
        // SAFETY: `params` points at one image per kernel argument, in order; the driver
        // copies them before returning. The buffers stay alive until the next sync.
        unsafe {
            result::launch_kernel(
                loaded.function,
                (gx, gy, gz),
                (bx, by, bz),
                0,
                stream,
                &mut params,
            )
        }
        .map_err(drv("launching the kernel"))?;
        if let Some((start, end)) = events {
            // SAFETY: as above.
            unsafe { result::event::record(end, stream) }.map_err(drv("recording an event"))?;
            self.timed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((start, end));
        }
        Ok(())
    }

    fn sync(&self) -> Result<Duration, RuntimeError> {
        self.current()?;
        let waited = result::ctx::synchronize().map_err(drv("running the kernels"));
        let timed = std::mem::take(&mut *self.timed.lock().unwrap_or_else(|p| p.into_inner()));
        let mut total = Duration::ZERO;
        for (start, end) in timed {
            // SAFETY: both recorded; the context is synchronised.
            unsafe {
                if let Ok(ms) = result::event::elapsed(start, end) {
                    total += Duration::from_secs_f64(f64::from(ms) / 1e3);
                }
                let _ = result::event::destroy(start);
                let _ = result::event::destroy(end);
            }
        }
        waited?;
        Ok(total)
    }
}
