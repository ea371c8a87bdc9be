//! The binder: a kernel's ABI descriptor and a launch's arguments become a [`LaunchPlan`],
//! the same for every backend.
//!
//! The ABI says where each argument goes ([`ArgSlot`]): a positional kernel argument
//! (C-family, PTX, the host backends), bytes of the uniform / push-constant block (WGSL,
//! GLSL) or a storage binding. The plan has exactly those three places filled, so a backend's
//! dispatch only hands them to its API; no backend walks ABI x arguments itself. Arguments
//! are checked against the kernel's signature first (count, kinds, scalar types, the
//! buffer's device and element layout), so every backend reports a mistake the same way.

use crate::buffer::DeviceVector;
use crate::device::{LaunchConfig, RuntimeError};
use crate::kernel::Built;
use crate::memory::{DeviceCore, LaunchId, Mem};
use crate::pack;
use crate::signature::ParamKind;
use sarek_compiler::abi::{AbiParamKind, ArgSlot};
use sarek_compiler::types::Literal;

/// One launch argument, in the kernel's parameter order.
#[derive(Clone, Copy, Debug)]
pub enum BindArg<'a> {
    /// A scalar parameter.
    Scalar(Literal),
    /// A record, tuple or variant by value: its leaves in order.
    Aggregate(&'a [Literal]),
    /// A vector parameter: a buffer on the launching device.
    Vector(&'a DeviceVector),
}

/// A positional kernel argument.
#[derive(Clone, Debug)]
pub enum Positional {
    /// The packed bytes of a value (a scalar, a record, a length).
    Bytes(Vec<u8>),
    /// A buffer.
    Mem(Mem),
}

/// Everything a backend's dispatch needs, in the places the ABI named.
#[derive(Clone, Debug)]
pub struct LaunchPlan {
    pub config: LaunchConfig,
    /// Positional kernel arguments by number ([`ArgSlot::Argument`]).
    pub positional: Vec<Positional>,
    /// The uniform / push-constant block ([`ArgSlot::Uniform`]), `Abi::uniform_size` long.
    pub uniform: Vec<u8>,
    /// Storage bindings ([`ArgSlot::Binding`]): (binding, buffer).
    pub bindings: Vec<(u32, Mem)>,
    /// Whether the device should time this launch with its own timer.
    pub timed: bool,
    /// The launch this plan is for: a host backend files the fault it finds while
    /// dispatching under it ([`crate::memory::DeviceCore::defer_fault`]).
    pub launch: LaunchId,
}

impl LaunchPlan {
    /// Every buffer the plan uses (what the launch keeps alive while in flight).
    pub fn buffers(&self) -> impl Iterator<Item = &Mem> {
        self.positional
            .iter()
            .filter_map(|p| match p {
                Positional::Mem(m) => Some(m),
                Positional::Bytes(_) => None,
            })
            .chain(self.bindings.iter().map(|(_, m)| m))
    }
}

/// Check `args` against the kernel and the device, then place them per the ABI. `trap` is
/// the zeroed status word when the kernel has traps.
pub fn bind(
    core: &DeviceCore,
    built: &Built,
    config: LaunchConfig,
    args: &[BindArg<'_>],
    trap: Option<&Mem>,
) -> Result<LaunchPlan, RuntimeError> {
    check(core, built, args)?;
    let abi = &built.abi;
    let mut plan = LaunchPlan {
        config,
        positional: Vec::new(),
        uniform: vec![0; abi.uniform_size.unwrap_or(0) as usize],
        bindings: Vec::new(),
        timed: false,
        launch: LaunchId::default(),
    };
    for (param, arg) in abi.params.iter().zip(args) {
        match (&param.kind, arg) {
            (AbiParamKind::Value { layout, slot }, BindArg::Scalar(l)) => {
                let bytes = pack::pack_value(std::slice::from_ref(l), layout, &param.name)?;
                place_bytes(&mut plan, slot, bytes)?;
            }
            (AbiParamKind::Value { layout, slot }, BindArg::Aggregate(ls)) => {
                let bytes = pack::pack_value(ls, layout, &param.name)?;
                place_bytes(&mut plan, slot, bytes)?;
            }
            (
                AbiParamKind::Vector {
                    elem,
                    buffer,
                    length,
                },
                BindArg::Vector(v),
            ) => {
                if v.layout() != elem {
                    return Err(RuntimeError::Arguments(format!(
                        "buffer for `{}` of kernel `{}` is laid out as {:?}, the kernel's code \
                         on {} expects {:?}",
                        param.name,
                        built.kernel.name(),
                        v.layout(),
                        core.name(),
                        elem
                    )));
                }
                place_mem(&mut plan, buffer, v.mem().clone())?;
                let len = length_of(v, &param.name)?;
                place_bytes(&mut plan, length, len.to_le_bytes().to_vec())?;
            }
            _ => unreachable!("`check` matched kinds"),
        }
    }
    if let (Some(slot), Some(mem)) = (&abi.trap_status, trap) {
        place_mem(&mut plan, slot, mem.clone())?;
    }
    Ok(plan)
}

fn length_of(v: &DeviceVector, name: &str) -> Result<i32, RuntimeError> {
    i32::try_from(v.len()).map_err(|_| {
        RuntimeError::Arguments(format!(
            "vector `{name}` has {} elements; `length` is an int32, so at most {}",
            v.len(),
            i32::MAX
        ))
    })
}

fn positional_slot(plan: &mut LaunchPlan, n: u32) -> &mut Positional {
    let n = n as usize;
    if plan.positional.len() <= n {
        plan.positional.resize(n + 1, Positional::Bytes(Vec::new()));
    }
    &mut plan.positional[n]
}

fn place_bytes(plan: &mut LaunchPlan, slot: &ArgSlot, bytes: Vec<u8>) -> Result<(), RuntimeError> {
    match slot {
        ArgSlot::Argument(n) => *positional_slot(plan, *n) = Positional::Bytes(bytes),
        ArgSlot::Uniform { offset } => {
            let at = *offset as usize;
            let size = plan.uniform.len();
            plan.uniform
                .get_mut(at..at + bytes.len())
                .ok_or_else(|| {
                    RuntimeError::Launch(format!(
                        "ABI: a value of {} bytes at offset {at} overflows the {size}-byte uniform block",
                        bytes.len()
                    ))
                })?
                .copy_from_slice(&bytes);
        }
        ArgSlot::None => {}
        ArgSlot::Binding { .. } => {
            return Err(RuntimeError::Launch(
                "ABI: a value placed in a storage binding".into(),
            ));
        }
    }
    Ok(())
}

fn place_mem(plan: &mut LaunchPlan, slot: &ArgSlot, mem: Mem) -> Result<(), RuntimeError> {
    match slot {
        ArgSlot::Argument(n) => *positional_slot(plan, *n) = Positional::Mem(mem),
        ArgSlot::Binding { binding, .. } => plan.bindings.push((*binding, mem)),
        other => {
            return Err(RuntimeError::Launch(format!(
                "ABI: a buffer placed in {other:?}"
            )));
        }
    }
    Ok(())
}

/// Count, kinds, scalar types, the buffer's device and element type.
fn check(core: &DeviceCore, built: &Built, args: &[BindArg<'_>]) -> Result<(), RuntimeError> {
    let kernel = &built.kernel;
    let params = kernel.params();
    let err = |m: String| Err(RuntimeError::Arguments(m));
    if params.len() != args.len() {
        return err(format!(
            "kernel `{}` takes {} arguments, {} given",
            kernel.name(),
            params.len(),
            args.len()
        ));
    }
    for (p, a) in params.iter().zip(args) {
        match (&p.kind, a) {
            (ParamKind::Scalar(s), BindArg::Scalar(l)) if l.scalar() == *s => {}
            (ParamKind::Aggregate(leaves), BindArg::Aggregate(vals))
                if vals.len() == leaves.len()
                    && vals.iter().zip(leaves).all(|(v, l)| v.scalar() == l.scalar) => {}
            (ParamKind::Vector { leaves, .. }, BindArg::Vector(v)) => {
                if v.mem().device() != core.id() {
                    return Err(RuntimeError::WrongDevice {
                        param: p.name.clone(),
                        buffer_device: v.mem().device_name().to_string(),
                        launch_device: core.name().to_string(),
                    });
                }
                let fits = v.scalars().len() == leaves.len()
                    && v.scalars().iter().zip(leaves).all(|(s, l)| *s == l.scalar);
                if !fits {
                    let given: Vec<&str> = v.scalars().iter().map(|s| s.name()).collect();
                    return err(format!(
                        "parameter `{}` has type {}, but the buffer given holds ({})",
                        p.name,
                        p.type_name,
                        given.join(", ")
                    ));
                }
            }
            _ => {
                let what = match a {
                    BindArg::Scalar(l) => l.scalar().name().to_string(),
                    BindArg::Aggregate(_) => "an aggregate".to_string(),
                    BindArg::Vector(_) => "a vector".to_string(),
                };
                return err(format!(
                    "parameter `{}` has type {}, but {what} was given",
                    p.name, p.type_name
                ));
            }
        }
    }
    Ok(())
}
