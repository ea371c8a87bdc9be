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
//!   `VkPipelineCache` sits under both. [`open_sharing`] takes SPIR-V another user already
//!   compiled from the same GLSL ([`spirv::SharedSpirv`]).
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

use crate::bind::LaunchPlan;
use crate::capability;
use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, RuntimeError};
use crate::kernel::{Built, KernelHandle, KernelId};
use crate::memory::{Allocation, DeviceCore, Mem};
use crate::spirv;
use ash::vk;
use sarek_compiler::abi::{AbiParamKind, LayoutRules};
use sarek_compiler::back::glsl::{self, Warps};
use sarek_compiler::ir::Kernel;
use sarek_compiler::ir::analysis::{Feature, Needs, Support};
use sarek_compiler::{Diagnostic, Target, TargetOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// As [`open`], with GLSL compiled through `shared`: SPIR-V another user compiled from the
/// same source is taken from it instead of running glslang again.
pub fn open_sharing(shared: Arc<spirv::SharedSpirv>) -> Result<Arc<dyn Device>, RuntimeError> {
    open_with_spirv(false, Some(shared))
}

fn open_with(mask_64bit: bool) -> Result<Arc<dyn Device>, RuntimeError> {
    open_with_spirv(mask_64bit, None)
}

fn open_with_spirv(
    mask_64bit: bool,
    shared: Option<Arc<spirv::SharedSpirv>>,
) -> Result<Arc<dyn Device>, RuntimeError> {
    if !spirv::glslang_available() {
        return Err(unavailable(
            "glslangValidator (package glslang-tools) is not installed",
        ));
    }
    let mut state = State::new(mask_64bit)?;
    state.shared_spirv = shared;
    Ok(crate::memory::register(VulkanDevice {
        core: DeviceCore::new(format!("vulkan ({})", state.info.name)),
        info: state.info.clone(),
        state: Mutex::new(state),
        waited: Mutex::new(Duration::ZERO),
    }))
}

struct VulkanDevice {
    state: Mutex<State>,
    info: DeviceInfo,
    core: DeviceCore,
    waited: Mutex<Duration>,
}

/// A built kernel: the GLSL source its module is kept under, and its identity (pipelines
/// are kept per kernel and block size).
struct VkExe {
    kernel: KernelId,
    source: String,
}

/// A host-visible, coherent storage buffer, mapped for its whole life.
struct VkAlloc {
    owner: Arc<Owner>,
    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    ptr: *mut u8,
    size: usize,
}

// SAFETY: the handles are plain identifiers and the mapping a plain address; writes through
// it happen only while no submitted work uses the buffer (uploads wait for the queue).
unsafe impl Send for VkAlloc {}
unsafe impl Sync for VkAlloc {}

impl Allocation for VkAlloc {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for VkAlloc {
    fn drop(&mut self) {
        // SAFETY: launches using the buffer have finished (they keep it alive until the sync
        // that waited for them); freeing mapped memory unmaps it.
        unsafe {
            self.owner.device.destroy_buffer(self.buffer, None);
            self.owner.device.free_memory(self.memory, None);
        }
    }
}

/// What one submitted launch holds until it has finished.
struct Submitted {
    fence: vk::Fence,
    command: vk::CommandBuffer,
    descriptor_pool: vk::DescriptorPool,
    query_pool: Option<vk::QueryPool>,
    /// Parameters past the push-constant limit, as a storage buffer.
    _params: Option<VkAlloc>,
}

/// A compiled module: what every pipeline of one GLSL source shares.
struct Module {
    module: vk::ShaderModule,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    abi: sarek_compiler::abi::Abi,
}

struct State {
    owner: Arc<Owner>,
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
    pipelines: HashMap<(KernelId, [u32; 3]), vk::Pipeline>,
    /// Launches submitted since the last sync.
    submitted: Vec<Submitted>,
    /// Where SPIR-V compiled elsewhere from the same GLSL is taken from ([`open_sharing`]).
    shared_spirv: Option<Arc<spirv::SharedSpirv>>,
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
        // `entry` is cloned: the loader library must stay loaded until the instance is
        // destroyed below.
        match Self::with_instance(entry.clone(), instance.clone(), mask_64bit) {
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

        // Robust buffer access (a Vulkan 1.0 feature every device supports): a storage
        // access past the end of its buffer stays inside it instead of reaching other memory.
        let enabled = vk::PhysicalDeviceFeatures::default()
            .shader_float64(float64)
            .shader_int64(int64)
            .robust_buffer_access(features.robust_buffer_access == vk::TRUE);
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
            owner: Arc::new(Owner {
                instance: instance.clone(),
                device: device.clone(),
                _entry: entry,
            }),
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
                portable: false,
            },
            warps: if native_warps {
                Warps::Native
            } else {
                Warps::Emulated
            },
            modules: HashMap::new(),
            pipelines: HashMap::new(),
            submitted: Vec::new(),
            shared_spirv: None,
        })
    }

    /// The module for a generated source (compiling it on first use).
    fn module(
        &mut self,
        source: &str,
        abi: &sarek_compiler::abi::Abi,
    ) -> Result<&Module, RuntimeError> {
        if !self.modules.contains_key(source) {
            let words = match &self.shared_spirv {
                Some(shared) => shared.compile(source),
                None => spirv::compile(source),
            }
            .map_err(|e| {
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

    fn pipeline(&mut self, exe: &VkExe, block: [u32; 3]) -> Result<vk::Pipeline, RuntimeError> {
        let key = (exe.kernel, block);
        let source = exe.source.as_str();
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

    /// Generate, check against the device, compile the module (once per source).
    fn build(
        &mut self,
        kernel: &KernelHandle,
    ) -> Result<(VkExe, sarek_compiler::abi::Abi), RuntimeError> {
        let ir = kernel.ir();
        let needs = capability::check(ir, &self.support())?;
        let generated = glsl::generate_with(ir, &self.options, self.warps)
            .map_err(|d| RuntimeError::refused(Target::Glsl, &ir.name, d))?;
        self.check_limits(ir, needs, &generated.abi)?;
        self.module(&generated.source, &generated.abi)?;
        Ok((
            VkExe {
                kernel: kernel.id(),
                source: generated.source,
            },
            generated.abi,
        ))
    }

    fn alloc(&self, bytes: usize) -> Result<VkAlloc, RuntimeError> {
        let d = &self.device;
        let size = bytes.max(16) as u64;
        let oom = || RuntimeError::OutOfMemory {
            device: format!("vulkan ({})", self.info.name),
            bytes,
        };
        if size > u64::from(self.limits.max_storage_buffer_range) {
            return Err(oom());
        }
        // SAFETY: objects made from this device; each is destroyed on the error paths.
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
            let req = d.get_buffer_memory_requirements(buffer);
            let Some(ty) = self.memory_type(req.memory_type_bits) else {
                d.destroy_buffer(buffer, None);
                return Err(RuntimeError::Launch(
                    "vulkan: no host-visible memory for storage buffers".into(),
                ));
            };
            let memory = match d.allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(ty),
                None,
            ) {
                Ok(m) => m,
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    return Err(match e {
                        vk::Result::ERROR_OUT_OF_DEVICE_MEMORY
                        | vk::Result::ERROR_OUT_OF_HOST_MEMORY => oom(),
                        e => vk_err("memory allocation")(e),
                    });
                }
            };
            let mapped = d
                .bind_buffer_memory(buffer, memory, 0)
                .and_then(|()| d.map_memory(memory, 0, size, vk::MemoryMapFlags::empty()));
            match mapped {
                Ok(ptr) => Ok(VkAlloc {
                    owner: self.owner.clone(),
                    buffer,
                    memory,
                    ptr: ptr.cast(),
                    size: size as usize,
                }),
                Err(e) => {
                    d.destroy_buffer(buffer, None);
                    d.free_memory(memory, None);
                    Err(vk_err("mapping memory")(e))
                }
            }
        }
    }

    /// Wait for every submitted launch and free what they held; the timed kernel time.
    fn wait_all(&mut self) -> Result<Duration, RuntimeError> {
        let d = &self.device;
        let mut total = Duration::ZERO;
        let mut failure = None;
        for s in std::mem::take(&mut self.submitted) {
            // SAFETY: objects of this device; after the wait nothing uses them.
            unsafe {
                if let Err(e) = d.wait_for_fences(&[s.fence], true, u64::MAX) {
                    failure.get_or_insert(vk_err("waiting for a kernel")(e));
                }
                if let Some(qp) = s.query_pool {
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
                            * f64::from(self.limits.timestamp_period);
                        total += Duration::from_nanos(ns as u64);
                    }
                    d.destroy_query_pool(qp, None);
                }
                d.free_command_buffers(self.command_pool, &[s.command]);
                d.destroy_fence(s.fence, None);
                d.destroy_descriptor_pool(s.descriptor_pool, None);
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(total),
        }
    }

    fn dispatch(&mut self, exe: &VkExe, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        self.check_config(plan.config)?;
        let pipeline = self.pipeline(exe, plan.config.block)?;
        let m = &self.modules[&exe.source];
        let d = &self.device;
        let mut push = plan.uniform.clone();
        let mut bindings: Vec<(u32, vk::Buffer)> = plan
            .bindings
            .iter()
            .map(|(b, mem)| (*b, mem.raw::<VkAlloc>().buffer))
            .collect();
        let params = match m.abi.uniform_binding {
            Some((_, binding)) => {
                // Parameters past the push-constant limit: a storage buffer.
                let a = self.alloc(push.len())?;
                // SAFETY: a fresh mapping at least `push.len()` long.
                unsafe { std::ptr::copy_nonoverlapping(push.as_ptr(), a.ptr, push.len()) };
                bindings.push((binding, a.buffer));
                push.clear();
                Some(a)
            }
            None => None,
        };
        // SAFETY: objects made from this device, recorded into a one-time command buffer;
        // everything the launch uses stays alive until `wait_all` has seen its fence.
        unsafe {
            let sizes = [vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: bindings.len().max(1) as u32,
            }];
            let pool = d
                .create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(1)
                        .pool_sizes(&sizes),
                    None,
                )
                .map_err(vk_err("descriptor pool"))?;
            let set = if bindings.is_empty() {
                None
            } else {
                let layouts = [m.set_layout];
                let set = d
                    .allocate_descriptor_sets(
                        &vk::DescriptorSetAllocateInfo::default()
                            .descriptor_pool(pool)
                            .set_layouts(&layouts),
                    )
                    .map_err(vk_err("descriptor set"))?[0];
                let infos: Vec<_> = bindings
                    .iter()
                    .map(|(_, b)| {
                        [vk::DescriptorBufferInfo::default()
                            .buffer(*b)
                            .offset(0)
                            .range(vk::WHOLE_SIZE)]
                    })
                    .collect();
                let writes: Vec<_> = bindings
                    .iter()
                    .zip(&infos)
                    .map(|((binding, _), info)| {
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
            let queries = if self.timestamps && plan.timed {
                Some(
                    d.create_query_pool(
                        &vk::QueryPoolCreateInfo::default()
                            .query_type(vk::QueryType::TIMESTAMP)
                            .query_count(2),
                        None,
                    )
                    .map_err(vk_err("query pool"))?,
                )
            } else {
                None
            };
            d.begin_command_buffer(
                cb,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
            .map_err(vk_err("begin command buffer"))?;
            // Earlier launches' writes are visible to this one (launches are in order).
            let order = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::HOST_WRITE)
                .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE);
            d.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::HOST,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &[order],
                &[],
                &[],
            );
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
            let [gx, gy, gz] = plan.config.grid;
            d.cmd_dispatch(cb, gx, gy, gz);
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
            let cbs = [cb];
            let submit = vk::SubmitInfo::default().command_buffers(&cbs);
            d.queue_submit(self.queue, &[submit], fence)
                .map_err(vk_err("queue submit"))?;
            self.submitted.push(Submitted {
                fence,
                command: cb,
                descriptor_pool: pool,
                query_pool: queries,
                _params: params,
            });
        }
        Ok(())
    }

    /// What this device supports: GLSL under its options, without the 64-bit types it lacks
    /// (SPIR-V declaring `Int64`/`Float64` on such a device is invalid usage, which drivers
    /// need not report), with its storage-buffer limit.
    fn support(&self) -> Support {
        let l = &self.limits;
        let storage_limit = l
            .max_per_stage_descriptor_storage_buffers
            .min(l.max_descriptor_set_storage_buffers);
        let support = sarek_compiler::back::support::glsl(&self.options, self.warps)
            .on_device(&self.info.name)
            .without_if(!self.int64, Feature::Int64, "it lacks shaderInt64")
            .without_if(
                !self.info.float64,
                Feature::Float64,
                "it lacks shaderFloat64",
            );
        capability::storage_buffers(support, storage_limit)
    }

    fn check_config(&self, config: LaunchConfig) -> Result<(), RuntimeError> {
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
        Ok(())
    }

    /// Refuse, located, a kernel whose parameters or buffers exceed this device's limits
    /// once its ABI is known (a parameter block past 128 bytes takes a storage buffer).
    fn check_limits(
        &self,
        kernel: &Kernel,
        mut needs: Needs,
        abi: &sarek_compiler::abi::Abi,
    ) -> Result<(), RuntimeError> {
        let l = &self.limits;
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
        needs.extra_buffers = u64::from(abi.uniform_binding.is_some());
        capability::check_needs(&needs, &self.support())
    }
}

