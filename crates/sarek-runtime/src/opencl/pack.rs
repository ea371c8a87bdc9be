//! What the C-family backends (OpenCL, CUDA) share: host columns <-> device bytes by the
//! ABI's [`ElemLayout`] (one element's leaves at their offsets, elements `stride` bytes
//! apart, padding zero), and generator refusals as [`RuntimeError::Refused`].

use crate::device::RuntimeError;
use crate::value::{ArgValue, Column, HostVector};
use sarek_compiler::abi::{ElemLayout, Stored};
use sarek_compiler::back::cfamily::Dialect;
use sarek_compiler::ir::Kernel;
use sarek_compiler::types::Literal;

/// The device image of a vector (at least one element's worth of bytes, since neither
/// OpenCL nor CUDA allocates an empty buffer).
pub fn pack_vector(
    v: &HostVector,
    layout: &ElemLayout,
    name: &str,
) -> Result<Vec<u8>, RuntimeError> {
    if v.columns.len() != layout.leaves.len() {
        return Err(RuntimeError::Arguments(format!(
            "vector `{name}` has {} columns, its element type has {} leaves",
            v.columns.len(),
            layout.leaves.len()
        )));
    }
    let stride = layout.stride as usize;
    let mut bytes = vec![0u8; stride * v.len.max(1)];
    for (col, &(offset, stored)) in v.columns.iter().zip(&layout.leaves) {
        if col.len() != v.len {
            return Err(RuntimeError::Arguments(format!(
                "vector `{name}`: a column has {} values, the vector {}",
                col.len(),
                v.len
            )));
        }
        for i in 0..v.len {
            let at = i * stride + offset as usize;
            write_leaf(
                &mut bytes[at..at + stored.size() as usize],
                col.get(i),
                stored,
                name,
            )?;
        }
    }
    Ok(bytes)
}

/// Read a vector back from its device image.
pub fn unpack_vector(bytes: &[u8], v: &mut HostVector, layout: &ElemLayout) {
    let stride = layout.stride as usize;
    let len = v.len;
    for (col, &(offset, stored)) in v.columns.iter_mut().zip(&layout.leaves) {
        for i in 0..len {
            let at = i * stride + offset as usize;
            let value = read_leaf(&bytes[at..at + stored.size() as usize], col, stored);
            col.set(i, value);
        }
    }
}

/// The bytes of a by-value argument (scalar, record, variant), `layout.stride` long.
pub fn pack_value(
    arg: &ArgValue,
    layout: &ElemLayout,
    name: &str,
) -> Result<Vec<u8>, RuntimeError> {
    let leaves: Vec<Literal> = match arg {
        ArgValue::Scalar(l) => vec![*l],
        ArgValue::Aggregate(ls) => ls.clone(),
        ArgValue::Vector(_) => {
            return Err(RuntimeError::Arguments(format!(
                "parameter `{name}` takes a value, got a vector"
            )));
        }
    };
    if leaves.len() != layout.leaves.len() {
        return Err(RuntimeError::Arguments(format!(
            "parameter `{name}` has {} components, got {}",
            layout.leaves.len(),
            leaves.len()
        )));
    }
    let mut bytes = vec![0u8; layout.stride as usize];
    for (value, &(offset, stored)) in leaves.into_iter().zip(&layout.leaves) {
        let at = offset as usize;
        write_leaf(
            &mut bytes[at..at + stored.size() as usize],
            value,
            stored,
            name,
        )?;
    }
    Ok(bytes)
}

/// A generator refusal as a runtime error: its located diagnostics, each reason once.
pub fn refused(
    kernel: &Kernel,
    dialect: Dialect,
    diags: &[sarek_compiler::Diagnostic],
) -> RuntimeError {
    RuntimeError::refused(dialect.target(), &kernel.name, diags.iter().cloned())
}

fn write_leaf(
    out: &mut [u8],
    value: Literal,
    stored: Stored,
    name: &str,
) -> Result<(), RuntimeError> {
    match (stored, value) {
        (Stored::BoolAsU32, Literal::Bool(b)) => out.copy_from_slice(&u32::from(b).to_le_bytes()),
        (Stored::BoolAsU8, Literal::Bool(b)) => out[0] = u8::from(b),
        (Stored::Native(_), Literal::Bool(b)) => out[0] = u8::from(b),
        (Stored::Native(_), Literal::I32(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (Stored::Native(_), Literal::I64(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (Stored::Native(_), Literal::F32(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (Stored::Native(_), Literal::F64(x)) => out.copy_from_slice(&x.to_le_bytes()),
        (s, v) => {
            return Err(RuntimeError::Arguments(format!(
                "parameter `{name}`: a {} value where {s:?} is stored",
                v.scalar()
            )));
        }
    }
    Ok(())
}

fn read_leaf(b: &[u8], col: &Column, stored: Stored) -> Literal {
    match (stored, col) {
        (Stored::BoolAsU32, _) => Literal::Bool(u32::from_le_bytes(b.try_into().unwrap()) != 0),
        (_, Column::Bool(_)) => Literal::Bool(b[0] != 0),
        (_, Column::I32(_)) => Literal::I32(i32::from_le_bytes(b.try_into().unwrap())),
        (_, Column::I64(_)) => Literal::I64(i64::from_le_bytes(b.try_into().unwrap())),
        (_, Column::F32(_)) => Literal::F32(f32::from_le_bytes(b.try_into().unwrap())),
        (_, Column::F64(_)) => Literal::F64(f64::from_le_bytes(b.try_into().unwrap())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sarek_compiler::types::Scalar;

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
        let mut back = HostVector::zeros(
            &[
                sarek_compiler::abi::Leaf {
                    name: "tag".into(),
                    scalar: Scalar::I32,
                },
                sarek_compiler::abi::Leaf {
                    name: "a".into(),
                    scalar: Scalar::F64,
                },
                sarek_compiler::abi::Leaf {
                    name: "flag".into(),
                    scalar: Scalar::Bool,
                },
            ],
            2,
        );
        unpack_vector(&bytes, &mut back, &layout);
        assert_eq!(back, v);
    }
}
