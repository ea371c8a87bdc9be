//! The one packer: host columns <-> device bytes by an ABI [`ElemLayout`] (one element's
//! leaves at their offsets, elements `stride` bytes apart, padding zero), and by-value
//! arguments to their bytes. Every backend uses it.
//!
//! A vector of one scalar leaf stored natively and densely (float32, int32, int64, float64
//! vectors on every target) is one bulk copy of the column's bytes; anything else (bools,
//! records, tuples, variants) is a loop per column with the element type fixed outside the
//! loop, so each is a strided store the compiler can vectorise.

use crate::device::RuntimeError;
use crate::value::{Column, HostVector};
use sarek_compiler::abi::{ElemLayout, Stored};
use sarek_compiler::types::{Literal, Scalar};

/// The column's bytes when the layout stores it densely as itself (no packing needed).
pub fn dense_bytes<'a>(column: &'a Column, layout: &ElemLayout) -> Option<&'a [u8]> {
    if !is_dense(layout) {
        return None;
    }
    match column {
        Column::I32(v) => Some(bytemuck::cast_slice(v)),
        Column::I64(v) => Some(bytemuck::cast_slice(v)),
        Column::F32(v) => Some(bytemuck::cast_slice(v)),
        Column::F64(v) => Some(bytemuck::cast_slice(v)),
        Column::Bool(_) => None,
    }
}

/// One leaf at offset 0, stored as itself, elements back to back.
pub fn is_dense(layout: &ElemLayout) -> bool {
    matches!(layout.leaves.as_slice(),
        [(0, Stored::Native(s))] if *s != Scalar::Bool && s.size() == layout.stride)
}

/// Check a host vector's columns against a layout.
pub fn check_columns(v: &HostVector, layout: &ElemLayout, name: &str) -> Result<(), RuntimeError> {
    if v.columns.len() != layout.leaves.len() {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}` has {} columns, its element type has {} leaves",
            v.columns.len(),
            layout.leaves.len()
        )));
    }
    if let Some(c) = v.columns.iter().find(|c| c.len() != v.len) {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}`: a column has {} values, the vector {}",
            c.len(),
            v.len
        )));
    }
    for (c, (_, stored)) in v.columns.iter().zip(&layout.leaves) {
        let ok = match stored {
            Stored::Native(s) => *s == c.scalar(),
            Stored::BoolAsU32 | Stored::BoolAsU8 => c.scalar() == Scalar::Bool,
        };
        if !ok {
            return Err(RuntimeError::Arguments(format!(
                "vector `{name}`: a column of {} where {stored:?} is stored",
                c.scalar()
            )));
        }
    }
    Ok(())
}

/// The device image of a vector: `stride * len` bytes.
pub fn pack_vector(
    v: &HostVector,
    layout: &ElemLayout,
    name: &str,
) -> Result<Vec<u8>, RuntimeError> {
    check_columns(v, layout, name)?;
    if let Some(bytes) = v.columns.first().and_then(|c| dense_bytes(c, layout)) {
        return Ok(bytes.to_vec());
    }
    let stride = layout.stride as usize;
    let mut bytes = vec![0u8; stride * v.len];
    for (col, &(offset, stored)) in v.columns.iter().zip(&layout.leaves) {
        let out = bytes.get_mut(offset as usize..).unwrap_or_default();
        match (col, stored) {
            (Column::Bool(x), Stored::BoolAsU32) => {
                strided(out, stride, x, |b| u32::from(*b).to_le_bytes())
            }
            (Column::Bool(x), _) => strided(out, stride, x, |b| [u8::from(*b)]),
            (Column::I32(x), _) => strided(out, stride, x, |e| e.to_le_bytes()),
            (Column::I64(x), _) => strided(out, stride, x, |e| e.to_le_bytes()),
            (Column::F32(x), _) => strided(out, stride, x, |e| e.to_le_bytes()),
            (Column::F64(x), _) => strided(out, stride, x, |e| e.to_le_bytes()),
        }
    }
    Ok(bytes)
}

/// Store `f(x[i])` at `i * stride` of `out`.
fn strided<T, const N: usize>(out: &mut [u8], stride: usize, x: &[T], f: impl Fn(&T) -> [u8; N]) {
    for (chunk, e) in out.chunks_mut(stride).zip(x) {
        chunk[..N].copy_from_slice(&f(e));
    }
}

