//! The host devices, `interp` and `cpu`: buffers are host memory ([`HostAllocation`], bytes
//! laid out by C rules with bools as one byte, as a compiled host kernel would take them), so
//! upload and download are memcpys and nothing crosses a bus.
//!
//! Their "build" resolves nothing: the ABI is every parameter as a positional argument
//! (vector `i`: its buffer at `2i`, its length at `2i + 1`), and dispatch runs the
//! interpreter core (blocks in order on `interp`, on the rayon pool on `cpu`) on the
//! buffers' contents, writing the vectors back when it succeeds. A fault is kept for the
//! next synchronisation, as a GPU's would be, and leaves the buffers untouched.
//!
//! `cpu` runs a kernel it compiles natively on the buffers' bytes in place when every vector
//! is one dense non-bool scalar (`HostDevice::dispatch_in_place`): no unpacking into columns
//! and packing back. A fault there leaves the vectors the kernel writes partly written, as on
//! a GPU (values passed to [`Device::launch`] still come back untouched: it works on copies).

use crate::bind::{LaunchPlan, Positional};
use crate::cpu::InPlaceArg;
use crate::device::{Backend, Device, DeviceInfo, LaunchConfig, RuntimeError};
use crate::kernel::{Built, KernelHandle};
use crate::memory::{Allocation, DeviceCore, HostAllocation, HostBytes, Mem, lock};
use crate::pack;
use crate::signature::ParamKind;
use crate::value::{ArgValue, HostVector};
use sarek_compiler::abi::{self, Abi, AbiParam, AbiParamKind, ArgSlot, LayoutRules, Stored};
use sarek_compiler::ir::Ty;
use sarek_compiler::types::Scalar;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Element layout of host buffers.
pub const HOST_LAYOUT: LayoutRules = LayoutRules::C {
    bool_repr: Stored::BoolAsU8,
};

/// Which executor a host device runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    /// Blocks in order, one OS thread (`interp`).
    Sequential,
    /// Blocks in parallel on the rayon pool (`cpu`).
    Parallel,
}

/// A host device.
pub struct HostDevice {
    executor: Executor,
    info: DeviceInfo,
    core: DeviceCore,
    kernel_time: Mutex<Duration>,
    /// Native code of the kernels the `cpu` executor ran.
    jit: crate::cpu::JitCache,
}

impl HostDevice {
    pub fn new(executor: Executor) -> HostDevice {
        let info = match executor {
            Executor::Sequential => DeviceInfo {
                backend: Backend::Interp,
                name: "reference interpreter (SIMT, warp size 32)".into(),
                max_threads_per_block: crate::interp::MAX_THREADS_PER_BLOCK,
                subgroups: true,
                float64: true,
            },
            Executor::Parallel => DeviceInfo {
                backend: Backend::Cpu,
                name: format!(
                    "host CPU ({} threads, native code via Cranelift)",
                    rayon::current_num_threads()
                ),
                max_threads_per_block: crate::interp::MAX_THREADS_PER_BLOCK,
                subgroups: true,
                float64: true,
            },
        };
        HostDevice {
            executor,
            core: DeviceCore::new(format!("{} ({})", info.backend, info.name)),
            info,
            kernel_time: Mutex::new(Duration::ZERO),
            jit: crate::cpu::JitCache::default(),
        }
    }

    fn run(
        &self,
        kernel: &KernelHandle,
        config: LaunchConfig,
        args: &mut [ArgValue],
    ) -> Result<Duration, RuntimeError> {
        let stats = match self.executor {
            Executor::Sequential => crate::interp::run(kernel.ir(), config, args)?,
            Executor::Parallel => self.jit.run(kernel.ir(), config, args)?,
        };
        Ok(stats.kernel_time)
    }
}

