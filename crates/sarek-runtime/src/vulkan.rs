//! The `vulkan` backend: GLSL 450 compute (the GLSL generator) -> SPIR-V (glslangValidator)
//! -> a Vulkan compute pipeline through `ash`.
//!
//! - The Vulkan loader is opened at run time (`ash`'s `loaded` feature), so the binary builds
//!   and runs where libvulkan is absent: [`open`] then reports the backend unavailable.
//! - Device choice: the first physical device with a compute queue, preferring discrete, then
//!   integrated, virtual and CPU devices (lavapipe on CI machines).
//! - Caches: SPIR-V modules and pipeline layouts per generated GLSL source (the GLSL depends
//!   on the kernel and on the device's capabilities), pipelines per (source, block size); the
//!   block size is a specialization constant, so one module serves every block size. A
//!   `VkPipelineCache` sits under both.
//! - A launch packs every vector into a host-visible storage buffer with the ABI's std430
//!   element layout (one column per leaf on the host), packs scalars and lengths into the push
//!   constants at the ABI's offsets, dispatches, waits on a fence, and unpacks the buffers
//!   back into the host vectors. Kernel time comes from timestamp queries when the queue has
//!   them, else from the wall clock around submit and wait.
//! - Refusals: a kernel the GLSL generator refuses, or one needing what the device lacks
//!   (`shaderInt64`, `shaderFloat64`, push-constant space, storage-buffer bindings), is a
//!   located [`RuntimeError::Refused`] before any module or pipeline is made; GLSL that
//!   glslang rejects is [`RuntimeError::Compile`] (a generator bug).
//! - Warp operations use native subgroups when the device's subgroup size is the language's
//!   warp size (32) with vote, ballot and shuffle; elsewhere (lavapipe has 8 lanes) the
//!   generator emulates them in shared memory, so results match the interpreter everywhere.

use crate::capability;
use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, LaunchStats, RuntimeError};
use crate::value::{ArgValue, HostVector};
use ash::vk;
use sarek_compiler::abi::{AbiParamKind, ArgSlot, ElemLayout, Stored};
use sarek_compiler::back::glsl::{self, Warps, spirv};
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::{Literal, Scalar};
use sarek_compiler::{Diagnostic, Target, TargetOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The language's warp size: subgroups are used only when the device's size equals it.
const WARP_SIZE: u32 = 32;

fn unavailable(reason: impl Into<String>) -> RuntimeError {
    RuntimeError::Unavailable {
        backend: Backend::Vulkan,
        reason: reason.into(),
    }
}

fn vk_err(what: &str) -> impl Fn(vk::Result) -> RuntimeError + '_ {
    move |e| RuntimeError::Launch(format!("vulkan: {what} failed: {e}"))
}

/// Open the best Vulkan device with a compute queue, or say why there is none.
pub fn open() -> Result<Arc<dyn Device>, RuntimeError> {
    open_with(false)
}

/// As [`open`], but with the device's `shaderInt64` and `shaderFloat64` left disabled, as on
/// a device without them: tests of the refusals such devices give.
pub fn open_without_64bit_types() -> Result<Arc<dyn Device>, RuntimeError> {
    open_with(true)
}

fn open_with(mask_64bit: bool) -> Result<Arc<dyn Device>, RuntimeError> {
    if !spirv::glslang_available() {
        return Err(unavailable(
            "glslangValidator (package glslang-tools) is not installed",
        ));
    }
    let state = State::new(mask_64bit)?;
    Ok(Arc::new(VulkanDevice {
        state: Mutex::new(state),
    }))
}

struct VulkanDevice {
    state: Mutex<State>,
}

/// A compiled module: what every pipeline of one GLSL source shares.
struct Module {
    module: vk::ShaderModule,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    abi: sarek_compiler::abi::Abi,
}

struct State {
    // Kept alive for the instance's function pointers and the loader library.
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    queue: vk::Queue,
    command_pool: vk::CommandPool,
    pipeline_cache: vk::PipelineCache,
    memory: vk::PhysicalDeviceMemoryProperties,
    limits: vk::PhysicalDeviceLimits,
    timestamps: bool,
    info: DeviceInfo,
    /// `shaderInt64`: without it a kernel using int64 is refused before any module is made.
    int64: bool,
    options: TargetOptions,
    warps: Warps,
    modules: HashMap<String, Module>,
    pipelines: HashMap<(String, [u32; 3]), vk::Pipeline>,
}

