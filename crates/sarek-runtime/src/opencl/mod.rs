//! The `opencl` backend: OpenCL C 1.2 from the C-family generator, run through opencl3.
//!
//! opencl3 loads `libOpenCL` at run time (its `dynamic` feature), so a binary built with this
//! backend starts where no OpenCL is installed and [`open`] says why it is unavailable.
//!
//! - Device choice: the first GPU or accelerator of any platform, else the first device (PoCL
//!   on CI). [`TargetOptions`] come from the device's extensions (`cl_khr_fp64`, the int64
//!   atomics pair, the subgroup family), so the generator refuses what the device lacks:
//!   a located [`RuntimeError::Refused`] naming OpenCL C.
//! - Programs are cached per generated source (one cache per device), so a kernel is built
//!   once however often it is launched; build logs come back as [`RuntimeError::Compile`].
//!   [`Device::prebuild`] builds several kernels as one program ([`batch`]), paying the
//!   driver's fixed cost per program once.
//! - Buffers are `cl_mem` objects; uploads and downloads are blocking writes and reads on
//!   the device's one in-order queue, so they are ordered with the launches around them.
//! - Dispatch sets the plan's positional arguments ([`crate::bind`]) and enqueues without
//!   waiting: global size = grid * block, local size = block. A timed launch keeps its event;
//!   its profiling interval (start to end) is the kernel time `sync` reports.
//! - Floating point: the source turns FP contraction off; the build adds
//!   `-cl-fp32-correctly-rounded-divide-sqrt` where the device supports it.
//! - PoCL builds programs with barriers with `-cl-opt-disable`: its optimised code loses
//!   values kept across barriers (a defect of PoCL 3.1, `sarek-difftest` findings).

use crate::bind::{LaunchPlan, Positional};
use crate::device::{Backend, Device, DeviceInfo, RuntimeError};
use crate::kernel::{Built, KernelHandle};
use crate::memory::{Allocation, DeviceCore, Mem};
use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::device::{
    CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU,
    CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT,
};
use opencl3::error_codes::{
    CL_INVALID_BUFFER_SIZE, CL_MEM_OBJECT_ALLOCATION_FAILURE, CL_OUT_OF_HOST_MEMORY,
    CL_OUT_OF_RESOURCES,
};
use opencl3::kernel::Kernel as ClKernel;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, cl_mem};
use sarek_compiler::abi::Abi;
use sarek_compiler::abi::LayoutRules;
use sarek_compiler::back::cfamily::Dialect;
use sarek_compiler::ir::Kernel;
use sarek_compiler::target::TargetOptions;
use std::sync::{Arc, Mutex, OnceLock};

pub mod batch;
use std::time::Duration;

/// Open the best OpenCL device, or say why there is none. The device (its context, queue and
/// program cache) is opened once per process and shared: PoCL crashes when several threads
/// initialise platforms and contexts at once, and a shared cache builds each kernel once.
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    static DEVICE: OnceLock<Result<Arc<dyn Device>, RuntimeError>> = OnceLock::new();
    DEVICE
        .get_or_init(|| open_best().map(crate::memory::register))
        .clone()
}

fn open_best() -> Result<OpenClDevice, RuntimeError> {
    let unavailable = |reason: String| RuntimeError::Unavailable {
        backend: Backend::OpenCl,
        reason,
    };
    let platforms = opencl3::platform::get_platforms()
        .map_err(|e| unavailable(format!("no OpenCL runtime or platform ({e})")))?;
    let mut fallback = None;
    for p in &platforms {
        let ids = p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default();
        for id in ids {
            let d = opencl3::device::Device::new(id);
            let ty = d.dev_type().unwrap_or(0);
            if ty & (CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR) != 0 {
                return OpenClDevice::new(d);
            }
            fallback.get_or_insert(d);
        }
    }
    match fallback {
        Some(d) => OpenClDevice::new(d),
        None => Err(unavailable(format!(
            "{} platform(s) but no device",
            platforms.len()
        ))),
    }
}