impl Drop for State {
    fn drop(&mut self) {
        // SAFETY: every object was created from this device/instance and no work is pending
        // (each launch waits for its fence).
        let _ = self.wait_all();
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
        }
    }
}

/// Whether the device named `name` runs on the host CPU (Mesa's llvmpipe, lavapipe).
fn on_host(name: &str) -> bool {
    name.contains("llvmpipe")
}

/// The Vulkan device and instance, destroyed when the device state and every buffer made
/// from it are gone (a buffer may outlive the [`VulkanDevice`] that made it). The loader
/// library goes with them: its functions destroy them, so it is unloaded last (a buffer
/// dropped after its device used to call into the unloaded library).
struct Owner {
    instance: ash::Instance,
    device: ash::Device,
    /// Dropped after `drop` has destroyed the device and the instance.
    _entry: ash::Entry,
}

impl Drop for Owner {
    fn drop(&mut self) {
        // SAFETY: nothing made from them is left (every holder keeps this alive).
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

impl Device for VulkanDevice {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn core(&self) -> &DeviceCore {
        &self.core
    }

    fn layout_rules(&self) -> LayoutRules {
        LayoutRules::Std430
    }

    fn always_checked(&self) -> bool {
        on_host(&self.info.name)
    }

    fn max_shared_bytes(&self) -> Option<u64> {
        Some(u64::from(
            self.state().limits.max_compute_shared_memory_size,
        ))
    }

    fn build(&self, kernel: &KernelHandle) -> Result<Built, RuntimeError> {
        // llvmpipe runs on the host's memory: every kernel in checked mode (shared and local
        // arrays are outside robust buffer access's reach).
        let kernel = &crate::limits::check_on_host(&self.core, on_host(&self.info.name), kernel);
        // Issue 17: llvmpipe's loop budget is a located fault, not a shortened loop.
        let kernel = &crate::limits::guard_loops(&self.core, &self.info().name, kernel);
        let (exe, abi) = self.state().build(kernel)?;
        Ok(Built {
            kernel: kernel.clone(),
            abi,
            exe: Box::new(exe),
        })
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn Allocation>, RuntimeError> {
        Ok(Box::new(self.state().alloc(bytes)?))
    }

    fn upload(&self, mem: &Mem, bytes: &[u8]) -> Result<(), RuntimeError> {
        let a = mem.raw::<VkAlloc>();
        // Host writes to memory a submitted launch may still use: wait for them first.
        let mut state = self.state();
        let time = state.wait_all()?;
        *self.kernel_time() += time;
        drop(state);
        assert!(bytes.len() <= a.size, "upload larger than its buffer");
        // SAFETY: the mapping is `a.size` bytes long and no launch is using it.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), a.ptr, bytes.len()) };
        Ok(())
    }

    fn download(&self, mem: &Mem, out: &mut [u8]) -> Result<(), RuntimeError> {
        let a = mem.raw::<VkAlloc>();
        let mut state = self.state();
        let time = state.wait_all()?;
        *self.kernel_time() += time;
        drop(state);
        assert!(out.len() <= a.size, "download larger than its buffer");
        // SAFETY: the mapping is `a.size` bytes long; every launch has finished.
        unsafe { std::ptr::copy_nonoverlapping(a.ptr, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Buffers live in host-visible memory: once the queue is idle, a copy is a memcpy
    /// between the two mappings.
    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), RuntimeError> {
        let (from, to) = (src.raw::<VkAlloc>(), dst.raw::<VkAlloc>());
        let mut state = self.state();
        let time = state.wait_all()?;
        *self.kernel_time() += time;
        drop(state);
        assert!(
            bytes <= from.size && bytes <= to.size,
            "copy larger than its buffers"
        );
        // SAFETY: both mappings hold `bytes` bytes, are distinct allocations, and no launch
        // is using them.
        unsafe { std::ptr::copy_nonoverlapping(from.ptr, to.ptr, bytes) };
        Ok(())
    }

    fn dispatch(&self, built: &Built, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        self.state().dispatch(built.exe::<VkExe>(), plan)
    }

    fn sync(&self) -> Result<Duration, RuntimeError> {
        let time = self.state().wait_all()?;
        Ok(std::mem::take(&mut *self.kernel_time()) + time)
    }
}

impl VulkanDevice {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Kernel time of launches waited for by uploads and downloads, for the next `sync`.
    fn kernel_time(&self) -> std::sync::MutexGuard<'_, Duration> {
        self.waited.lock().unwrap_or_else(|e| e.into_inner())
    }
}