impl HostDevice {
    /// A `cpu` launch as native code on the buffers' own bytes (no unpacking into columns and
    /// packing back), when every vector is one dense non-bool scalar in a buffer of its own
    /// (`None`: take the general path; nothing was changed). The buffers stay locked for the
    /// launch, in address order as [`Device::copy`] takes them.
    fn dispatch_in_place(
        &self,
        built: &Built,
        plan: &LaunchPlan,
    ) -> Option<Result<crate::device::LaunchStats, RuntimeError>> {
        let kernel = &built.kernel;
        let mut vectors: Vec<(&HostAllocation, Scalar, usize)> = Vec::new();
        for (i, param) in built.abi.params.iter().enumerate() {
            if let AbiParamKind::Vector { elem, .. } = &param.kind {
                let (Some(Positional::Mem(mem)), [(0, Stored::Native(scalar))]) =
                    (plan.positional.get(2 * i), elem.leaves.as_slice())
                else {
                    return None;
                };
                if !pack::is_dense(elem) {
                    return None;
                }
                let len_bytes: [u8; 4] = bytes_at(plan, 2 * i + 1).try_into().ok()?;
                let len = usize::try_from(i32::from_le_bytes(len_bytes)).ok()?;
                vectors.push((mem.raw::<HostAllocation>(), *scalar, len));
            }
        }
        let mut order: Vec<usize> = (0..vectors.len()).collect();
        order.sort_by_key(|&j| std::ptr::from_ref(vectors[j].0) as usize);
        // One buffer passed twice would be two mutable views of one storage.
        if order
            .windows(2)
            .any(|w| std::ptr::eq(vectors[w[0]].0, vectors[w[1]].0))
        {
            return None;
        }
        let mut guards: Vec<Option<HostBytes<'_>>> = vectors.iter().map(|_| None).collect();
        for j in order {
            guards[j] = Some(vectors[j].0.bytes());
        }
        let mut storage = guards.iter_mut().flatten().zip(&vectors);
        let mut args = Vec::with_capacity(built.abi.params.len());
        for (i, (param, p)) in built.abi.params.iter().zip(kernel.params()).enumerate() {
            args.push(match (&param.kind, &p.kind) {
                (AbiParamKind::Vector { .. }, _) => {
                    let (bytes, (_, scalar, len)) = storage.next()?;
                    InPlaceArg::Vector {
                        scalar: *scalar,
                        len: *len,
                        bytes: bytes.as_mut_slice(),
                    }
                }
                (AbiParamKind::Value { layout, .. }, ParamKind::Scalar(s)) => {
                    InPlaceArg::Scalar(pack::unpack_value(bytes_at(plan, 2 * i), layout, &[*s])[0])
                }
                (AbiParamKind::Value { layout, .. }, ParamKind::Aggregate(leaves)) => {
                    let scalars: Vec<_> = leaves.iter().map(|l| l.scalar).collect();
                    InPlaceArg::Aggregate(pack::unpack_value(
                        bytes_at(plan, 2 * i),
                        layout,
                        &scalars,
                    ))
                }
                _ => return None,
            });
        }
        self.jit.run_in_place(kernel.ir(), plan.config, &mut args)
    }
}

/// What a host device's build keeps for its launches' checks.
struct HostBuild {
    /// Bytes of per-thread arrays, for [`crate::limits::check_host_launch`].
    local_bytes_per_thread: u64,
}

/// The host ABI of `kernel`: every parameter positional, laid out by [`HOST_LAYOUT`].
pub fn host_abi(kernel: &KernelHandle) -> Abi {
    let ir = kernel.ir();
    let params = ir
        .params
        .iter()
        .enumerate()
        .map(|(i, &id)| {
            let v = ir.var(id);
            let n = 2 * i as u32;
            let kind = match &v.ty {
                Ty::Vector(e) => AbiParamKind::Vector {
                    elem: abi::elem_layout(ir, e, HOST_LAYOUT),
                    buffer: ArgSlot::Argument(n),
                    length: ArgSlot::Argument(n + 1),
                },
                ty => AbiParamKind::Value {
                    layout: abi::elem_layout(ir, ty, HOST_LAYOUT),
                    slot: ArgSlot::Argument(n),
                },
            };
            AbiParam {
                name: v.name.clone(),
                ty: v.ty.clone(),
                kind,
            }
        })
        .collect();
    Abi {
        entry_point: ir.name.clone(),
        params,
        uniform_size: None,
        uniform_binding: None,
        block_size_in_source: false,
        trap_status: None,
    }
}

fn bytes_at(plan: &LaunchPlan, n: usize) -> &[u8] {
    match plan.positional.get(n) {
        Some(Positional::Bytes(b)) => b,
        _ => &[],
    }
}

impl Device for HostDevice {
    fn info(&self) -> DeviceInfo {
        self.info.clone()
    }

    fn core(&self) -> &DeviceCore {
        &self.core
    }

    fn layout_rules(&self) -> LayoutRules {
        HOST_LAYOUT
    }

    fn always_checked(&self) -> bool {
        true
    }

    fn build(&self, kernel: &KernelHandle) -> Result<Built, RuntimeError> {
        // The host's resource limits, refused located like a GPU target's.
        let support = crate::limits::host_support(self.info.backend, &self.info.name);
        crate::capability::check(kernel.ir(), &support)?;
        let local = crate::limits::local_bytes(kernel.ir())?;
        Ok(Built {
            kernel: kernel.clone(),
            abi: host_abi(kernel),
            exe: Box::new(HostBuild {
                local_bytes_per_thread: local,
            }),
        })
    }

    fn alloc(&self, bytes: usize) -> Result<Box<dyn Allocation>, RuntimeError> {
        HostAllocation::new(bytes)
            .map(|a| Box::new(a) as Box<dyn Allocation>)
            .map_err(|_| RuntimeError::OutOfMemory {
                device: self.core.name().to_string(),
                bytes,
            })
    }

