//! What crosses the host/kernel boundary, as plain data: a launch's grid and block
//! ([`LaunchConfig`]), a kernel's parameters as a launch passes them ([`signature`]), and
//! argument values on the host ([`ArgValue`]), a vector kept structure-of-arrays with one
//! [`Column`] per [`abi::Leaf`] of its element type (the same leaves `.npy` structured
//! arrays use as fields; each runtime backend packs columns into its device layout with
//! [`abi::ElemLayout`]).
//!
//! These live in the compiler, next to the ABI they follow, so that the runtime and the
//! GPU-free crates (the command-line conventions in `sarek-harness`, the browser module)
//! share one definition.

use crate::abi::{self, Leaf};
use crate::ir::{Kernel, Ty};
use crate::types::{Literal, Scalar};

/// Grid and block sizes in threads/blocks per axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

impl LaunchConfig {
    /// The default 1-D launch for `n` items: block 256 (or n if smaller), grid ceil(n / block).
    pub fn linear(n: u32) -> LaunchConfig {
        let b = n.clamp(1, 256);
        LaunchConfig {
            grid: [n.div_ceil(b).max(1), 1, 1],
            block: [b, 1, 1],
        }
    }
    /// Threads of one block, saturating at `u32::MAX` (a block of 65536 x 65536 must not wrap
    /// to 0 and pass a limit check).
    pub fn threads_per_block(&self) -> u32 {
        self.block.iter().fold(1u32, |n, &b| n.saturating_mul(b))
    }
}

/// One column of scalars.
#[derive(Clone, Debug, PartialEq)]
pub enum Column {
    Bool(Vec<bool>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Column {
    pub fn zeros(scalar: Scalar, len: usize) -> Column {
        match scalar {
            Scalar::Bool => Column::Bool(vec![false; len]),
            Scalar::I32 => Column::I32(vec![0; len]),
            Scalar::I64 => Column::I64(vec![0; len]),
            Scalar::F32 => Column::F32(vec![0.0; len]),
            Scalar::F64 => Column::F64(vec![0.0; len]),
        }
    }
    pub fn scalar(&self) -> Scalar {
        match self {
            Column::Bool(_) => Scalar::Bool,
            Column::I32(_) => Scalar::I32,
            Column::I64(_) => Scalar::I64,
            Column::F32(_) => Scalar::F32,
            Column::F64(_) => Scalar::F64,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            Column::Bool(v) => v.len(),
            Column::I32(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::F32(v) => v.len(),
            Column::F64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn get(&self, i: usize) -> Literal {
        match self {
            Column::Bool(v) => Literal::Bool(v[i]),
            Column::I32(v) => Literal::I32(v[i]),
            Column::I64(v) => Literal::I64(v[i]),
            Column::F32(v) => Literal::F32(v[i]),
            Column::F64(v) => Literal::F64(v[i]),
        }
    }
    /// Store `value` (which must have this column's scalar type) at `i`.
    pub fn set(&mut self, i: usize, value: Literal) {
        match (self, value) {
            (Column::Bool(v), Literal::Bool(x)) => v[i] = x,
            (Column::I32(v), Literal::I32(x)) => v[i] = x,
            (Column::I64(v), Literal::I64(x)) => v[i] = x,
            (Column::F32(v), Literal::F32(x)) => v[i] = x,
            (Column::F64(v), Literal::F64(x)) => v[i] = x,
            (c, x) => panic!("column of {} cannot hold {:?}", c.scalar(), x),
        }
    }
}

/// A vector argument on the host: `columns` parallel to the element type's leaves.
#[derive(Clone, Debug, PartialEq)]
pub struct HostVector {
    pub len: usize,
    pub columns: Vec<Column>,
}

impl HostVector {
    pub fn zeros(leaves: &[Leaf], len: usize) -> HostVector {
        HostVector {
            len,
            columns: leaves
                .iter()
                .map(|l| Column::zeros(l.scalar, len))
                .collect(),
        }
    }
}

/// One kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    /// A scalar parameter.
    Scalar(Literal),
    /// A record/variant/tuple parameter passed by value: its leaves in order.
    Aggregate(Vec<Literal>),
    /// A vector parameter; updated in place by a launch.
    Vector(HostVector),
}

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

/// One kernel parameter as a launch sees it.
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
