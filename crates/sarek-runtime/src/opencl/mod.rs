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
//! - Arguments follow the ABI descriptor: a vector is a buffer packed per its
//!   [`ElemLayout`](sarek_compiler::abi::ElemLayout) plus its `int` length; values are
//!   passed as their packed bytes. Vectors are read back after the launch.
//! - Launch: global size = grid * block, local size = block; the kernel time is the event's
//!   profiling interval (start to end).
//! - Floating point: the source turns FP contraction off; the build adds
//!   `-cl-fp32-correctly-rounded-divide-sqrt` where the device supports it.

pub(crate) mod pack;

use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError};
use crate::value::ArgValue;
use opencl3::command_queue::{CL_QUEUE_PROFILING_ENABLE, CommandQueue};
use opencl3::context::Context;
use opencl3::device::{
    CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU,
    CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT,
};
use opencl3::kernel::Kernel as ClKernel;
use opencl3::memory::{Buffer, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE, ClMem};
use opencl3::program::Program;
use opencl3::types::{CL_BLOCKING, cl_mem};
use sarek_compiler::abi::{Abi, AbiParamKind};
use sarek_compiler::back::cfamily::Dialect;
use sarek_compiler::ir::Kernel;
use sarek_compiler::target::TargetOptions;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Open the best OpenCL device, or say why there is none. The device (its context, queue and
/// program cache) is opened once per process and shared: PoCL crashes when several threads
/// initialise platforms and contexts at once, and a shared cache builds each kernel once.
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    static DEVICE: OnceLock<Result<Arc<OpenClDevice>, RuntimeError>> = OnceLock::new();
    DEVICE
        .get_or_init(open_best)
        .clone()
        .map(|d| d as Arc<dyn Device>)
}

fn open_best() -> Result<Arc<OpenClDevice>, RuntimeError> {
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
                return Ok(Arc::new(OpenClDevice::new(d)?));
            }
            fallback.get_or_insert(d);
        }
    }
    match fallback {
        Some(d) => Ok(Arc::new(OpenClDevice::new(d)?)),
        None => Err(unavailable(format!(
            "{} platform(s) but no device",
            platforms.len()
        ))),
    }
}

/// A program built for this device and its entry point.
struct Compiled {
    _program: Program,
    /// An OpenCL kernel object holds its arguments: one launch at a time sets them.
    kernel: Mutex<ClKernel>,
    abi: Abi,
}

struct OpenClDevice {
    context: Context,
    queue: CommandQueue,
    info: DeviceInfo,
    options: TargetOptions,
    build_options: String,
    /// Generated source -> built program (the cache is per device, so the key is the source).
    cache: Mutex<HashMap<String, Arc<Compiled>>>,
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
        };
        let mut build_options = String::from("-cl-std=CL1.2");
        if device.single_fp_config().unwrap_or(0) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT != 0 {
            build_options.push_str(" -cl-fp32-correctly-rounded-divide-sqrt");
        }
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
            context,
            queue,
            info,
            options,
            build_options,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn compile(
        &self,
        kernel: &Kernel,
        cache: &mut HashMap<String, Arc<Compiled>>,
    ) -> Result<Arc<Compiled>, RuntimeError> {
        let generated =
            sarek_compiler::back::cfamily::generate(kernel, Dialect::OpenCl, &self.options)
                .map_err(|diags| pack::refused(kernel, Dialect::OpenCl, &diags))?;
        if let Some(c) = cache.get(&generated.source) {
            return Ok(c.clone());
        }
        let mut options = self.build_options.clone();
        if generated.source.contains("sub_group_") {
            // The subgroup built-ins are OpenCL C 2.0 functions.
            options = options.replace("-cl-std=CL1.2", "-cl-std=CL2.0");
        }
        let program =
            Program::create_and_build_from_source(&self.context, &generated.source, &options)
                .map_err(|log| {
                    RuntimeError::Compile(format!(
                        "OpenCL C of kernel `{}` failed to build on {}:\n{log}",
                        kernel.name, self.info.name
                    ))
                })?;
        let cl_kernel = ClKernel::create(&program, &generated.abi.entry_point).map_err(|e| {
            RuntimeError::Compile(format!(
                "OpenCL: no entry point `{}` ({e})",
                generated.abi.entry_point
            ))
        })?;
        let compiled = Arc::new(Compiled {
            _program: program,
            kernel: Mutex::new(cl_kernel),
            abi: generated.abi,
        });
        cache.insert(generated.source, compiled.clone());
        Ok(compiled)
    }
}