    fn upload(&self, mem: &Mem, bytes: &[u8]) -> Result<(), RuntimeError> {
        let mut dst = mem.raw::<HostAllocation>().bytes();
        dst.as_mut_slice()[..bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    fn download(&self, mem: &Mem, out: &mut [u8]) -> Result<(), RuntimeError> {
        let src = mem.raw::<HostAllocation>().bytes();
        out.copy_from_slice(&src.as_slice()[..out.len()]);
        Ok(())
    }

    fn copy(&self, src: &Mem, dst: &Mem, bytes: usize) -> Result<(), RuntimeError> {
        let (a, b) = (src.raw::<HostAllocation>(), dst.raw::<HostAllocation>());
        // Two locks, always taken in address order, so opposite copies cannot deadlock.
        let (from, mut to);
        if std::ptr::from_ref(a) < std::ptr::from_ref(b) {
            from = a.bytes();
            to = b.bytes();
        } else {
            to = b.bytes();
            from = a.bytes();
        }
        to.as_mut_slice()[..bytes].copy_from_slice(&from.as_slice()[..bytes]);
        Ok(())
    }

    fn dispatch(&self, built: &Built, plan: &LaunchPlan) -> Result<(), RuntimeError> {
        let kernel = &built.kernel;
        let local = built.exe::<HostBuild>().local_bytes_per_thread;
        crate::limits::check_host_launch(kernel.ir(), local, &plan.config, self.info.backend)?;
        if self.executor == Executor::Parallel
            && let Some(result) = self.dispatch_in_place(built, plan)
        {
            match result {
                Ok(stats) if plan.timed => *lock(&self.kernel_time) += stats.kernel_time,
                Ok(_) => {}
                Err(e) => self.core.defer_fault(plan.launch, e),
            }
            return Ok(());
        }
        let mut args = Vec::with_capacity(kernel.params().len());
        let mut vectors = Vec::new();
        let uses = kernel.uses();
        for (i, (param, p)) in built.abi.params.iter().zip(kernel.params()).enumerate() {
            match (&param.kind, &p.kind) {
                (AbiParamKind::Vector { elem, .. }, ParamKind::Vector { leaves, .. }) => {
                    let Some(Positional::Mem(mem)) = plan.positional.get(2 * i) else {
                        return Err(RuntimeError::Launch(format!(
                            "host plan: no buffer for `{}`",
                            param.name
                        )));
                    };
                    let len_bytes: [u8; 4] = bytes_at(plan, 2 * i + 1).try_into().unwrap_or([0; 4]);
                    let len = i32::from_le_bytes(len_bytes).max(0) as usize;
                    let mut v = HostVector::zeros(leaves, len);
                    pack::unpack_vector(
                        mem.raw::<HostAllocation>().bytes().as_slice(),
                        &mut v,
                        elem,
                    );
                    args.push(ArgValue::Vector(v));
                    // Only a vector the kernel may write goes back into its buffer.
                    if uses.get(i).is_none_or(|u| u.writes) {
                        vectors.push((args.len() - 1, mem.clone(), elem));
                    }
                }
                (AbiParamKind::Value { layout, .. }, kind) => {
                    let scalars: Vec<_> = match kind {
                        ParamKind::Scalar(s) => vec![*s],
                        ParamKind::Aggregate(leaves) => leaves.iter().map(|l| l.scalar).collect(),
                        _ => Vec::new(),
                    };
                    let leaves = pack::unpack_value(bytes_at(plan, 2 * i), layout, &scalars);
                    args.push(match kind {
                        ParamKind::Scalar(_) => ArgValue::Scalar(leaves[0]),
                        _ => ArgValue::Aggregate(leaves),
                    });
                }
                _ => {
                    return Err(RuntimeError::Launch(format!(
                        "host plan: parameter `{}` does not match its ABI",
                        param.name
                    )));
                }
            }
        }
        match self.run(kernel, plan.config, &mut args) {
            Ok(time) => {
                if plan.timed {
                    *lock(&self.kernel_time) += time;
                }
                for (k, mem, elem) in vectors {
                    if let ArgValue::Vector(v) = &args[k] {
                        let dense = v.columns.first().and_then(|c| pack::dense_bytes(c, elem));
                        match dense {
                            Some(bytes) if v.columns.len() == 1 => self.upload(&mem, bytes)?,
                            _ => {
                                let name = &built.abi.params[k].name;
                                self.upload(&mem, &pack::pack_vector(v, elem, name)?)?
                            }
                        }
                    }
                }
            }
            Err(e) => self.core.defer_fault(plan.launch, e),
        }
        Ok(())
    }

    fn sync(&self) -> Result<Duration, RuntimeError> {
        Ok(std::mem::take(&mut *lock(&self.kernel_time)))
    }
}

/// Open the interpreter device.
pub fn open_interp() -> Result<Arc<dyn Device>, RuntimeError> {
    Ok(crate::memory::register(HostDevice::new(
        Executor::Sequential,
    )))
}

/// Open the cpu device.
pub fn open_cpu() -> Result<Arc<dyn Device>, RuntimeError> {
    Ok(crate::memory::register(HostDevice::new(Executor::Parallel)))
}