/// Whether `device` is PoCL (its version string names it, e.g. "OpenCL 3.0 PoCL 3.1 ...").
fn is_pocl(device: &opencl3::device::Device) -> bool {
    device.version().is_ok_and(|v| v.contains("PoCL"))
}

/// A program built for this device and its entry point.
struct Compiled {
    /// Shared by every kernel of a program built for several ([`Device::prebuild`]).
    _program: Arc<Program>,
    /// An OpenCL kernel object holds its arguments: one launch at a time sets them.
    kernel: Mutex<ClKernel>,
}

// SAFETY: program and kernel objects are thread-safe handles; argument setting, the one
// call that is not, happens under the kernel's lock.
unsafe impl Send for Compiled {}
unsafe impl Sync for Compiled {}

struct OpenClDevice {
    context: Context,
    queue: CommandQueue,
    info: DeviceInfo,
    options: TargetOptions,
    build_options: String,
    /// PoCL: programs with barriers build unoptimised ([`OpenClDevice::options_for`]).
    pocl: bool,
    /// A CPU device (PoCL): its memory is the process's heap, so every kernel is built in
    /// checked mode ([`crate::limits::check_on_host`]).
    on_host: bool,
    core: DeviceCore,
    /// Events of the timed launches since the last sync.
    timed: Mutex<Vec<Timed>>,
}

fn cl_err(what: &str) -> impl Fn(opencl3::error_codes::ClError) -> RuntimeError + '_ {
    move |e| RuntimeError::Launch(format!("OpenCL: {what} failed: {e}"))
}

impl OpenClDevice {
    fn new(device: opencl3::device::Device) -> Result<OpenClDevice, RuntimeError> {
        let name = device.name().unwrap_or_else(|_| "OpenCL device".into());
        let ext = device.extensions().unwrap_or_default();
        let has = |e: &str| ext.split_whitespace().any(|x| x == e);
        let options = TargetOptions {
            subgroups: has("cl_khr_subgroups")
                && has("cl_khr_subgroup_shuffle")
                && has("cl_khr_subgroup_shuffle_relative")
                && has("cl_khr_subgroup_ballot"),
            float64: has("cl_khr_fp64"),
            int64_atomics: has("cl_khr_int64_base_atomics") && has("cl_khr_int64_extended_atomics"),
            checked: false, // issue 17: checks are inserted per launch (`sarek_runtime::checked`)
            portable: false,
        };
        let mut build_options = String::from("-cl-std=CL1.2");
        if device.single_fp_config().unwrap_or(0) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT != 0 {
            build_options.push_str(" -cl-fp32-correctly-rounded-divide-sqrt");
        }
        let pocl = is_pocl(&device);
        let on_host = pocl
            || device
                .dev_type()
                .is_ok_and(|t| t & opencl3::device::CL_DEVICE_TYPE_CPU != 0);
        let unavailable =
            |what: &str, e: opencl3::error_codes::ClError| RuntimeError::Unavailable {
                backend: Backend::OpenCl,
                reason: format!("{name}: {what} failed ({e})"),
            };
        let context =
            Context::from_device(&device).map_err(|e| unavailable("creating a context", e))?;
        #[allow(deprecated)] // clCreateCommandQueue: the OpenCL 1.2 entry point, PoCL has both.
        let queue = CommandQueue::create_default(&context, CL_QUEUE_PROFILING_ENABLE)
            .map_err(|e| unavailable("creating a command queue", e))?;
        let info = DeviceInfo {
            backend: Backend::OpenCl,
            name,
            max_threads_per_block: device
                .max_work_group_size()
                .unwrap_or(256)
                .min(u32::MAX as usize) as u32,
            subgroups: options.subgroups,
            float64: options.float64,
        };
        Ok(OpenClDevice {
            core: DeviceCore::new(format!("opencl ({})", info.name)),
            context,
            queue,
            info,
            options,
            build_options,
            pocl,
            on_host,
            timed: Mutex::new(Vec::new()),
        })
    }

