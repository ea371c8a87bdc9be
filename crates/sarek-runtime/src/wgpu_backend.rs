//! The `wgpu` backend: kernels compiled to WGSL and run through wgpu (Vulkan, Metal, DX12).
//!
//! A build generates WGSL for the kernel (options from the device: subgroups when the adapter
//! has them, no 64-bit types) and makes its shader module and layouts; pipelines are made per
//! block size (the block size reaches the shader as pipeline-overridable constants) and kept
//! with the build. Buffers are storage buffers laid out per the ABI (std430); uploads go
//! through `Queue::write_buffer` (ordered before the next submission), downloads through a
//! mapped staging copy. A dispatch writes the plan's uniform block ([`crate::bind`]) into a
//! small uniform buffer, binds the plan's buffers and submits without waiting; `sync` polls
//! the device until the queue is empty. Device errors are caught with error scopes and returned as [`RuntimeError`]s:
//! what the WGSL generator refuses (64-bit types, warps without 32-lane subgroups) and more
//! vectors than the adapter binds are [`RuntimeError::Refused`], located in the kernel; WGSL
//! that wgpu rejects is [`RuntimeError::Compile`] (a generator bug).
//! Kernel time comes from timestamp queries when the adapter supports them, else from the wall
//! clock around the dispatch's own submission.

use crate::bind::LaunchPlan;
use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, RuntimeError};
use crate::kernel::{Built, KernelHandle};
use crate::memory::{Allocation, DeviceCore, Mem};
use sarek_compiler::abi::{Abi, AbiParamKind, ArgSlot, LayoutRules};
use sarek_compiler::{Target, TargetOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Open the best adapter of any wgpu backend, or say why there is none.
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    WgpuDevice::new().map(crate::memory::register)
}

fn unavailable(reason: impl Into<String>) -> RuntimeError {
    RuntimeError::Unavailable {
        backend: Backend::Wgpu,
        reason: reason.into(),
    }
}

/// A wgpu device with its queue and compiled pipelines.
pub struct WgpuDevice {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: DeviceInfo,
    limits: wgpu::Limits,
    timestamps: bool,
    options: TargetOptions,
    core: DeviceCore,
    /// Timestamp read-back buffers of the timed launches since the last sync.
    timed: Mutex<Vec<wgpu::Buffer>>,
    /// Error scopes form one stack per device: launches from several threads take turns.
    scope: Mutex<()>,
}

/// A built kernel: its module and layouts, and a pipeline per block size.
struct Compiled {
    module: wgpu::ShaderModule,
    layout: wgpu::BindGroupLayout,
    pipeline_layout: wgpu::PipelineLayout,
    entry_point: String,
    pipelines: Mutex<HashMap<[u32; 3], wgpu::ComputePipeline>>,
}

/// A storage buffer.
struct WgpuAlloc(wgpu::Buffer);

impl Allocation for WgpuAlloc {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn adapter_rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

impl WgpuDevice {
    /// Open the best adapter. Warp operations are enabled only on 32-lane subgroups: the
    /// language's warps are 32 wide (`warp_size`, ballots, shuffles), and a kernel written for
    /// them computes something else on 8-lane subgroups (lavapipe) without any error. Such a
    /// device refuses warp kernels instead, naming WGSL.
    pub fn new() -> Result<WgpuDevice, RuntimeError> {
        Self::open_with(false)
    }

    /// As [`WgpuDevice::new`], but enabling subgroups of any size (tests of the subgroup code
    /// path on devices whose subgroups are not 32 lanes wide).
    pub fn new_allowing_any_subgroup_size() -> Result<WgpuDevice, RuntimeError> {
        Self::open_with(true)
    }