/// Load `f(bytes at i * stride)` into `x[i]`.
fn unstrided<T, const N: usize>(
    bytes: &[u8],
    stride: usize,
    x: &mut [T],
    f: impl Fn([u8; N]) -> T,
) {
    for (chunk, e) in bytes.chunks(stride).zip(x.iter_mut()) {
        *e = f(chunk[..N].try_into().expect("N bytes"));
    }
}

/// Read a vector back from its device image (`stride * v.len` bytes or more).
pub fn unpack_vector(bytes: &[u8], v: &mut HostVector, layout: &ElemLayout) {
    let stride = layout.stride as usize;
    let len = v.len;
    if let [col] = v.columns.as_mut_slice()
        && is_dense(layout)
    {
        let n = stride * len;
        match col {
            Column::I32(x) => bytemuck::cast_slice_mut(x).copy_from_slice(&bytes[..n]),
            Column::I64(x) => bytemuck::cast_slice_mut(x).copy_from_slice(&bytes[..n]),
            Column::F32(x) => bytemuck::cast_slice_mut(x).copy_from_slice(&bytes[..n]),
            Column::F64(x) => bytemuck::cast_slice_mut(x).copy_from_slice(&bytes[..n]),
            Column::Bool(_) => unreachable!("bool columns are never dense"),
        }
        return;
    }
    for (col, &(offset, stored)) in v.columns.iter_mut().zip(&layout.leaves) {
        let src = bytes.get(offset as usize..).unwrap_or_default();
        match (col, stored) {
            (Column::Bool(x), Stored::BoolAsU32) => {
                unstrided(src, stride, &mut x[..len], |b| u32::from_le_bytes(b) != 0)
            }
            (Column::Bool(x), _) => unstrided(src, stride, &mut x[..len], |b: [u8; 1]| b[0] != 0),
            (Column::I32(x), _) => unstrided(src, stride, &mut x[..len], i32::from_le_bytes),
            (Column::I64(x), _) => unstrided(src, stride, &mut x[..len], i64::from_le_bytes),
            (Column::F32(x), _) => unstrided(src, stride, &mut x[..len], f32::from_le_bytes),
            (Column::F64(x), _) => unstrided(src, stride, &mut x[..len], f64::from_le_bytes),
        }
    }
}

/// The bytes of a by-value argument (scalar, record, variant), `layout.stride` long.
pub fn pack_value(
    leaves: &[Literal],
    layout: &ElemLayout,
    name: &str,
) -> Result<Vec<u8>, RuntimeError> {
    if leaves.len() != layout.leaves.len() {
        return Err(RuntimeError::Arguments(format!(
            "parameter `{name}` has {} components, got {}",
            layout.leaves.len(),
            leaves.len()
        )));
    }
    let mut bytes = vec![0u8; layout.stride as usize];
    for (value, &(offset, stored)) in leaves.iter().zip(&layout.leaves) {
        let at = offset as usize;
        write_leaf(
            &mut bytes[at..at + stored.size() as usize],
            *value,
            stored,
            name,
        )?;
    }
    Ok(bytes)
}

/// The leaves of a by-value argument from its bytes (host backends).
pub fn unpack_value(bytes: &[u8], layout: &ElemLayout, scalars: &[Scalar]) -> Vec<Literal> {
    layout
        .leaves
        .iter()
        .zip(scalars)
        .map(|(&(offset, stored), &s)| {
            let at = offset as usize;
            read_leaf(&bytes[at..at + stored.size() as usize], s, stored)
        })
        .collect()
}

