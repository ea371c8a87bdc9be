//! Kernel signatures as the runtime checks them: each parameter's name, type and how a
//! launch passes it (a scalar, a by-value aggregate's leaves, a vector's element leaves).

use sarek_compiler::abi::{self, Leaf};
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::Scalar;

/// How a kernel parameter is passed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ParamKind {
    Scalar(Scalar),
    /// A record/variant/tuple by value: its leaves.
    Aggregate(Vec<Leaf>),
    /// A vector: its element type and the element's leaves.
    Vector {
        elem: Ty,
        leaves: Vec<Leaf>,
    },
}

/// One kernel parameter as the harness sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: Ty,
    /// Readable type (`float32`, `point vector`).
    pub type_name: String,
    pub kind: ParamKind,
}

/// A readable spelling of an IR type.
pub fn type_name(kernel: &Kernel, ty: &Ty) -> String {
    match ty {
        Ty::Unit => "unit".into(),
        Ty::Scalar(s) => s.name().into(),
        Ty::Record(id) => {
            let r = kernel.record(*id);
            if r.is_tuple {
                let parts: Vec<_> = r.fields.iter().map(|f| type_name(kernel, &f.ty)).collect();
                format!("({})", parts.join(" * "))
            } else {
                r.name.clone()
            }
        }
        Ty::Variant(id) => kernel.variant(*id).name.clone(),
        Ty::Vector(e) => format!("{} vector", type_name(kernel, e)),
        Ty::Array { elem, .. } => format!("{} array", type_name(kernel, elem)),
    }
}

/// The parameters of `kernel` in order.
pub fn signature(kernel: &Kernel) -> Vec<Param> {
    kernel
        .params
        .iter()
        .map(|&id| {
            let v = kernel.var(id);
            let kind = match &v.ty {
                Ty::Scalar(s) => ParamKind::Scalar(*s),
                Ty::Vector(e) => ParamKind::Vector {
                    elem: (**e).clone(),
                    leaves: abi::leaves(kernel, e),
                },
                other => ParamKind::Aggregate(abi::leaves(kernel, other)),
            };
            Param {
                name: v.name.clone(),
                ty: v.ty.clone(),
                type_name: type_name(kernel, &v.ty),
                kind,
            }
        })
        .collect()
}