    fn open_with(any_subgroup_size: bool) -> Result<WgpuDevice, RuntimeError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::all(),
            ..wgpu::InstanceDescriptor::new_without_display_handle_from_env()
        });
        let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::all()));
        let adapter = adapters
            .into_iter()
            .filter(|a| {
                a.get_downlevel_capabilities()
                    .flags
                    .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
            })
            .min_by_key(|a| {
                let i = a.get_info();
                (adapter_rank(i.device_type), i.name)
            })
            .ok_or_else(|| {
                unavailable(
                    "no wgpu adapter with compute shaders (no Vulkan, Metal or DX12 driver found)",
                )
            })?;
        let ainfo = adapter.get_info();
        let wanted = wgpu::Features::SUBGROUP | wgpu::Features::TIMESTAMP_QUERY;
        let features = adapter.features() & wanted;
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("sarek"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| unavailable(format!("adapter `{}` refused a device: {e}", ainfo.name)))?;
        let warp32 = ainfo.subgroup_min_size == 32 && ainfo.subgroup_max_size == 32;
        let subgroups =
            features.contains(wgpu::Features::SUBGROUP) && (warp32 || any_subgroup_size);
        let info = DeviceInfo {
            backend: Backend::Wgpu,
            name: format!("{} ({:?})", ainfo.name, ainfo.backend),
            max_threads_per_block: limits.max_compute_invocations_per_workgroup,
            subgroups,
            float64: false,
        };
        Ok(WgpuDevice {
            core: DeviceCore::new(format!("wgpu ({})", info.name)),
            timed: Mutex::new(Vec::new()),
            scope: Mutex::new(()),
            device,
            queue,
            info,
            limits,
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            options: TargetOptions {
                subgroups,
                float64: false,
                int64_atomics: false,
                checked: false, // issue 17: checks are inserted per launch
                // The adapter's own limits apply, not the portable ones.
                portable: false,
            },
        })
    }

    /// The options kernels are generated with on this device.
    pub fn target_options(&self) -> &TargetOptions {
        &self.options
    }

    /// Run `f` inside validation and out-of-memory error scopes.
    fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
        let _turn = self.scope.lock().unwrap_or_else(|e| e.into_inner());
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        // naga inside wgpu has panicked on WGSL its validator accepted (its SPIR-V writer:
        // `crates/sarek-difftest/findings/open/naga_spv_writer_panic_select.sarek`).
        let value = crate::foreign::guard(f);
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        match (v.or(o), value) {
            (Some(e), _) => Err(format!("wgpu {what}: {}", error_chain(&e))),
            (None, Err(panic)) => Err(format!("wgpu {what}: wgpu panicked: {panic}")),
            (None, Ok(value)) => Ok(value),
        }
    }

    /// Generate the WGSL and make its module and layouts.
    fn compile(&self, kernel: &KernelHandle) -> Result<(Compiled, Abi), RuntimeError> {
        let ir = kernel.ir();
        // A device limit is a refusal of the kernel, not a pipeline validation error.
        let support = crate::capability::storage_buffers(
            sarek_compiler::back::support::wgsl(&self.options).on_device(&self.info.name),
            self.limits.max_storage_buffers_per_shader_stage,
        );
        crate::capability::check(ir, &support)?;
        let generated = sarek_compiler::generate(ir, Target::Wgsl, &self.options)
            .map_err(|d| RuntimeError::refused(Target::Wgsl, &ir.name, d))?;
        let abi = generated.abi;
        let compiled = self
            .scoped("rejected the generated WGSL", || {
                let module = self
                    .device
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(&abi.entry_point),
                        source: wgpu::ShaderSource::Wgsl(generated.source.as_str().into()),
                    });
                let mut entries = Vec::new();
                let storage = |binding| wgpu::BindGroupLayoutEntry {
                    binding,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Storage { read_only: false },
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                };
                if let Some((_, b)) = abi.uniform_binding {
                    entries.push(wgpu::BindGroupLayoutEntry {
                        binding: b,
                        visibility: wgpu::ShaderStages::COMPUTE,
                        ty: wgpu::BindingType::Buffer {
                            ty: wgpu::BufferBindingType::Uniform,
                            has_dynamic_offset: false,
                            min_binding_size: None,
                        },
                        count: None,
                    });
                }
                for p in &abi.params {
                    if let AbiParamKind::Vector {
                        buffer: ArgSlot::Binding { binding, .. },
                        ..
                    } = &p.kind
                    {
                        entries.push(storage(*binding));
                    }
                }
                if let Some(ArgSlot::Binding { binding, .. }) = abi.trap_status {
                    entries.push(storage(binding));
                }
                let layout =
                    self.device
                        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                            label: Some("sarek"),
                            entries: &entries,
                        });
                let pipeline_layout =
                    self.device
                        .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                            label: Some("sarek"),
                            bind_group_layouts: &[Some(&layout)],
                            immediate_size: 0,
                        });
                Compiled {
                    module,
                    layout,
                    pipeline_layout,
                    entry_point: abi.entry_point.clone(),
                    pipelines: Mutex::new(HashMap::new()),
                }
            })
            .map_err(RuntimeError::Compile)?;
        Ok((compiled, abi))
    }

    /// The pipeline of `c` for `block` (made on first use).
    fn pipeline(
        &self,
        c: &Compiled,
        block: [u32; 3],
    ) -> Result<wgpu::ComputePipeline, RuntimeError> {
        let mut pipelines = c.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pipelines.get(&block) {
            return Ok(p.clone());
        }
        let pipeline = self
            .scoped("rejected the generated WGSL", || {
                let constants = [
                    ("sarek_block_x", f64::from(block[0])),
                    ("sarek_block_y", f64::from(block[1])),
                    ("sarek_block_z", f64::from(block[2])),
                ];
                self.device
                    .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                        label: Some(&c.entry_point),
                        layout: Some(&c.pipeline_layout),
                        module: &c.module,
                        entry_point: Some(&c.entry_point),
                        compilation_options: wgpu::PipelineCompilationOptions {
                            constants: &constants,
                            zero_initialize_workgroup_memory: true,
                        },
                        cache: None,
                    })
            })
            .map_err(RuntimeError::Compile)?;
        pipelines.insert(block, pipeline.clone());
        Ok(pipeline)
    }

    fn check_config(&self, config: &LaunchConfig) -> Result<(), RuntimeError> {
        let l = &self.limits;
        let b = config.block;
        let max_b = [
            l.max_compute_workgroup_size_x,
            l.max_compute_workgroup_size_y,
            l.max_compute_workgroup_size_z,
        ];
        if (0..3).any(|i| b[i] > max_b[i])
            || config.threads_per_block() > l.max_compute_invocations_per_workgroup
        {
            return Err(RuntimeError::Arguments(format!(
                "block {:?} exceeds this wgpu device's limits (per axis {:?}, {} threads in all)",
                b, max_b, l.max_compute_invocations_per_workgroup
            )));
        }
        if config
            .grid
            .iter()
            .any(|g| *g > l.max_compute_workgroups_per_dimension)
        {
            return Err(RuntimeError::Arguments(format!(
                "grid {:?} exceeds this wgpu device's limit of {} blocks per axis",
                config.grid, l.max_compute_workgroups_per_dimension
            )));
        }
        Ok(())
    }

    fn wait(&self) -> Result<(), RuntimeError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| RuntimeError::Launch(format!("wgpu: {e}")))
    }
}