// SAFETY: the Vulkan handles are plain identifiers; every use goes through the Mutex, which
// gives the external synchronisation Vulkan requires for the queue, pools and caches.
unsafe impl Send for State {}

impl State {
    fn new(mask_64bit: bool) -> Result<State, RuntimeError> {
        // SAFETY: loading the system Vulkan loader; its initialisers are trusted.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            unavailable(format!(
                "the Vulkan loader (libvulkan) could not be loaded: {e}"
            ))
        })?;
        let version = unsafe { entry.try_enumerate_instance_version() }
            .ok()
            .flatten()
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_1 {
            return Err(unavailable("the Vulkan loader is older than 1.1"));
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"sarek")
            .engine_name(c"sarek")
            .api_version(vk::API_VERSION_1_1.max(version.min(vk::API_VERSION_1_2)));
        let create = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: valid create info.
        let instance = unsafe { entry.create_instance(&create, None) }
            .map_err(|e| unavailable(format!("no Vulkan instance: {e}")))?;
        match Self::with_instance(entry, instance.clone(), mask_64bit) {
            Ok(s) => Ok(s),
            Err(e) => {
                // SAFETY: nothing else uses the instance.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn with_instance(
        entry: ash::Entry,
        instance: ash::Instance,
        mask_64bit: bool,
    ) -> Result<State, RuntimeError> {
        // SAFETY: queries on a live instance.
        let devices = unsafe { instance.enumerate_physical_devices() }
            .map_err(|e| unavailable(format!("cannot enumerate Vulkan devices: {e}")))?;
        let rank = |t: vk::PhysicalDeviceType| match t {
            vk::PhysicalDeviceType::DISCRETE_GPU => 0,
            vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
            vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
            vk::PhysicalDeviceType::CPU => 3,
            _ => 4,
        };
        let mut candidates = Vec::new();
        for pd in devices {
            let props = unsafe { instance.get_physical_device_properties(pd) };
            if props.api_version < vk::API_VERSION_1_1 {
                continue;
            }
            let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
            if let Some(qf) = families
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
            {
                candidates.push((
                    rank(props.device_type),
                    pd,
                    qf as u32,
                    families[qf].timestamp_valid_bits,
                ));
            }
        }
        candidates.sort_by_key(|c| c.0);
        let Some(&(_, pd, qf, ts_bits)) = candidates.first() else {
            return Err(unavailable("no Vulkan 1.1 device with a compute queue"));
        };
        let props = unsafe { instance.get_physical_device_properties(pd) };
        let memory = unsafe { instance.get_physical_device_memory_properties(pd) };
        let features = unsafe { instance.get_physical_device_features(pd) };
        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup);
        unsafe { instance.get_physical_device_properties2(pd, &mut props2) };
        let mut atomic64 = vk::PhysicalDeviceShaderAtomicInt64Features::default();
        let mut features2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut atomic64);
        unsafe { instance.get_physical_device_features2(pd, &mut features2) };

        let ops = vk::SubgroupFeatureFlags::BASIC
            | vk::SubgroupFeatureFlags::VOTE
            | vk::SubgroupFeatureFlags::BALLOT
            | vk::SubgroupFeatureFlags::SHUFFLE;
        let native_warps = subgroup.subgroup_size == WARP_SIZE
            && subgroup.supported_operations.contains(ops)
            && subgroup
                .supported_stages
                .contains(vk::ShaderStageFlags::COMPUTE);
        let float64 = features.shader_float64 == vk::TRUE && !mask_64bit;
        let int64 = features.shader_int64 == vk::TRUE && !mask_64bit;
        let int64_atomics = int64
            && atomic64.shader_buffer_int64_atomics == vk::TRUE
            && atomic64.shader_shared_int64_atomics == vk::TRUE;

        let enabled = vk::PhysicalDeviceFeatures::default()
            .shader_float64(float64)
            .shader_int64(int64);
        let mut enable_atomic64 = vk::PhysicalDeviceShaderAtomicInt64Features::default()
            .shader_buffer_int64_atomics(int64_atomics)
            .shader_shared_int64_atomics(int64_atomics);
        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(qf)
            .queue_priorities(&priorities)];
        let mut create = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_features(&enabled);
        if int64_atomics {
            create = create.push_next(&mut enable_atomic64);
        }
        // SAFETY: valid create info for a queried physical device.
        let device = unsafe { instance.create_device(pd, &create, None) }
            .map_err(|e| unavailable(format!("cannot create a Vulkan device: {e}")))?;
        let queue = unsafe { device.get_device_queue(qf, 0) };
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(qf)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        let command_pool = unsafe { device.create_command_pool(&pool_info, None) }
            .map_err(vk_err("command pool"))?;
        let pipeline_cache =
            unsafe { device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None) }
                .map_err(vk_err("pipeline cache"))?;
        let name = props.device_name_as_c_str().map_or_else(
            |_| "unknown Vulkan device".into(),
            |n| n.to_string_lossy().into_owned(),
        );
        let limits = props.limits;
        let info = DeviceInfo {
            backend: Backend::Vulkan,
            name,
            // Emulated warps keep one scratch word per thread for up to 1024 threads.
            max_threads_per_block: limits.max_compute_work_group_invocations.min(1024),
            // Warp operations run everywhere: natively or emulated in shared memory.
            subgroups: true,
            float64,
        };
        Ok(State {
            _entry: entry,
            instance,
            device,
            queue,
            command_pool,
            pipeline_cache,
            memory,
            limits,
            timestamps: ts_bits > 0 && limits.timestamp_compute_and_graphics == vk::TRUE,
            info,
            int64,
            options: TargetOptions {
                subgroups: true,
                float64,
                int64_atomics,
                checked: false, // issue 17: checks are inserted per launch
            },
            warps: if native_warps {
                Warps::Native
            } else {
                Warps::Emulated
            },
            modules: HashMap::new(),
            pipelines: HashMap::new(),
        })
    }

    /// The module for a generated source (compiling it on first use).
    fn module(
        &mut self,
        source: &str,
        abi: &sarek_compiler::abi::Abi,
    ) -> Result<&Module, RuntimeError> {
        if !self.modules.contains_key(source) {
            let words = spirv::compile(source).map_err(|e| {
                RuntimeError::Compile(format!("glslang rejected the generated GLSL: {e}"))
            })?;
            let d = &self.device;
            let module = unsafe {
                d.create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
            }
            .map_err(vk_err("shader module"))?;
            let buffers = abi
                .params
                .iter()
                .filter(|p| matches!(p.kind, AbiParamKind::Vector { .. }))
                .count()
                + usize::from(abi.uniform_binding.is_some())
                + usize::from(abi.trap_status.is_some());
            let bindings: Vec<_> = (0..buffers as u32)
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let set_layout = unsafe {
                d.create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                    None,
                )
            }
            .map_err(vk_err("descriptor set layout"))?;
            let ranges: Vec<_> = abi
                .uniform_size
                .filter(|_| abi.uniform_binding.is_none())
                .map(|size| {
                    vk::PushConstantRange::default()
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                        .offset(0)
                        .size(size)
                })
                .into_iter()
                .collect();
            let set_layouts = [set_layout];
            let info = vk::PipelineLayoutCreateInfo::default()
                .set_layouts(&set_layouts)
                .push_constant_ranges(&ranges);
            let layout = unsafe { d.create_pipeline_layout(&info, None) }
                .map_err(vk_err("pipeline layout"))?;
            self.modules.insert(
                source.to_string(),
                Module {
                    module,
                    set_layout,
                    layout,
                    abi: abi.clone(),
                },
            );
        }
        Ok(&self.modules[source])
    }

    fn pipeline(&mut self, source: &str, block: [u32; 3]) -> Result<vk::Pipeline, RuntimeError> {
        let key = (source.to_string(), block);
        if let Some(p) = self.pipelines.get(&key) {
            return Ok(*p);
        }
        let m = &self.modules[source];
        let entries: Vec<_> = (0..3u32)
            .map(|i| {
                vk::SpecializationMapEntry::default()
                    .constant_id(i)
                    .offset(4 * i)
                    .size(4)
            })
            .collect();
        let data: Vec<u8> = block.iter().flat_map(|b| b.to_le_bytes()).collect();
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(m.module)
            .name(c"main")
            .specialization_info(&spec);
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(m.layout);
        let pipeline = unsafe {
            self.device
                .create_compute_pipelines(self.pipeline_cache, &[info], None)
        }
        .map_err(|(_, e)| {
            RuntimeError::Launch(format!("vulkan: compute pipeline creation failed: {e}"))
        })?[0];
        self.pipelines.insert(key, pipeline);
        Ok(pipeline)
    }

    fn memory_type(&self, bits: u32) -> Option<u32> {
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        (0..self.memory.memory_type_count).find(|&i| {
            bits & (1 << i) != 0
                && self.memory.memory_types[i as usize]
                    .property_flags
                    .contains(want)
        })
    }

    fn launch(
        &mut self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<LaunchStats, RuntimeError> {
        let start = Instant::now();
        self.check_capabilities(kernel)?;
        let generated = glsl::generate_with(kernel, &self.options, self.warps)
            .map_err(|d| RuntimeError::refused(Target::Glsl, &kernel.name, d))?;
        self.check_launch(kernel, &generated.abi, config, args)?;
        self.module(&generated.source, &generated.abi)?;
        let pipeline = self.pipeline(&generated.source, config.block)?;
        let mut scratch = Scratch::default();
        let result = self.run(&generated.source, pipeline, config, args, &mut scratch);
        scratch.destroy(&self.device);
        let (kernel_time, trap) = result?;
        if trap != 0 {
            return Err(crate::device::trap_fault(kernel, trap, Backend::Vulkan));
        }
        Ok(LaunchStats {
            kernel_time,
            total_time: start.elapsed(),
        })
    }

    /// Refuse, located, a kernel needing a 64-bit type this device lacks: SPIR-V declaring
    /// `Int64`/`Float64` on such a device is invalid usage, which drivers need not report.
    fn check_capabilities(&self, kernel: &Kernel) -> Result<(), RuntimeError> {
        let missing = [
            (!self.int64, Scalar::I64, "shaderInt64"),
            (!self.info.float64, Scalar::F64, "shaderFloat64"),
        ];
        for (_, scalar, feature) in missing.into_iter().filter(|m| m.0) {
            if let Some(refusal) =
                capability::refuse_scalar(kernel, scalar, Target::Glsl, &self.info.name, feature)
            {
                return Err(refusal);
            }
        }
        Ok(())
    }

    fn check_launch(
        &self,
        kernel: &Kernel,
        abi: &sarek_compiler::abi::Abi,
        config: LaunchConfig,
        args: &[ArgValue],
    ) -> Result<(), RuntimeError> {
        if args.len() != abi.params.len() {
            return Err(RuntimeError::Arguments(format!(
                "kernel `{}` takes {} arguments, {} given",
                kernel.name,
                abi.params.len(),
                args.len()
            )));
        }
        let l = &self.limits;
        for axis in 0..3 {
            if config.block[axis] == 0 || config.block[axis] > l.max_compute_work_group_size[axis] {
                return Err(RuntimeError::Launch(format!(
                    "block size {} on axis {} is outside this device's 1..={}",
                    config.block[axis], axis, l.max_compute_work_group_size[axis]
                )));
            }
            if config.grid[axis] > l.max_compute_work_group_count[axis] {
                return Err(RuntimeError::Launch(format!(
                    "grid size {} on axis {} exceeds this device's {}",
                    config.grid[axis], axis, l.max_compute_work_group_count[axis]
                )));
            }
        }
        if config.threads_per_block() > self.info.max_threads_per_block {
            return Err(RuntimeError::Launch(format!(
                "{} threads per block exceed this device's {}",
                config.threads_per_block(),
                self.info.max_threads_per_block
            )));
        }
        if let Some(size) = abi.uniform_size
            && abi.uniform_binding.is_none()
            && size > l.max_push_constants_size
        {
            let diag = Diagnostic::error(
                kernel.span,
                format!(
                    "kernel `{}` passes {size} bytes of parameters as push constants, the device \
                     `{}` offers {} (GLSL)",
                    kernel.name, self.info.name, l.max_push_constants_size
                ),
            )
            .with_label("this kernel's scalar parameters do not fit");
            return Err(RuntimeError::refused(Target::Glsl, &kernel.name, [diag]));
        }
        let storage_limit = l
            .max_per_stage_descriptor_storage_buffers
            .min(l.max_descriptor_set_storage_buffers);
        if let Some(refusal) = capability::refuse_buffer_count(
            kernel,
            u32::from(abi.uniform_binding.is_some()),
            storage_limit,
            Target::Glsl,
            &self.info.name,
        ) {
            return Err(refusal);
        }
        Ok(())
    }

    /// Create, fill, dispatch, wait, read back. Resources go into `scratch` as they are made,
    /// so the caller frees them whatever happens.
    fn run(
        &self,
        source: &str,
        pipeline: vk::Pipeline,
        config: LaunchConfig,
        args: &mut [ArgValue],
        scratch: &mut Scratch,
    ) -> Result<(Duration, i32), RuntimeError> {
        let d = &self.device;
        let m = &self.modules[source];
        let abi = &m.abi;
        let mut push = vec![0u8; abi.uniform_size.unwrap_or(0) as usize];
        // (binding, buffer, memory, size, argument index; usize::MAX for the parameter block,
        // TRAP for the trap status word).
        let mut buffers = Vec::new();
        for (i, (p, arg)) in abi.params.iter().zip(args.iter()).enumerate() {
            match (&p.kind, arg) {
                (
                    AbiParamKind::Vector {
                        elem,
                        buffer,
                        length,
                    },
                    ArgValue::Vector(v),
                ) => {
                    let ArgSlot::Binding { binding, .. } = buffer else {
                        continue;
                    };
                    let bytes = pack_vector(v, elem)?;
                    let (buf, mem) = self.host_buffer(&bytes, scratch)?;
                    buffers.push((*binding, buf, mem, bytes.len(), i));
                    if let ArgSlot::Uniform { offset } = length {
                        let len = i32::try_from(v.len).map_err(|_| {
                            RuntimeError::Arguments(format!(
                                "vector `{}` is too long for int32 lengths",
                                p.name
                            ))
                        })?;
                        put(
                            &mut push,
                            *offset as usize,
                            Literal::I32(len),
                            Stored::Native(Scalar::I32),
                        );
                    }
                }
                (
                    AbiParamKind::Value {
                        layout,
                        slot: ArgSlot::Uniform { offset },
                    },
                    arg,
                ) => {
                    let leaves: Vec<Literal> = match arg {
                        ArgValue::Scalar(l) => vec![*l],
                        ArgValue::Aggregate(ls) => ls.clone(),
                        ArgValue::Vector(_) => {
                            return Err(RuntimeError::Arguments(format!(
                                "parameter `{}` is not a vector",
                                p.name
                            )));
                        }
                    };
                    if leaves.len() != layout.leaves.len() {
                        return Err(RuntimeError::Arguments(format!(
                            "parameter `{}` needs {} values, {} given",
                            p.name,
                            layout.leaves.len(),
                            leaves.len()
                        )));
                    }
                    for (lit, (at, stored)) in leaves.iter().zip(&layout.leaves) {
                        put(&mut push, (*offset + *at) as usize, *lit, *stored);
                    }
                }
                _ => {
                    return Err(RuntimeError::Arguments(format!(
                        "argument for `{}` does not fit the parameter",
                        p.name
                    )));
                }
            }
        }
        if let Some((_, binding)) = abi.uniform_binding {
            // Parameters past the push-constant limit: a storage buffer, never read back.
            let (buf, mem) = self.host_buffer(&push, scratch)?;
            buffers.push((binding, buf, mem, push.len(), usize::MAX));
            push.clear();
        }
        const TRAP: usize = usize::MAX - 1;
        if let Some(ArgSlot::Binding { binding, .. }) = abi.trap_status {
            let (buf, mem) = self.host_buffer(&[0; 4], scratch)?;
            buffers.push((binding, buf, mem, 4, TRAP));
        }
        unsafe {
            let set = if buffers.is_empty() {
                None
            } else {
                let sizes = [vk::DescriptorPoolSize {
                    ty: vk::DescriptorType::STORAGE_BUFFER,
                    descriptor_count: buffers.len() as u32,
                }];
                let pool = d
                    .create_descriptor_pool(
                        &vk::DescriptorPoolCreateInfo::default()
                            .max_sets(1)
                            .pool_sizes(&sizes),
                        None,
                    )
                    .map_err(vk_err("descriptor pool"))?;
                scratch.descriptor_pool = pool;
                let layouts = [m.set_layout];
                let set = d
                    .allocate_descriptor_sets(
                        &vk::DescriptorSetAllocateInfo::default()
                            .descriptor_pool(pool)
                            .set_layouts(&layouts),
                    )
                    .map_err(vk_err("descriptor set"))?[0];
                let infos: Vec<_> = buffers
                    .iter()
                    .map(|(_, b, ..)| {
                        [vk::DescriptorBufferInfo::default()
                            .buffer(*b)
                            .offset(0)
                            .range(vk::WHOLE_SIZE)]
                    })
                    .collect();
                let writes: Vec<_> = buffers
                    .iter()
                    .zip(&infos)
                    .map(|((binding, ..), info)| {
                        vk::WriteDescriptorSet::default()
                            .dst_set(set)
                            .dst_binding(*binding)
                            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                            .buffer_info(info)
                    })
                    .collect();
                d.update_descriptor_sets(&writes, &[]);
                Some(set)
            };
            let cb = d
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(self.command_pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                )
                .map_err(vk_err("command buffer"))?[0];
            scratch.command = Some((self.command_pool, cb));
            let queries = if self.timestamps {
                let qp = d
                    .create_query_pool(
                        &vk::QueryPoolCreateInfo::default()
                            .query_type(vk::QueryType::TIMESTAMP)
                            .query_count(2),
                        None,
                    )
                    .map_err(vk_err("query pool"))?;
                scratch.query_pool = qp;
                Some(qp)
            } else {
                None
            };
            d.begin_command_buffer(
                cb,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
            .map_err(vk_err("begin command buffer"))?;
            if let Some(qp) = queries {
                d.cmd_reset_query_pool(cb, qp, 0, 2);
                d.cmd_write_timestamp(cb, vk::PipelineStageFlags::TOP_OF_PIPE, qp, 0);
            }
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
            if let Some(set) = set {
                d.cmd_bind_descriptor_sets(
                    cb,
                    vk::PipelineBindPoint::COMPUTE,
                    m.layout,
                    0,
                    &[set],
                    &[],
                );
            }
            if !push.is_empty() {
                d.cmd_push_constants(cb, m.layout, vk::ShaderStageFlags::COMPUTE, 0, &push);
            }
            d.cmd_dispatch(cb, config.grid[0], config.grid[1], config.grid[2]);
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            );
            if let Some(qp) = queries {
                d.cmd_write_timestamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, qp, 1);
            }
            d.end_command_buffer(cb)
                .map_err(vk_err("end command buffer"))?;
            let fence = d
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .map_err(vk_err("fence"))?;
            scratch.fence = fence;
            let cbs = [cb];
            let submit = vk::SubmitInfo::default().command_buffers(&cbs);
            let wall = Instant::now();
            d.queue_submit(self.queue, &[submit], fence)
                .map_err(vk_err("queue submit"))?;
            d.wait_for_fences(&[fence], true, u64::MAX)
                .map_err(vk_err("waiting for the kernel"))?;
            let mut elapsed = wall.elapsed();
            if let Some(qp) = queries {
                let mut stamps = [0u64; 2];
                if d.get_query_pool_results(
                    qp,
                    0,
                    &mut stamps,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
                .is_ok()
                {
                    let ns = stamps[1].saturating_sub(stamps[0]) as f64
                        * self.limits.timestamp_period as f64;
                    elapsed = Duration::from_nanos(ns as u64);
                }
            }
            let mut trap = 0;
            for (_, _, mem, size, i) in buffers.iter().filter(|b| b.4 != usize::MAX) {
                let ptr = d
                    .map_memory(*mem, 0, *size as u64, vk::MemoryMapFlags::empty())
                    .map_err(vk_err("map memory"))?;
                let bytes = std::slice::from_raw_parts(ptr as *const u8, *size).to_vec();
                d.unmap_memory(*mem);
                if *i == TRAP {
                    trap = i32::from_le_bytes(bytes[..4].try_into().unwrap_or([0; 4]));
                    continue;
                }
                let (AbiParamKind::Vector { elem, .. }, ArgValue::Vector(v)) =
                    (&abi.params[*i].kind, &mut args[*i])
                else {
                    continue;
                };
                unpack_vector(&bytes, elem, v);
            }
            Ok((elapsed, trap))
        }
    }

    /// A host-visible, coherent storage buffer holding `bytes`.
    fn host_buffer(
        &self,
        bytes: &[u8],
        scratch: &mut Scratch,
    ) -> Result<(vk::Buffer, vk::DeviceMemory), RuntimeError> {
        let d = &self.device;
        // A zero-length vector still needs a (non-empty) buffer to bind.
        let size = bytes.len().max(16) as u64;
        unsafe {
            let buffer = d
                .create_buffer(
                    &vk::BufferCreateInfo::default()
                        .size(size)
                        .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
                        .sharing_mode(vk::SharingMode::EXCLUSIVE),
                    None,
                )
                .map_err(vk_err("buffer creation"))?;
            scratch.buffers.push(buffer);
            let req = d.get_buffer_memory_requirements(buffer);
            let ty = self.memory_type(req.memory_type_bits).ok_or_else(|| {
                RuntimeError::Launch("vulkan: no host-visible memory for storage buffers".into())
            })?;
            let mem = d
                .allocate_memory(
                    &vk::MemoryAllocateInfo::default()
                        .allocation_size(req.size)
                        .memory_type_index(ty),
                    None,
                )
                .map_err(vk_err("memory allocation"))?;
            scratch.memories.push(mem);
            d.bind_buffer_memory(buffer, mem, 0)
                .map_err(vk_err("bind buffer memory"))?;
            let ptr = d
                .map_memory(mem, 0, size, vk::MemoryMapFlags::empty())
                .map_err(vk_err("map memory"))?;
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr as *mut u8, bytes.len());
            d.unmap_memory(mem);
            Ok((buffer, mem))
        }
    }
}