    /// The generated OpenCL C of `kernel` and its ABI, or the located refusal.
    fn generate(&self, kernel: &Kernel) -> Result<sarek_compiler::target::Generated, RuntimeError> {
        let support =
            sarek_compiler::back::support::opencl(&self.options).on_device(&self.info.name);
        crate::capability::check(kernel, &support)?;
        sarek_compiler::back::cfamily::generate(kernel, Dialect::OpenCl, &self.options)
            .map_err(|d| RuntimeError::refused(sarek_compiler::Target::OpenCl, &kernel.name, d))
    }

    /// The build options for `source`: the subgroup built-ins are OpenCL C 2.0 functions.
    /// On PoCL a program with a barrier builds with `-cl-opt-disable`: PoCL 3.1's optimised
    /// work-group functions keep a loop's result that lives across a barrier once per group,
    /// as if uniform (the loop block post-dominates the entry, so PoCL takes it for uniform
    /// although the trip count is not), and lose it in the other work-items
    /// (crates/sarek-difftest/findings/fixed/pocl_loop_value_across_barriers*). Without a
    /// barrier there is nothing to keep and the build stays optimised.
    fn options_for(&self, source: &str) -> String {
        let mut options = if source.contains("sub_group_") {
            self.build_options.replace("-cl-std=CL1.2", "-cl-std=CL2.0")
        } else {
            self.build_options.clone()
        };
        if self.pocl && source.contains("barrier(") {
            options.push_str(" -cl-opt-disable");
        }
        options
    }

    fn compile(&self, kernel: &Kernel) -> Result<(Compiled, Abi), RuntimeError> {
        let generated = self.generate(kernel)?;
        let options = self.options_for(&generated.source);
        let program =
            Program::create_and_build_from_source(&self.context, &generated.source, &options)
                .map_err(|log| {
                    RuntimeError::Compile(format!(
                        "OpenCL C of kernel `{}` failed to build on {}:\n{log}",
                        kernel.name, self.info.name
                    ))
                })?;
        let compiled = Compiled::new(Arc::new(program), &generated.abi.entry_point)?;
        Ok((compiled, generated.abi))
    }

    /// Build `kernels` as one program per OpenCL C version ([`batch::join`]) and put each
    /// kernel's build in the cache. A kernel that is refused or specialised per block size
    /// is left out; a joined program that fails to build leaves its kernels to be built
    /// alone, so a build error is always the kernel's own.
    fn prebuild_joined(&self, kernels: &[KernelHandle]) {
        let mut members: Vec<(
            &KernelHandle,
            KernelHandle,
            sarek_compiler::target::Generated,
        )> = Vec::new();
        for k in kernels {
            let key = crate::kernel::BuildKey::new(k);
            if self.core.is_built(&key) || sarek_compiler::ir::specialize::needs_block_size(k.ir())
            {
                continue;
            }
            // Built as `build` would: in checked mode on a CPU device.
            let checked = crate::limits::check_on_host(&self.core, self.on_host, k);
            if let Ok(g) = self.generate(checked.ir()) {
                members.push((k, checked, g));
            }
        }
        // One program per set of build options (OpenCL C version, PoCL's barrier rule).
        let mut option_sets: Vec<String> = members
            .iter()
            .map(|(_, _, g)| self.options_for(&g.source))
            .collect();
        option_sets.sort();
        option_sets.dedup();
        for options in option_sets {
            let group: Vec<_> = members
                .iter()
                .filter(|(_, _, g)| self.options_for(&g.source) == options)
                .collect();
            if group.len() < 2 {
                continue;
            }
            let sources: Vec<&str> = group.iter().map(|(_, _, g)| g.source.as_str()).collect();
            let Some(joined) = batch::join(&sources) else {
                continue;
            };
            let Ok(program) =
                Program::create_and_build_from_source(&self.context, &joined, &options)
            else {
                continue;
            };
            let program = Arc::new(program);
            for (j, (handle, built_from, g)) in group.iter().enumerate() {
                let entry = batch::renamed(&g.abi.entry_point, j);
                if let Ok(compiled) = Compiled::new(program.clone(), &entry) {
                    let built = Built {
                        kernel: built_from.clone(),
                        abi: g.abi.clone(),
                        exe: Box::new(compiled),
                    };
                    let key = crate::kernel::BuildKey::new(handle);
                    let _ = self.core.build_cached(&key, || Ok(built));
                }
            }
        }
    }
}

