//! The `wgpu` backend: kernels compiled to WGSL and run through wgpu (Vulkan, Metal, DX12).
//!
//! A launch generates WGSL for the kernel (options from the device: subgroups when the adapter
//! has them, no 64-bit types), then packs every argument from the ABI descriptor the generator
//! returned: scalars and by-value aggregates into the `Params` uniform, each vector into a
//! storage buffer laid out per its [`ElemLayout`], lengths into the uniform. Pipelines are cached
//! per (WGSL source, block size); the block size reaches the shader as pipeline-overridable
//! constants. Device errors are caught with error scopes and returned as [`RuntimeError`]s:
//! what the WGSL generator refuses (64-bit types, warps without 32-lane subgroups) and more
//! vectors than the adapter binds are [`RuntimeError::Refused`], located in the kernel; WGSL
//! that wgpu rejects is [`RuntimeError::Compile`] (a generator bug).
//! Kernel time comes from timestamp queries when the adapter supports them, else from the wall
//! clock around the dispatch's own submission.

use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError};
use crate::value::{ArgValue, Column, HostVector};
use sarek_compiler::abi::{Abi, AbiParamKind, ArgSlot, ElemLayout, Stored};
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::{Literal, Scalar};
use sarek_compiler::{Target, TargetOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Open the best adapter of any wgpu backend, or say why there is none.
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    WgpuDevice::new().map(|d| Arc::new(d) as Arc<dyn Device>)
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
    pipelines: Mutex<HashMap<PipelineKey, Arc<Compiled>>>,
}

/// A pipeline is specific to its WGSL source and its block size (pipeline constants).
type PipelineKey = (String, [u32; 3]);

struct Compiled {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
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
            },
            pipelines: Mutex::new(HashMap::new()),
        })
    }

    /// The options kernels are generated with on this device.
    pub fn target_options(&self) -> &TargetOptions {
        &self.options
    }

    /// Run `f` inside validation and out-of-memory error scopes.
    fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        match v.or(o) {
            Some(e) => Err(format!("wgpu {what}: {}", error_chain(&e))),
            None => Ok(value),
        }
    }

    fn pipeline(
        &self,
        source: &str,
        abi: &Abi,
        block: [u32; 3],
    ) -> Result<Arc<Compiled>, RuntimeError> {
        let key = (source.to_string(), block);
        if let Some(c) = self
            .pipelines
            .lock()
            .map_err(|_| RuntimeError::Launch("pipeline cache poisoned".into()))?
            .get(&key)
        {
            return Ok(c.clone());
        }
        let compiled = self
            .scoped("rejected the generated WGSL", || {
                let module = self
                    .device
                    .create_shader_module(wgpu::ShaderModuleDescriptor {
                        label: Some(&abi.entry_point),
                        source: wgpu::ShaderSource::Wgsl(source.into()),
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
                let pl = self
                    .device
                    .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some("sarek"),
                        bind_group_layouts: &[Some(&layout)],
                        immediate_size: 0,
                    });
                let constants = [
                    ("sarek_block_x", f64::from(block[0])),
                    ("sarek_block_y", f64::from(block[1])),
                    ("sarek_block_z", f64::from(block[2])),
                ];
                let pipeline =
                    self.device
                        .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                            label: Some(&abi.entry_point),
                            layout: Some(&pl),
                            module: &module,
                            entry_point: Some(&abi.entry_point),
                            compilation_options: wgpu::PipelineCompilationOptions {
                                constants: &constants,
                                zero_initialize_workgroup_memory: true,
                            },
                            cache: None,
                        });
                Arc::new(Compiled { pipeline, layout })
            })
            .map_err(RuntimeError::Compile)?;
        self.pipelines
            .lock()
            .map_err(|_| RuntimeError::Launch("pipeline cache poisoned".into()))?
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    fn check_config(&self, config: &LaunchConfig) -> Result<(), RuntimeError> {
        let l = &self.limits;
        let b = config.block;
        let max_b = [
            l.max_compute_workgroup_size_x,
            l.max_compute_workgroup_size_y,
            l.max_compute_workgroup_size_z,
        ];
        if b.contains(&0) || config.grid.contains(&0) {
            return Err(RuntimeError::Arguments(format!(
                "empty launch: grid {:?}, block {:?}",
                config.grid, b
            )));
        }
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
}

/// Write one leaf value at `at` in `bytes` as `stored`.
fn put(bytes: &mut [u8], at: usize, stored: Stored, v: Literal) -> Result<(), RuntimeError> {
    let raw: [u8; 4] = match (stored, v) {
        (Stored::BoolAsU32, Literal::Bool(b)) => u32::from(b).to_le_bytes(),
        (Stored::Native(Scalar::I32), Literal::I32(x)) => x.to_le_bytes(),
        (Stored::Native(Scalar::F32), Literal::F32(x)) => x.to_le_bytes(),
        (s, v) => {
            return Err(RuntimeError::Arguments(format!(
                "cannot store {v:?} as {s:?} on wgpu"
            )));
        }
    };
    bytes
        .get_mut(at..at + 4)
        .ok_or_else(|| RuntimeError::Arguments("argument does not fit its slot".into()))?
        .copy_from_slice(&raw);
    Ok(())
}

