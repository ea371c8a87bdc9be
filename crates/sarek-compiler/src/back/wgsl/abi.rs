//! Bindings of a WGSL kernel, and the ABI descriptor derived from the same values.
//!
//! Group 0 holds everything. Binding 0 is the `Params` uniform when the kernel has any scalar,
//! by-value aggregate or vector parameter; storage buffers follow in parameter order, then the
//! trap status word `sarek_trap` when the kernel has traps. `Params`
//! holds only 4-byte scalars, so WGSL's uniform rules (16-byte alignment of nested structs and
//! array strides) never apply: field `k` sits at byte `4k`, the block is padded to 16 bytes.
//!
//! - a scalar parameter is one field named after it (bool as `u32`, read as `params.b != 0u`);
//! - a record/variant parameter is flattened to one field per leaf (`sarek_arg<p>_<k>`), rebuilt
//!   into a local at the top of the entry point (uniforms cannot hold bools or be rebound);
//! - a vector's length is the field `sarek_len_<escaped name>`. The seed built it as
//!   `sarek_<escaped>_length`, which a scalar `sarek_if_length` (escaped to
//!   `sarek_sarek_if_length`) could collide with for a vector `if`. Now `escape(u)` equals
//!   `sarek_len_x` only for `u = len_x`, which is never escaped, and `len` is a minted stem no
//!   reserved word shares, so no source name can reach a length field, and distinct vectors get
//!   distinct fields because `escape` is injective.
//!
//! Storage elements use std430 rules ([`crate::abi::LayoutRules::Std430`]), which are WGSL's
//! storage layout for these types: bools stored as `u32`, structs aligned to their largest
//! member. The writer declares exactly these fields from [`Bindings`], so the two cannot drift.

use super::names::Names;
use crate::abi::{self, Abi, AbiParam, AbiParamKind, ArgSlot, ElemLayout, LayoutRules, Stored};
use crate::ir::{Kernel, Ty, VarId};
use crate::types::Scalar;

pub(super) const GROUP: u32 = 0;

/// One 4-byte field of the `Params` uniform.
pub(super) struct UniformField {
    pub name: String,
    /// `i32`, `f32` or `u32` (a bool).
    pub wgsl_ty: &'static str,
    pub offset: u32,
}

/// How a parameter reaches the shader.
pub(super) enum ParamBinding {
    /// A scalar: field index in `Params`.
    Scalar { field: usize },
    /// A record/variant: its leaves' field indices in `Params`, in leaf order.
    Aggregate { fields: Vec<usize> },
    /// A vector: storage binding and the field index of its length.
    Vector { binding: u32, length_field: usize },
    /// Nothing to pass (unit).
    None,
}

pub(super) struct Bindings {
    pub fields: Vec<UniformField>,
    /// Parallel to `Kernel::params`.
    pub params: Vec<(VarId, ParamBinding)>,
    pub uniform_binding: Option<u32>,
    /// Binding of the trap status word `sarek_trap` (after every other), when the kernel traps.
    pub trap_binding: Option<u32>,
}

fn uniform_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "u32",
        Scalar::F32 => "f32",
        // 64-bit scalars were refused by the analysis (`support::wgsl`); i32 is the only remaining kind.
        _ => "i32",
    }
}