impl Drop for State {
    fn drop(&mut self) {
        // SAFETY: every object was created from this device/instance and no work is pending
        // (each launch waits for its fence).
        unsafe {
            let _ = self.device.device_wait_idle();
            for p in self.pipelines.values() {
                self.device.destroy_pipeline(*p, None);
            }
            for m in self.modules.values() {
                self.device.destroy_pipeline_layout(m.layout, None);
                self.device
                    .destroy_descriptor_set_layout(m.set_layout, None);
                self.device.destroy_shader_module(m.module, None);
            }
            self.device
                .destroy_pipeline_cache(self.pipeline_cache, None);
            self.device.destroy_command_pool(self.command_pool, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// Per-launch objects, freed after the launch whatever its outcome.
#[derive(Default)]
struct Scratch {
    buffers: Vec<vk::Buffer>,
    memories: Vec<vk::DeviceMemory>,
    descriptor_pool: vk::DescriptorPool,
    query_pool: vk::QueryPool,
    fence: vk::Fence,
    command: Option<(vk::CommandPool, vk::CommandBuffer)>,
}

impl Scratch {
    fn destroy(self, d: &ash::Device) {
        // SAFETY: the launch waited for its fence (or never submitted), so nothing is in use;
        // destroying a null handle is a no-op.
        unsafe {
            if let Some((pool, cb)) = self.command {
                d.free_command_buffers(pool, &[cb]);
            }
            d.destroy_fence(self.fence, None);
            d.destroy_query_pool(self.query_pool, None);
            d.destroy_descriptor_pool(self.descriptor_pool, None);
            for b in self.buffers {
                d.destroy_buffer(b, None);
            }
            for m in self.memories {
                d.free_memory(m, None);
            }
        }
    }
}

impl Device for VulkanDevice {
    fn info(&self) -> DeviceInfo {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .info
            .clone()
    }

    fn launch(
        &self,
        kernel: &Kernel,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<LaunchStats, RuntimeError> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .launch(kernel, config, args)
    }
}

/// Write `lit` at byte `at` as `stored`.
fn put(buf: &mut [u8], at: usize, lit: Literal, stored: Stored) {
    let bytes: Vec<u8> = match (stored, lit) {
        (Stored::BoolAsU32, Literal::Bool(b)) => (b as u32).to_le_bytes().to_vec(),
        (Stored::BoolAsU8, Literal::Bool(b)) => vec![b as u8],
        (_, Literal::Bool(b)) => vec![b as u8],
        (_, Literal::I32(v)) => v.to_le_bytes().to_vec(),
        (_, Literal::I64(v)) => v.to_le_bytes().to_vec(),
        (_, Literal::F32(v)) => v.to_le_bytes().to_vec(),
        (_, Literal::F64(v)) => v.to_le_bytes().to_vec(),
    };
    buf[at..at + bytes.len()].copy_from_slice(&bytes);
}

/// Read the scalar `scalar` stored as `stored` at byte `at`.
fn get(buf: &[u8], at: usize, scalar: Scalar, stored: Stored) -> Literal {
    let b4 = || <[u8; 4]>::try_from(&buf[at..at + 4]).expect("4 bytes");
    let b8 = || <[u8; 8]>::try_from(&buf[at..at + 8]).expect("8 bytes");
    match (scalar, stored) {
        (Scalar::Bool, Stored::BoolAsU32) => Literal::Bool(u32::from_le_bytes(b4()) != 0),
        (Scalar::Bool, _) => Literal::Bool(buf[at] != 0),
        (Scalar::I32, _) => Literal::I32(i32::from_le_bytes(b4())),
        (Scalar::I64, _) => Literal::I64(i64::from_le_bytes(b8())),
        (Scalar::F32, _) => Literal::F32(f32::from_le_bytes(b4())),
        (Scalar::F64, _) => Literal::F64(f64::from_le_bytes(b8())),
    }
}

/// Pack a host vector (one column per leaf) into device bytes with `layout`.
fn pack_vector(v: &HostVector, layout: &ElemLayout) -> Result<Vec<u8>, RuntimeError> {
    if v.columns.len() != layout.leaves.len() || v.columns.iter().any(|c| c.len() != v.len) {
        return Err(RuntimeError::Arguments(format!(
            "a vector has {} columns of data for an element of {} fields",
            v.columns.len(),
            layout.leaves.len()
        )));
    }
    let stride = layout.stride as usize;
    let mut bytes = vec![0u8; v.len * stride];
    for (col, (off, stored)) in v.columns.iter().zip(&layout.leaves) {
        for i in 0..v.len {
            put(&mut bytes, i * stride + *off as usize, col.get(i), *stored);
        }
    }
    Ok(bytes)
}

/// Unpack device bytes into the host vector's columns.
fn unpack_vector(bytes: &[u8], layout: &ElemLayout, v: &mut HostVector) {
    let stride = layout.stride as usize;
    for (col, (off, stored)) in v.columns.iter_mut().zip(&layout.leaves) {
        let scalar = col.scalar();
        for i in 0..v.len {
            col.set(i, get(bytes, i * stride + *off as usize, scalar, *stored));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Column;

    #[test]
    fn pack_round_trip() {
        let layout = ElemLayout {
            stride: 16,
            leaves: vec![
                (0, Stored::Native(Scalar::F32)),
                (4, Stored::BoolAsU32),
                (8, Stored::Native(Scalar::I64)),
            ],
        };
        let v = HostVector {
            len: 2,
            columns: vec![
                Column::F32(vec![1.5, -2.0]),
                Column::Bool(vec![true, false]),
                Column::I64(vec![-7, 1 << 40]),
            ],
        };
        let bytes = pack_vector(&v, &layout).unwrap();
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[4..8], &[1, 0, 0, 0]);
        let mut back = HostVector {
            len: 2,
            columns: vec![
                Column::F32(vec![0.0; 2]),
                Column::Bool(vec![false; 2]),
                Column::I64(vec![0; 2]),
            ],
        };
        unpack_vector(&bytes, &layout, &mut back);
        assert_eq!(back, v);
    }
}
