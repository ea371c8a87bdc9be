//! When two runs agree: integers and bools exactly, floats within an absolute bound or a
//! distance in ulps ([`Tolerance`]; docs/cli.md explains the figures), variant payloads
//! only where the element holds that constructor.

use sarek_compiler::abi;
use sarek_compiler::host::{ArgValue, Column, HostVector, ParamKind, signature};
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::Literal;
use std::fmt;

/// When two floats agree: `|a - b| <= abs` or at most `ulps` representable values apart.
/// NaN agrees with NaN; infinities only with themselves. See docs/cli.md for the reasoning.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub f32_abs: f64,
    pub f32_ulps: u64,
    pub f64_abs: f64,
    pub f64_ulps: u64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            f32_abs: 1e-5,
            f32_ulps: 256,
            f64_abs: 1e-12,
            f64_ulps: 4096,
        }
    }
}

/// Distance in units in the last place (the number of representable values between).
pub fn ulps_f32(a: f32, b: f32) -> u64 {
    let key = |x: f32| {
        let i = x.to_bits() as i32;
        if i < 0 {
            i64::from(i32::MIN) - i64::from(i)
        } else {
            i64::from(i)
        }
    };
    key(a).abs_diff(key(b))
}

pub fn ulps_f64(a: f64, b: f64) -> u64 {
    let key = |x: f64| {
        let i = x.to_bits() as i64;
        if i < 0 {
            i128::from(i64::MIN) - i128::from(i)
        } else {
            i128::from(i)
        }
    };
    u64::try_from(key(a).abs_diff(key(b))).unwrap_or(u64::MAX)
}

impl Tolerance {
    /// Exact equality: for integers and bools always; for floats what this returns.
    pub fn agree(&self, a: Literal, b: Literal) -> bool {
        match (a, b) {
            (Literal::F32(x), Literal::F32(y)) => {
                x == y
                    || (x.is_nan() && y.is_nan())
                    || (x.is_finite()
                        && y.is_finite()
                        && (f64::from((x - y).abs()) <= self.f32_abs
                            || ulps_f32(x, y) <= self.f32_ulps))
            }
            (Literal::F64(x), Literal::F64(y)) => {
                x == y
                    || (x.is_nan() && y.is_nan())
                    || (x.is_finite()
                        && y.is_finite()
                        && ((x - y).abs() <= self.f64_abs || ulps_f64(x, y) <= self.f64_ulps))
            }
            (a, b) => a == b,
        }
    }
}

/// The first disagreement found in a vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub index: usize,
    /// The leaf (field) name; empty for scalar elements.
    pub leaf: String,
    pub expected: Literal,
    pub found: Literal,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |l: Literal| match l {
            Literal::Bool(b) => b.to_string(),
            Literal::I32(v) => v.to_string(),
            Literal::I64(v) => v.to_string(),
            Literal::F32(v) => format!("{v:e}"),
            Literal::F64(v) => format!("{v:e}"),
        };
        write!(f, "[{}]", self.index)?;
        if !self.leaf.is_empty() {
            write!(f, ".{}", self.leaf)?;
        }
        write!(
            f,
            ": expected {}, found {}",
            show(self.expected),
            show(self.found)
        )?;
        match (self.expected, self.found) {
            (Literal::F32(a), Literal::F32(b)) if a.is_finite() && b.is_finite() => {
                write!(f, " ({} ulps)", ulps_f32(a, b))
            }
            (Literal::F64(a), Literal::F64(b)) if a.is_finite() && b.is_finite() => {
                write!(f, " ({} ulps)", ulps_f64(a, b))
            }
            _ => Ok(()),
        }
    }
}

/// The comparison of one vector parameter.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorComparison {
    pub param: String,
    /// Values compared (elements x live leaves).
    pub compared: usize,
    pub mismatches: usize,
    pub first: Option<Mismatch>,
}

impl VectorComparison {
    pub fn ok(&self) -> bool {
        self.mismatches == 0
    }
}

/// Compare `found` against `expected` (both vectors of `elem`). Payload fields of variant
/// constructors other than the expected element's tag are not compared: they carry no value.
pub fn compare_vectors(
    kernel: &Kernel,
    param: &str,
    elem: &Ty,
    expected: &HostVector,
    found: &HostVector,
    tol: &Tolerance,
) -> VectorComparison {
    let leaves = abi::leaves(kernel, elem);
    let mut cmp = VectorComparison {
        param: param.to_string(),
        compared: 0,
        mismatches: 0,
        first: None,
    };
    if expected.len != found.len || expected.columns.len() != found.columns.len() {
        cmp.mismatches = 1;
        cmp.first = Some(Mismatch {
            index: 0,
            leaf: format!("<length {} vs {}>", expected.len, found.len),
            expected: Literal::I64(expected.len as i64),
            found: Literal::I64(found.len as i64),
        });
        return cmp;
    }
    let mut live = vec![false; leaves.len()];
    for i in 0..expected.len {
        live.iter_mut().for_each(|l| *l = false);
        let mut cursor = 0;
        mark_live(
            kernel,
            elem,
            &expected.columns,
            i,
            &mut cursor,
            true,
            &mut live,
        );
        for (k, leaf) in leaves.iter().enumerate().filter(|(k, _)| live[*k]) {
            let (a, b) = (expected.columns[k].get(i), found.columns[k].get(i));
            cmp.compared += 1;
            if !tol.agree(a, b) {
                cmp.mismatches += 1;
                if cmp.first.is_none() {
                    cmp.first = Some(Mismatch {
                        index: i,
                        leaf: leaf.name.clone(),
                        expected: a,
                        found: b,
                    });
                }
            }
        }
    }
    cmp
}

fn mark_live(
    kernel: &Kernel,
    ty: &Ty,
    cols: &[Column],
    i: usize,
    cursor: &mut usize,
    on: bool,
    live: &mut [bool],
) {
    match ty {
        Ty::Scalar(_) => {
            live[*cursor] = on;
            *cursor += 1;
        }
        Ty::Record(id) => {
            for f in &kernel.record(*id).fields {
                mark_live(kernel, &f.ty, cols, i, cursor, on, live);
            }
        }
        Ty::Variant(id) => {
            let tag = match cols[*cursor].get(i) {
                Literal::I32(t) => t,
                _ => -1,
            };
            live[*cursor] = on;
            *cursor += 1;
            for (c, ctor) in kernel.variant(*id).ctors.iter().enumerate() {
                for f in &ctor.fields {
                    mark_live(kernel, f, cols, i, cursor, on && c as i32 == tag, live);
                }
            }
        }
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {}
    }
}

/// Compare every vector argument of two runs of `kernel`.
pub fn compare_args(
    kernel: &Kernel,
    expected: &[ArgValue],
    found: &[ArgValue],
    tol: &Tolerance,
) -> Vec<VectorComparison> {
    signature(kernel)
        .iter()
        .zip(expected.iter().zip(found))
        .filter_map(|(p, pair)| match (&p.kind, pair) {
            (ParamKind::Vector { elem, .. }, (ArgValue::Vector(a), ArgValue::Vector(b))) => {
                Some(compare_vectors(kernel, &p.name, elem, a, b, tol))
            }
            _ => None,
        })
        .collect()
}