impl Device for WgpuDevice {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn core(&self) -> &DeviceCore {
        &self.core
    }

    fn layout_rules(&self) -> LayoutRules {
        LayoutRules::Std430
    }

    fn max_shared_bytes(&self) -> Option<u64> {
        Some(u64::from(self.limits.max_compute_workgroup_storage_size))
    }

    fn build(&self, kernel: &KernelHandle) -> Result<Built, RuntimeError> {
        // Issue 17: llvmpipe's loop budget is a located fault, not a shortened loop.
        let kernel = &crate::limits::guard_loops(&self.core, &self.info.name, kernel);
        let (compiled, abi) = self.compile(kernel)?;
        Ok(Built {
            kernel: kernel.clone(),
            abi,
            exe: Box::new(compiled),
        })
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn Allocation>, RuntimeError> {
        let size = bytes.max(4).next_multiple_of(4) as u64;
        let limit = self
            .limits
            .max_buffer_size
            .min(self.limits.max_storage_buffer_binding_size);
        let oom = || RuntimeError::OutOfMemory {
            device: self.core.name().to_string(),
            bytes,
        };
        if size > limit {
            return Err(oom());
        }
        let buffer = self
            .scoped("could not allocate a buffer", || {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            })
            .map_err(|_| oom())?;
        Ok(Box::new(WgpuAlloc(buffer)))
    }

    fn upload(&self, mem: &Mem, bytes: &[u8]) -> Result<(), RuntimeError> {
        let buf = &mem.raw::<WgpuAlloc>().0;
        if bytes.len().is_multiple_of(4) {
            self.queue.write_buffer(buf, 0, bytes);
        } else {
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().next_multiple_of(4), 0);
            self.queue.write_buffer(buf, 0, &padded);
        }
        Ok(())
    }

