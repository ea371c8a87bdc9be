//! Host-side values: scalars, by-value aggregates and vectors stored as one column per leaf.
//!
//! A vector of records/variants/tuples is kept structure-of-arrays: one [`Column`] per
//! [`sarek_compiler::abi::Leaf`] of its element type (the same leaves `.npy` structured arrays
//! use as fields). Each backend packs columns into its device layout with
//! [`sarek_compiler::abi::ElemLayout`].

use sarek_compiler::types::{Literal, Scalar};

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
    pub fn zeros(leaves: &[sarek_compiler::abi::Leaf], len: usize) -> HostVector {
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