fn get(bytes: &[u8], at: usize, stored: Stored) -> Literal {
    let raw: [u8; 4] = bytes[at..at + 4].try_into().unwrap_or([0; 4]);
    match stored {
        Stored::BoolAsU32 => Literal::Bool(u32::from_le_bytes(raw) != 0),
        Stored::Native(Scalar::F32) => Literal::F32(f32::from_le_bytes(raw)),
        _ => Literal::I32(i32::from_le_bytes(raw)),
    }
}

/// Pack a host vector (one column per leaf) into its device layout.
fn pack(v: &HostVector, layout: &ElemLayout, name: &str) -> Result<Vec<u8>, RuntimeError> {
    if v.columns.len() != layout.leaves.len() || v.columns.iter().any(|c| c.len() != v.len) {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}`: {} columns of lengths {:?} do not match its element type ({} leaves, length {})",
            v.columns.len(),
            v.columns.iter().map(Column::len).collect::<Vec<_>>(),
            layout.leaves.len(),
            v.len
        )));
    }
    let stride = layout.stride as usize;
    // wgpu refuses empty bindings; a zero-length vector still gets one element of storage.
    let mut bytes = vec![0u8; (v.len.max(1) * stride).max(4).next_multiple_of(4)];
    for (col, (off, stored)) in v.columns.iter().zip(&layout.leaves) {
        for i in 0..v.len {
            put(&mut bytes, i * stride + *off as usize, *stored, col.get(i))?;
        }
    }
    Ok(bytes)
}

fn unpack(bytes: &[u8], v: &mut HostVector, layout: &ElemLayout) {
    let stride = layout.stride as usize;
    for (col, (off, stored)) in v.columns.iter_mut().zip(&layout.leaves) {
        for i in 0..v.len {
            col.set(i, get(bytes, i * stride + *off as usize, *stored));
        }
    }
}

impl Device for WgpuDevice {
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
        self.check_config(&config)?;
        let generated = sarek_compiler::generate(kernel, Target::Wgsl, &self.options)
            .map_err(|d| RuntimeError::refused(Target::Wgsl, &kernel.name, d))?;
        let abi = &generated.abi;
        if args.len() != abi.params.len() {
            return Err(RuntimeError::Arguments(format!(
                "kernel `{}` takes {} arguments, {} given",
                kernel.name,
                abi.params.len(),
                args.len()
            )));
        }
        // A device limit is a refusal of the kernel, not a pipeline validation error.
        if let Some(refusal) = crate::capability::refuse_buffer_count(
            kernel,
            0,
            self.limits.max_storage_buffers_per_shader_stage,
            Target::Wgsl,
            &self.info.name,
        ) {
            return Err(refusal);
        }
        let compiled = self.pipeline(&generated.source, abi, config.block)?;

        // Uniform block and storage buffers, straight from the ABI descriptor.
        let mut uniform = vec![0u8; abi.uniform_size.unwrap_or(0) as usize];
        let mut storage: Vec<(usize, u32, Vec<u8>)> = Vec::new();
        for (i, (p, arg)) in abi.params.iter().zip(args.iter()).enumerate() {
            match (&p.kind, arg) {
                (
                    AbiParamKind::Value {
                        layout,
                        slot: ArgSlot::Uniform { offset },
                    },
                    ArgValue::Scalar(v),
                ) => {
                    let (off, st) = layout
                        .leaves
                        .first()
                        .copied()
                        .unwrap_or((0, Stored::Native(Scalar::I32)));
                    put(&mut uniform, (*offset + off) as usize, st, *v)?;
                }
                (
                    AbiParamKind::Value {
                        layout,
                        slot: ArgSlot::Uniform { offset },
                    },
                    ArgValue::Aggregate(vs),
                ) => {
                    if vs.len() != layout.leaves.len() {
                        return Err(RuntimeError::Arguments(format!(
                            "argument `{}` has {} components, its type has {}",
                            p.name,
                            vs.len(),
                            layout.leaves.len()
                        )));
                    }
                    for ((off, st), v) in layout.leaves.iter().zip(vs) {
                        put(&mut uniform, (*offset + off) as usize, *st, *v)?;
                    }
                }
                (
                    AbiParamKind::Value {
                        slot: ArgSlot::None,
                        ..
                    },
                    _,
                ) => {}
                (
                    AbiParamKind::Vector {
                        elem,
                        buffer: ArgSlot::Binding { binding, .. },
                        length,
                    },
                    ArgValue::Vector(v),
                ) => {
                    let len = i32::try_from(v.len).map_err(|_| {
                        RuntimeError::Arguments(format!("vector `{}` is too long", p.name))
                    })?;
                    if let ArgSlot::Uniform { offset } = length {
                        put(
                            &mut uniform,
                            *offset as usize,
                            Stored::Native(Scalar::I32),
                            Literal::I32(len),
                        )?;
                    }
                    storage.push((i, *binding, pack(v, elem, &p.name)?));
                }
                (kind, arg) => {
                    return Err(RuntimeError::Arguments(format!(
                        "argument `{}`: {} given where the kernel expects {}",
                        p.name,
                        match arg {
                            ArgValue::Scalar(_) => "a scalar",
                            ArgValue::Aggregate(_) => "a record/variant",
                            ArgValue::Vector(_) => "a vector",
                        },
                        match kind {
                            AbiParamKind::Vector { .. } => "a vector",
                            AbiParamKind::Value { .. } => "a value",
                        }
                    )));
                }
            }
        }
        // The trap status word travels as one more storage buffer, zeroed.
        let trap_at = match abi.trap_status {
            Some(ArgSlot::Binding { binding, .. }) => {
                storage.push((usize::MAX, binding, vec![0; 4]));
                Some(storage.len() - 1)
            }
            _ => None,
        };

        let usage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let (buffers, uniform_buf, bind_group) = self
            .scoped("could not allocate the kernel's buffers", || {
                let buffers: Vec<wgpu::Buffer> = storage
                    .iter()
                    .map(|(_, _, bytes)| {
                        let b = self.device.create_buffer(&wgpu::BufferDescriptor {
                            label: None,
                            size: bytes.len() as u64,
                            usage,
                            mapped_at_creation: false,
                        });
                        self.queue.write_buffer(&b, 0, bytes);
                        b
                    })
                    .collect();
                let uniform_buf = abi.uniform_binding.map(|_| {
                    let b = self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("Params"),
                        size: uniform.len().max(16) as u64,
                        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    });
                    self.queue.write_buffer(&b, 0, &uniform);
                    b
                });
                let mut entries: Vec<wgpu::BindGroupEntry> = storage
                    .iter()
                    .zip(&buffers)
                    .map(|((_, binding, _), b)| wgpu::BindGroupEntry {
                        binding: *binding,
                        resource: b.as_entire_binding(),
                    })
                    .collect();
                if let (Some((_, b)), Some(u)) = (abi.uniform_binding, &uniform_buf) {
                    entries.push(wgpu::BindGroupEntry {
                        binding: b,
                        resource: u.as_entire_binding(),
                    });
                }
                let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &compiled.layout,
                    entries: &entries,
                });
                (buffers, uniform_buf, bind_group)
            })
            .map_err(RuntimeError::Launch)?;
        // Uploads finish before the dispatch is timed.
        self.queue.submit([]);
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RuntimeError::Launch(format!("wgpu: {e}")))?;

        let queries = self.timestamps.then(|| {
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
        let dispatched = Instant::now();
        self.scoped("failed to run the kernel", || {
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
                pass.set_pipeline(&compiled.pipeline);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(config.grid[0], config.grid[1], config.grid[2]);
            }
            if let Some((set, resolve, read)) = &queries {
                enc.resolve_query_set(set, 0..2, resolve, 0);
                enc.copy_buffer_to_buffer(resolve, 0, read, 0, 16);
            }
            self.queue.submit([enc.finish()]);
        })
        .map_err(RuntimeError::Launch)?;
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RuntimeError::Launch(format!("wgpu: {e}")))?;
        let wall = dispatched.elapsed();
        let kernel_time = match &queries {
            Some((_, _, read)) => {
                let ticks = read_back(&self.device, read)?;
                let t0 = u64::from_le_bytes(ticks[0..8].try_into().unwrap_or([0; 8]));
                let t1 = u64::from_le_bytes(ticks[8..16].try_into().unwrap_or([0; 8]));
                let ns =
                    t1.saturating_sub(t0) as f64 * f64::from(self.queue.get_timestamp_period());
                if ns > 0.0 {
                    Duration::from_nanos(ns as u64)
                } else {
                    wall
                }
            }
            None => wall,
        };

        // Read every vector back through a staging buffer.
        let staging: Vec<wgpu::Buffer> = self
            .scoped("failed to read results back", || {
                let mut enc = self
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
                let staging: Vec<wgpu::Buffer> = buffers
                    .iter()
                    .map(|b| {
                        let s = self.device.create_buffer(&wgpu::BufferDescriptor {
                            label: None,
                            size: b.size(),
                            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                            mapped_at_creation: false,
                        });
                        enc.copy_buffer_to_buffer(b, 0, &s, 0, b.size());
                        s
                    })
                    .collect();
                self.queue.submit([enc.finish()]);
                staging
            })
            .map_err(RuntimeError::Launch)?;
        for (k, ((i, _, _), s)) in storage.iter().zip(&staging).enumerate() {
            let bytes = read_back(&self.device, s)?;
            if Some(k) == trap_at {
                let code = i32::from_le_bytes(bytes[..4].try_into().unwrap_or([0; 4]));
                if code != 0 {
                    return Err(crate::device::trap_fault(kernel, code, Backend::Wgpu));
                }
                continue;
            }
            if let (ArgValue::Vector(v), AbiParamKind::Vector { elem, .. }) =
                (&mut args[*i], &abi.params[*i].kind)
            {
                unpack(&bytes, v, elem);
            }
        }
        drop(uniform_buf);
        Ok(LaunchStats {
            kernel_time,
            total_time: started.elapsed(),
        })
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