    fn download(&self, mem: &Mem, out: &mut [u8]) -> Result<(), RuntimeError> {
        let buf = &mem.raw::<WgpuAlloc>().0;
        let size = (out.len() as u64)
            .max(4)
            .next_multiple_of(4)
            .min(buf.size());
        let staging = self
            .scoped("failed to read a buffer back", || {
                let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: None,
                    size,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                enc.copy_buffer_to_buffer(buf, 0, &staging, 0, size);
                self.queue.submit([enc.finish()]);
                staging
            })
            .map_err(RuntimeError::Launch)?;
        let bytes = read_back(&self.device, &staging)?;
        out.copy_from_slice(&bytes[..out.len()]);
        Ok(())
    }

    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), RuntimeError> {
        let (from, to) = (&src.raw::<WgpuAlloc>().0, &dst.raw::<WgpuAlloc>().0);
        // Whole 4-byte words: both buffers are allocated that way.
        let size = (bytes as u64)
            .next_multiple_of(4)
            .min(from.size())
            .min(to.size());
        self.scoped("failed to copy a buffer", || {
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            enc.copy_buffer_to_buffer(from, 0, to, 0, size);
            self.queue.submit([enc.finish()]);
        })
        .map_err(RuntimeError::Launch)
    }

    fn dispatch(&self, built: &Built, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        self.check_config(&plan.config)?;
        let compiled = built.exe::<Compiled>();
        let abi = &built.abi;
        let pipeline = self.pipeline(compiled, plan.config.block)?;
        let queries = (plan.timed && self.timestamps).then(|| {
            let set = self.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: None,
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            });
            let resolve = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let read = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: 16,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (set, resolve, read)
        });
        self.scoped("failed to run the kernel", || {
            let uniform = abi.uniform_binding.map(|(_, b)| {
                let u = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("Params"),
                    size: plan.uniform.len().max(16).next_multiple_of(16) as u64,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let mut bytes = plan.uniform.clone();
                bytes.resize(bytes.len().next_multiple_of(4), 0);
                self.queue.write_buffer(&u, 0, &bytes);
                (b, u)
            });
            let mut entries: Vec<wgpu::BindGroupEntry> = plan
                .bindings
                .iter()
                .map(|(binding, m)| wgpu::BindGroupEntry {
                    binding: *binding,
                    resource: m.raw::<WgpuAlloc>().0.as_entire_binding(),
                })
                .collect();
            if let Some((b, u)) = &uniform {
                entries.push(wgpu::BindGroupEntry {
                    binding: *b,
                    resource: u.as_entire_binding(),
                });
            }
            let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &compiled.layout,
                entries: &entries,
            });
            let mut enc = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            {
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(&abi.entry_point),
                    timestamp_writes: queries.as_ref().map(|(set, _, _)| {
                        wgpu::ComputePassTimestampWrites {
                            query_set: set,
                            beginning_of_pass_write_index: Some(0),
                            end_of_pass_write_index: Some(1),
                        }
                    }),
                });
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                let [gx, gy, gz] = plan.config.grid;
                pass.dispatch_workgroups(gx, gy, gz);
            }
            if let Some((set, resolve, read)) = &queries {
                enc.resolve_query_set(set, 0..2, resolve, 0);
                enc.copy_buffer_to_buffer(resolve, 0, read, 0, 16);
            }
            self.queue.submit([enc.finish()]);
        })
        .map_err(RuntimeError::Launch)?;
        if let Some((_, _, read)) = queries {
            self.timed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(read);
        }
        Ok(())
    }

    fn sync(&self) -> Result<Duration, RuntimeError> {
        self.wait()?;
        let timed = std::mem::take(&mut *self.timed.lock().unwrap_or_else(|p| p.into_inner()));
        let mut total = Duration::ZERO;
        for read in &timed {
            let ticks = read_back(&self.device, read)?;
            let t0 = u64::from_le_bytes(ticks[0..8].try_into().unwrap_or([0; 8]));
            let t1 = u64::from_le_bytes(ticks[8..16].try_into().unwrap_or([0; 8]));
            let ns = t1.saturating_sub(t0) as f64 * f64::from(self.queue.get_timestamp_period());
            total += Duration::from_nanos(ns as u64);
        }
        Ok(total)
    }
}

/// Map a MAP_READ buffer and copy its bytes out.
fn read_back(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<Vec<u8>, RuntimeError> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| RuntimeError::Launch(format!("wgpu: {e}")))?;
    rx.recv()
        .map_err(|_| RuntimeError::Launch("wgpu: buffer mapping was dropped".into()))?
        .map_err(|e| RuntimeError::Launch(format!("wgpu: could not map a result buffer: {e}")))?;
    let bytes = buffer
        .get_mapped_range(..)
        .map_err(|e| RuntimeError::Launch(format!("wgpu: {e}")))?
        .to_vec();
    buffer.unmap();
    Ok(bytes)
}

/// An error with every cause under it (issue 17/19: wgpu's own `Display` is only "Validation
/// Error"; naga's message, with the offending WGSL line, is in the source chain).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let line = c.to_string();
        if !text.contains(line.trim()) {
            text.push_str(": ");
            text.push_str(line.trim_end());
        }
        cause = c.source();
    }
    text
}