/// One kernel argument's value.
enum Slot {
    Mem(cl_mem),
    Bytes(Vec<u8>),
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

fn argument(slot: &sarek_compiler::abi::ArgSlot) -> Result<u32, RuntimeError> {
    match slot {
        sarek_compiler::abi::ArgSlot::Argument(n) => Ok(*n),
        other => Err(RuntimeError::Launch(format!(
            "OpenCL ABI slot {other:?} is not a kernel argument"
        ))),
    }
}

impl Device for OpenClDevice {
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
        let compiled = {
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            self.compile(kernel, &mut cache)?
        };
        let abi = &compiled.abi;
        if args.len() != abi.params.len() {
            return Err(RuntimeError::Arguments(format!(
                "kernel `{}` takes {} arguments, got {}",
                kernel.name,
                abi.params.len(),
                args.len()
            )));
        }
        // Every buffer and byte image stays alive until the kernel has run.
        let mut buffers: Vec<Option<Buffer<u8>>> = Vec::with_capacity(args.len());
        let mut slots: Vec<(u32, Slot)> = Vec::new();
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
                    let mut bytes = pack::pack_vector(v, elem, &param.name)?;
                    // SAFETY: `bytes` is a live host allocation of that size, copied at creation.
                    let buf = unsafe {
                        Buffer::<u8>::create(
                            &self.context,
                            CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            bytes.len(),
                            bytes.as_mut_ptr().cast::<c_void>(),
                        )
                    }
                    .map_err(cl_err("allocating a buffer"))?;
                    let len = i32::try_from(v.len).map_err(|_| {
                        RuntimeError::Arguments(format!(
                            "vector `{}` is longer than int32 allows",
                            param.name
                        ))
                    })?;
                    slots.push((argument(buffer)?, Slot::Mem(buf.get())));
                    slots.push((argument(length)?, Slot::Bytes(len.to_le_bytes().to_vec())));
                    buffers.push(Some(buf));
                }
                (AbiParamKind::Value { layout, slot }, a) => {
                    slots.push((
                        argument(slot)?,
                        Slot::Bytes(pack::pack_value(a, layout, &param.name)?),
                    ));
                    buffers.push(None);
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
                let mut zero = [0u8; 4];
                // SAFETY: `zero` is a live host allocation of 4 bytes, copied at creation.
                let buf = unsafe {
                    Buffer::<u8>::create(
                        &self.context,
                        CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                        zero.len(),
                        zero.as_mut_ptr().cast::<c_void>(),
                    )
                }
                .map_err(cl_err("allocating the trap status word"))?;
                slots.push((argument(slot)?, Slot::Mem(buf.get())));
                Some(buf)
            }
            None => None,
        };
        let k = compiled.kernel.lock().unwrap_or_else(|p| p.into_inner());
        for (index, slot) in &slots {
            // SAFETY: indices and sizes come from the ABI of this very source: a buffer slot
            // takes a cl_mem handle, a value slot the packed bytes of its C type.
            unsafe {
                match slot {
                    Slot::Mem(mem) => k.set_arg(*index, mem),
                    Slot::Bytes(b) => k.set_arg_raw(*index, b),
                }
            }
            .map_err(cl_err("setting an argument"))?;
        }
        let global: Vec<usize> = (0..3)
            .map(|i| config.grid[i] as usize * config.block[i] as usize)
            .collect();
        let local: Vec<usize> = config.block.iter().map(|&b| b as usize).collect();
        // SAFETY: every argument is set; the sizes arrays have work_dim = 3 entries.
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
        event.wait().map_err(cl_err("running the kernel"))?;
        let kernel_time = match (
            event.profiling_command_start(),
            event.profiling_command_end(),
        ) {
            (Ok(s), Ok(e)) => Duration::from_nanos(e.saturating_sub(s)),
            _ => started.elapsed(),
        };
        for ((param, arg), buf) in abi.params.iter().zip(args.iter_mut()).zip(&buffers) {
            if let (AbiParamKind::Vector { elem, .. }, ArgValue::Vector(v), Some(buf)) =
                (&param.kind, arg, buf)
            {
                let mut bytes = vec![0u8; elem.stride as usize * v.len.max(1)];
                // SAFETY: blocking read of the whole buffer into a slice of its size.
                unsafe {
                    self.queue
                        .enqueue_read_buffer(buf, CL_BLOCKING, 0, &mut bytes, &[])
                }
                .map_err(cl_err("reading a buffer back"))?;
                pack::unpack_vector(&bytes, v, elem);
            }
        }
        if let Some(buf) = &trap {
            let mut word = [0u8; 4];
            // SAFETY: blocking read of the 4-byte status buffer into a 4-byte array.
            unsafe {
                self.queue
                    .enqueue_read_buffer(buf, CL_BLOCKING, 0, &mut word, &[])
            }
            .map_err(cl_err("reading the trap status word"))?;
            let code = i32::from_le_bytes(word);
            if code != 0 {
                return Err(crate::device::trap_fault(kernel, code, Backend::OpenCl));
            }
        }
        Ok(LaunchStats {
            kernel_time,
            total_time: started.elapsed(),
        })
    }
}