fn write_leaf(
    out: &mut [u8],
    value: Literal,
    stored: Stored,
    name: &str,
) -> Result<(), RuntimeError> {
    match (stored, value) {
        (Stored::BoolAsU32, Literal::Bool(b)) => out.copy_from_slice(&u32::from(b).to_le_bytes()),
        (Stored::BoolAsU8 | Stored::Native(Scalar::Bool), Literal::Bool(b)) => out[0] = u8::from(b),
        (Stored::Native(Scalar::I32), Literal::I32(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (Stored::Native(Scalar::I64), Literal::I64(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (Stored::Native(Scalar::F32), Literal::F32(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (Stored::Native(Scalar::F64), Literal::F64(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (s, v) => {
            return Err(RuntimeError::Arguments(format!(
                "parameter `{name}`: a {} value where {s:?} is stored",
                v.scalar()
            )));
        }
    }
    Ok(())
}

fn read_leaf(b: &[u8], scalar: Scalar, stored: Stored) -> Literal {
    match (scalar, stored) {
        (Scalar::Bool, Stored::BoolAsU32) => {
            Literal::Bool(u32::from_le_bytes(b.try_into().expect("4 bytes")) != 0)
        }
        (Scalar::Bool, _) => Literal::Bool(b[0] != 0),
        (Scalar::I32, _) => Literal::I32(i32::from_le_bytes(b.try_into().expect("4 bytes"))),
        (Scalar::I64, _) => Literal::I64(i64::from_le_bytes(b.try_into().expect("8 bytes"))),
        (Scalar::F32, _) => Literal::F32(f32::from_le_bytes(b.try_into().expect("4 bytes"))),
        (Scalar::F64, _) => Literal::F64(f64::from_le_bytes(b.try_into().expect("8 bytes"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sarek_compiler::abi::Leaf;

    #[test]
    fn round_trip_with_padding() {
        // struct { int tag; double a; int flag(bool) } -> tag@0, a@8, flag@16, stride 24
        let layout = ElemLayout {
            stride: 24,
            leaves: vec![
                (0, Stored::Native(Scalar::I32)),
                (8, Stored::Native(Scalar::F64)),
                (16, Stored::BoolAsU32),
            ],
        };
        let v = HostVector {
            len: 2,
            columns: vec![
                Column::I32(vec![1, -2]),
                Column::F64(vec![0.5, -1.25]),
                Column::Bool(vec![true, false]),
            ],
        };
        let bytes = pack_vector(&v, &layout, "v").unwrap();
        assert_eq!(bytes.len(), 48);
        assert_eq!(&bytes[0..4], &1i32.to_le_bytes());
        assert_eq!(&bytes[4..8], &[0; 4]);
        assert_eq!(&bytes[32..40], &(-1.25f64).to_le_bytes());
        assert_eq!(&bytes[16..20], &1u32.to_le_bytes());
        let leaf = |name: &str, scalar| Leaf {
            name: name.into(),
            scalar,
        };
        let mut back = HostVector::zeros(
            &[
                leaf("tag", Scalar::I32),
                leaf("a", Scalar::F64),
                leaf("flag", Scalar::Bool),
            ],
            2,
        );
        unpack_vector(&bytes, &mut back, &layout);
        assert_eq!(back, v);
    }

    #[test]
    fn dense_scalars_are_their_bytes() {
        let layout = ElemLayout {
            stride: 4,
            leaves: vec![(0, Stored::Native(Scalar::F32))],
        };
        let v = HostVector {
            len: 3,
            columns: vec![Column::F32(vec![1.0, -2.5, 3.25])],
        };
        let bytes = pack_vector(&v, &layout, "v").unwrap();
        let expected: Vec<u8> = [1.0f32, -2.5, 3.25]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        assert_eq!(bytes, expected);
        let mut back = HostVector {
            len: 3,
            columns: vec![Column::F32(vec![0.0; 3])],
        };
        unpack_vector(&bytes, &mut back, &layout);
        assert_eq!(back, v);
    }

    #[test]
    fn bools_as_bytes_and_words() {
        for (stored, stride) in [(Stored::BoolAsU8, 1), (Stored::BoolAsU32, 4)] {
            let layout = ElemLayout {
                stride,
                leaves: vec![(0, stored)],
            };
            let v = HostVector {
                len: 3,
                columns: vec![Column::Bool(vec![true, false, true])],
            };
            let bytes = pack_vector(&v, &layout, "b").unwrap();
            assert_eq!(bytes.len(), 3 * stride as usize);
            assert_eq!(bytes[stride as usize * 2], 1);
            let mut back = HostVector {
                len: 3,
                columns: vec![Column::Bool(vec![false; 3])],
            };
            unpack_vector(&bytes, &mut back, &layout);
            assert_eq!(back, v);
        }
    }
}