impl Compiled {
    fn new(program: Arc<Program>, entry: &str) -> Result<Compiled, RuntimeError> {
        let kernel = ClKernel::create(&program, entry).map_err(|e| {
            RuntimeError::Compile(format!("OpenCL: no entry point `{entry}` ({e})"))
        })?;
        Ok(Compiled {
            _program: program,
            kernel: Mutex::new(kernel),
        })
    }
}

/// Raw-bytes argument setting (opencl3 only sets sized Rust values).
trait SetArgRaw {
    /// # Safety
    /// `bytes` must be the image of the parameter's C type.
    unsafe fn set_arg_raw(&self, index: u32, bytes: &[u8]) -> opencl3::Result<()>;
}

impl SetArgRaw for ClKernel {
    unsafe fn set_arg_raw(&self, index: u32, bytes: &[u8]) -> opencl3::Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe {
            opencl3::kernel::set_kernel_arg(self.get(), index, bytes.len(), bytes.as_ptr().cast())
        }
        .map_err(opencl3::error_codes::ClError)
    }
}

/// A device buffer.
struct ClAlloc(Buffer<u8>);

// SAFETY: OpenCL memory objects may be used from any thread (the API is thread-safe
// except for kernel argument setting, which is behind a lock).
unsafe impl Send for ClAlloc {}
unsafe impl Sync for ClAlloc {}

impl Allocation for ClAlloc {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The event of a timed launch, read at the next sync.
struct Timed(opencl3::event::Event);

// SAFETY: OpenCL events are thread-safe handles.
unsafe impl Send for Timed {}

impl Device for OpenClDevice {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn core(&self) -> &DeviceCore {
        &self.core
    }

    fn layout_rules(&self) -> LayoutRules {
        sarek_compiler::back::cfamily::LAYOUT
    }

    fn prebuild(&self, kernels: &[KernelHandle]) {
        self.prebuild_joined(kernels);
    }

    fn always_checked(&self) -> bool {
        self.on_host
    }

    fn build(&self, kernel: &KernelHandle) -> Result<Built, RuntimeError> {
        let kernel = &crate::limits::check_on_host(&self.core, self.on_host, kernel);
        let (compiled, abi) = self.compile(kernel.ir())?;
        Ok(Built {
            kernel: kernel.clone(),
            abi,
            exe: Box::new(compiled),
        })
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn Allocation>, RuntimeError> {
        // SAFETY: no host pointer; the buffer is written before any kernel reads it.
        let buf = unsafe {
            Buffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                bytes,
                std::ptr::null_mut(),
            )
        }
        .map_err(|e| match e.0 {
            CL_MEM_OBJECT_ALLOCATION_FAILURE
            | CL_OUT_OF_RESOURCES
            | CL_OUT_OF_HOST_MEMORY
            | CL_INVALID_BUFFER_SIZE => RuntimeError::OutOfMemory {
                device: self.core.name().to_string(),
                bytes,
            },
            _ => cl_err("allocating a buffer")(e),
        })?;
        Ok(Box::new(ClAlloc(buf)))
    }