impl Bindings {
    pub fn new(kernel: &Kernel, names: &Names<'_>) -> Bindings {
        let mut fields = Vec::new();
        let mut push = |name: String, s: Scalar| {
            let offset = 4 * fields.len() as u32;
            fields.push(UniformField {
                name,
                wgsl_ty: uniform_ty(s),
                offset,
            });
            fields.len() - 1
        };
        let mut params = Vec::new();
        let mut vectors = Vec::new();
        for (i, &p) in kernel.params.iter().enumerate() {
            let info = kernel.var(p);
            let b = match &info.ty {
                Ty::Scalar(s) => ParamBinding::Scalar {
                    field: push(names.escape(&info.name), *s),
                },
                Ty::Record(_) | Ty::Variant(_) => {
                    let leaves = abi::leaves(kernel, &info.ty);
                    let fields = leaves
                        .iter()
                        .enumerate()
                        .map(|(k, l)| push(format!("sarek_arg{i}_{k}"), l.scalar))
                        .collect();
                    ParamBinding::Aggregate { fields }
                }
                Ty::Vector(_) => {
                    vectors.push(params.len());
                    ParamBinding::Vector {
                        binding: 0,
                        length_field: 0,
                    }
                }
                Ty::Unit | Ty::Array { .. } => ParamBinding::None,
            };
            params.push((p, b));
        }
        // Lengths after the scalars, so scalar offsets do not depend on the vectors.
        for &at in &vectors {
            let p = params[at].0;
            let field = push(format!("sarek_len_{}", names.buffers[&p]), Scalar::I32);
            params[at].1 = ParamBinding::Vector {
                binding: 0,
                length_field: field,
            };
        }
        let uniform_binding = (!fields.is_empty()).then_some(0);
        let mut next = u32::from(uniform_binding.is_some());
        for &at in &vectors {
            if let ParamBinding::Vector { binding, .. } = &mut params[at].1 {
                *binding = next;
                next += 1;
            }
        }
        let trap_binding = (!kernel.traps().is_empty()).then_some(next);
        Bindings {
            fields,
            params,
            uniform_binding,
            trap_binding,
        }
    }

    pub fn uniform_size(&self) -> u32 {
        abi::round_up(4 * self.fields.len() as u32, 16)
    }

    /// The ABI descriptor: the same field offsets and bindings the writer declares.
    pub fn abi(&self, kernel: &Kernel, names: &Names<'_>) -> Abi {
        let params = self
            .params
            .iter()
            .map(|(p, b)| {
                let info = kernel.var(*p);
                let kind = match b {
                    ParamBinding::Scalar { field } => AbiParamKind::Value {
                        layout: abi::elem_layout(kernel, &info.ty, LayoutRules::Std430),
                        slot: ArgSlot::Uniform {
                            offset: self.fields[*field].offset,
                        },
                    },
                    ParamBinding::Aggregate { fields } => {
                        // Leaves sit in consecutive 4-byte fields: describe them relative to the first.
                        let base = fields.first().map_or(0, |f| self.fields[*f].offset);
                        let leaves = abi::leaves(kernel, &info.ty)
                            .iter()
                            .zip(fields)
                            .map(|(l, f)| {
                                let st = if l.scalar == Scalar::Bool {
                                    Stored::BoolAsU32
                                } else {
                                    Stored::Native(l.scalar)
                                };
                                (self.fields[*f].offset - base, st)
                            })
                            .collect::<Vec<_>>();
                        AbiParamKind::Value {
                            layout: ElemLayout {
                                stride: 4 * leaves.len() as u32,
                                leaves,
                            },
                            slot: ArgSlot::Uniform { offset: base },
                        }
                    }
                    ParamBinding::Vector {
                        binding,
                        length_field,
                    } => AbiParamKind::Vector {
                        elem: abi::elem_layout(
                            kernel,
                            info.ty.elem().unwrap_or(&Ty::Unit),
                            LayoutRules::Std430,
                        ),
                        buffer: ArgSlot::Binding {
                            group: GROUP,
                            binding: *binding,
                        },
                        length: ArgSlot::Uniform {
                            offset: self.fields[*length_field].offset,
                        },
                    },
                    ParamBinding::None => AbiParamKind::Value {
                        layout: ElemLayout {
                            stride: 0,
                            leaves: Vec::new(),
                        },
                        slot: ArgSlot::None,
                    },
                };
                AbiParam {
                    name: info.name.clone(),
                    ty: info.ty.clone(),
                    kind,
                }
            })
            .collect();
        Abi {
            entry_point: names.entry.clone(),
            params,
            uniform_size: self.uniform_binding.map(|_| self.uniform_size()),
            uniform_binding: self.uniform_binding.map(|b| (GROUP, b)),
            block_size_in_source: false,
            trap_status: self.trap_binding.map(|binding| ArgSlot::Binding {
                group: GROUP,
                binding,
            }),
        }
    }
}