    fn upload(&self, mem: &Mem, bytes: &[u8]) -> Result<(), RuntimeError> {
        let buf = mem.raw::<ClAlloc>().0.get();
        // SAFETY: blocking write of `bytes` into a buffer at least that long; the event the
        // call returns is released by `Event`'s drop.
        let event = unsafe {
            opencl3::command_queue::enqueue_write_buffer(
                self.queue.get(),
                buf,
                CL_BLOCKING,
                0,
                bytes.len(),
                bytes.as_ptr().cast(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(|e| cl_err("writing a buffer")(opencl3::error_codes::ClError(e)))?;
        drop(opencl3::event::Event::new(event));
        Ok(())
    }

    fn download(&self, mem: &Mem, out: &mut [u8]) -> Result<(), RuntimeError> {
        let buf = mem.raw::<ClAlloc>().0.get();
        // SAFETY: blocking read into a slice no longer than the buffer; the queue is in
        // order, so earlier kernels have finished. The event is released by its drop.
        let event = unsafe {
            opencl3::command_queue::enqueue_read_buffer(
                self.queue.get(),
                buf,
                CL_BLOCKING,
                0,
                out.len(),
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
            )
        }
        .map_err(|e| cl_err("reading a buffer")(opencl3::error_codes::ClError(e)))?;
        drop(opencl3::event::Event::new(event));
        Ok(())
    }

    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), RuntimeError> {
        let (from, to) = (src.raw::<ClAlloc>().0.get(), dst.raw::<ClAlloc>().0.get());
        // SAFETY: both buffers hold at least `bytes` bytes and are distinct; the copy is
        // enqueued on the in-order queue (after earlier launches, before later ones) and the
        // runtime keeps both alive until the next synchronisation. The event is released
        // by its drop.
        let event = unsafe {
            opencl3::command_queue::enqueue_copy_buffer(
                self.queue.get(),
                from,
                to,
                0,
                0,
                bytes,
                0,
                std::ptr::null(),
            )
        }
        .map_err(|e| cl_err("copying a buffer")(opencl3::error_codes::ClError(e)))?;
        drop(opencl3::event::Event::new(event));
        Ok(())
    }

    fn dispatch(&self, built: &Built, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        let compiled = built.exe::<Compiled>();
        let k = compiled.kernel.lock().unwrap_or_else(|p| p.into_inner());
        for (index, arg) in plan.positional.iter().enumerate() {
            // SAFETY: indices and sizes come from the ABI of this very source: a buffer slot
            // takes a cl_mem handle, a value slot the packed bytes of its C type.
            unsafe {
                match arg {
                    Positional::Mem(m) => {
                        let mem: cl_mem = m.raw::<ClAlloc>().0.get();
                        k.set_arg(index as u32, &mem)
                    }
                    Positional::Bytes(b) => k.set_arg_raw(index as u32, b),
                }
            }
            .map_err(cl_err("setting an argument"))?;
        }
        let config = plan.config;
        let global: Vec<usize> = (0..3)
            .map(|i| config.grid[i] as usize * config.block[i] as usize)
            .collect();
        let local: Vec<usize> = config.block.iter().map(|&b| b as usize).collect();
        // SAFETY: every argument is set; the sizes arrays have work_dim = 3 entries. The
        // buffers stay alive until the next sync (the launch keeps them).
        let event = unsafe {
            self.queue.enqueue_nd_range_kernel(
                k.get(),
                3,
                std::ptr::null(),
                global.as_ptr(),
                local.as_ptr(),
                &[],
            )
        }
        .map_err(cl_err("enqueueing the kernel"))?;
        if plan.timed {
            self.timed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Timed(event));
        }
        Ok(())
    }

    fn sync(&self) -> Result<Duration, RuntimeError> {
        self.queue.finish().map_err(cl_err("running the kernels"))?;
        let timed = std::mem::take(&mut *self.timed.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(timed
            .iter()
            .map(
                |Timed(e)| match (e.profiling_command_start(), e.profiling_command_end()) {
                    (Ok(s), Ok(end)) => Duration::from_nanos(end.saturating_sub(s)),
                    _ => Duration::ZERO,
                },
            )
            .sum())
    }
}
