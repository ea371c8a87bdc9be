//! NumPy `.npy` files: the exchange format of `sarek run --input/--out`.
//!
//! The format is small (magic, version, a Python-literal header dict, raw data), so it is
//! read and written here by hand rather than through a general crate: what we need is exactly
//! the mapping of ARCHITECTURE.md, and precise error messages when a file does not fit.
//!
//! A vector parameter's element type flattens to [`Leaf`]s ([`sarek_compiler::abi::leaves`]).
//! A scalar element (one leaf with an empty name) is a plain dtype (`<i4 <i8 <f4 <f8 |b1`);
//! anything else is a structured dtype with one field per leaf, by leaf name, in order
//! (record fields by name, tuple fields `_0`, `_1`, ..., variants `tag` + `<Ctor>_<k>`).
//! Supported: format versions 1, 2 and 3, little-endian, C order, 1-D. Structured files
//! written with `align=True` (unnamed `|V` padding fields) are read; padding is skipped.
//! A nested structured field (how NumPy writes a record inside a record) is read as the
//! flattened leaves `<outer>_<inner>` the element type expects; files are written flat.

use crate::value::{Column, HostVector};
use sarek_compiler::abi::Leaf;
use sarek_compiler::types::Scalar;
use std::fmt;
use std::path::Path;

const MAGIC: &[u8] = b"\x93NUMPY";

/// Why a `.npy` file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    /// Not a well-formed `.npy` file (or a feature we do not support: big-endian, Fortran
    /// order, more than one dimension, object arrays).
    #[error("not a supported .npy file: {0}")]
    Format(String),
    /// A well-formed file whose dtype does not fit the expected element type.
    #[error("dtype {found} does not fit the expected {expected}")]
    Dtype { found: String, expected: String },
    /// A well-formed file of the right dtype but the wrong length.
    #[error("length {found} does not fit the expected length {expected}")]
    Length { found: usize, expected: usize },
}

/// The element type of a `.npy` array, as far as Sarek maps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dtype {
    /// A plain scalar array.
    Scalar(Scalar),
    /// A structured array: fields in order (padding fields are not listed).
    Structured(Vec<(String, Scalar)>),
}

impl Dtype {
    /// The dtype a vector with these element leaves is stored as.
    pub fn of_leaves(leaves: &[Leaf]) -> Dtype {
        match leaves {
            [l] if l.name.is_empty() => Dtype::Scalar(l.scalar),
            _ => Dtype::Structured(leaves.iter().map(|l| (l.name.clone(), l.scalar)).collect()),
        }
    }

    fn fields(&self) -> Vec<(String, Scalar)> {
        match self {
            Dtype::Scalar(s) => vec![(String::new(), *s)],
            Dtype::Structured(f) => f.clone(),
        }
    }
}

/// NumPy's spelling of a scalar dtype.
pub fn descr(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "|b1",
        Scalar::I32 => "<i4",
        Scalar::I64 => "<i8",
        Scalar::F32 => "<f4",
        Scalar::F64 => "<f8",
    }
}

fn scalar_of_descr(d: &str) -> Option<Scalar> {
    // `<` little-endian, `|` not applicable (1 byte), `=` native: we only run little-endian.
    let body = d.strip_prefix(['<', '|', '=']).unwrap_or(d);
    match body {
        "b1" => Some(Scalar::Bool),
        "i4" => Some(Scalar::I32),
        "i8" => Some(Scalar::I64),
        "f4" => Some(Scalar::F32),
        "f8" => Some(Scalar::F64),
        _ => None,
    }
}

impl fmt::Display for Dtype {
    /// The Python spelling, as `np.dtype(...)` takes it: `'<f4'` or `[('x', '<f4'), ...]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dtype::Scalar(s) => write!(f, "'{}'", descr(*s)),
            Dtype::Structured(fields) => {
                f.write_str("[")?;
                for (i, (name, s)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "('{}', '{}')", name, descr(*s))?;
                }
                f.write_str("]")
            }
        }
    }
}

/// A decoded `.npy` array: its dtype and one column per field.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyArray {
    pub dtype: Dtype,
    pub vector: HostVector,
}

/// Encode a vector whose elements have `leaves` as a `.npy` file (version 1 unless the header
/// needs more than 64 KiB).
pub fn to_bytes(leaves: &[Leaf], vector: &HostVector) -> Vec<u8> {
    assert_eq!(
        leaves.len(),
        vector.columns.len(),
        "vector columns do not match its leaves"
    );
    let dtype = Dtype::of_leaves(leaves);
    let descr_text = match &dtype {
        Dtype::Scalar(s) => format!("'{}'", descr(*s)),
        Dtype::Structured(_) => dtype.to_string(),
    };
    let dict = format!(
        "{{'descr': {descr_text}, 'fortran_order': False, 'shape': ({},), }}",
        vector.len
    );
    // Pad with spaces so the data starts at a multiple of 64 bytes, newline last.
    let header_for = |prefix: usize| {
        let unpadded = prefix + dict.len() + 1;
        let total = unpadded.div_ceil(64) * 64;
        let mut h = dict.clone();
        h.extend(std::iter::repeat_n(' ', total - unpadded));
        h.push('\n');
        h
    };
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    let h1 = header_for(MAGIC.len() + 2 + 2);
    if h1.len() <= u16::MAX as usize {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(h1.len() as u16).to_le_bytes());
        out.extend_from_slice(h1.as_bytes());
    } else {
        let h2 = header_for(MAGIC.len() + 2 + 4);
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(h2.len() as u32).to_le_bytes());
        out.extend_from_slice(h2.as_bytes());
    }
    // Packed records, element after element (numpy's default, unaligned layout).
    for i in 0..vector.len {
        for col in &vector.columns {
            match col {
                Column::Bool(v) => out.push(u8::from(v[i])),
                Column::I32(v) => out.extend_from_slice(&v[i].to_le_bytes()),
                Column::I64(v) => out.extend_from_slice(&v[i].to_le_bytes()),
                Column::F32(v) => out.extend_from_slice(&v[i].to_le_bytes()),
                Column::F64(v) => out.extend_from_slice(&v[i].to_le_bytes()),
            }
        }
    }
    out
}

/// Decode any supported `.npy` file.
pub fn from_bytes(bytes: &[u8]) -> Result<NpyArray, NpyError> {
    let bad = |m: &str| NpyError::Format(m.to_string());
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("missing the \\x93NUMPY magic"));
    }
    let (major, header_start, header_len) = match bytes[6] {
        1 => (1, 10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        2 | 3 if bytes.len() >= 12 => (
            bytes[6],
            12,
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
        ),
        v => return Err(NpyError::Format(format!("unknown format version {v}"))),
    };
    let data_start = header_start + header_len;
    let header = bytes
        .get(header_start..data_start)
        .ok_or_else(|| bad("truncated header"))?;
    let header = if major == 3 {
        std::str::from_utf8(header).map_err(|_| bad("header is not UTF-8"))?
    } else {
        std::str::from_utf8(header)
            .ok()
            .filter(|h| h.is_ascii())
            .ok_or_else(|| bad("header is not ASCII"))?
    };
    let dict = match pylit::parse(header.trim_end()) {
        Ok(pylit::Value::Dict(d)) => d,
        Ok(_) => return Err(bad("header is not a dict")),
        Err(e) => return Err(NpyError::Format(format!("header: {e}"))),
    };
    let get = |k: &str| dict.iter().find(|(key, _)| key == k).map(|(_, v)| v);
    match get("fortran_order") {
        Some(pylit::Value::Bool(false)) => {}
        Some(pylit::Value::Bool(true)) => return Err(bad("Fortran order is not supported")),
        // Present but not a bool (`0`, `'False'`): NumPy refuses it too; "lacks" misled.
        Some(v) => {
            return Err(NpyError::Format(format!(
                "'fortran_order' is {v}, not True or False"
            )));
        }
        None => return Err(bad("header lacks 'fortran_order'")),
    }
    let len = match get("shape") {
        Some(pylit::Value::Tuple(dims)) => match dims.as_slice() {
            [pylit::Value::Int(n)] if *n >= 0 => *n as usize,
            [pylit::Value::Int(n)] => {
                return Err(NpyError::Format(format!(
                    "shape ({n},) has a negative length"
                )));
            }
            _ => {
                return Err(NpyError::Format(format!(
                    "shape {} is not 1-D",
                    pylit::Value::Tuple(dims.clone())
                )));
            }
        },
        Some(v) => return Err(NpyError::Format(format!("'shape' is {v}, not a tuple"))),
        None => return Err(bad("header lacks 'shape'")),
    };
    // (field name, scalar or None for padding, byte offset) and the element size.
    let mut fields: Vec<(String, Option<Scalar>, usize)> = Vec::new();
    let mut elem_size = 0usize;
    let structured = match get("descr") {
        Some(pylit::Value::Str(d)) => {
            let s = scalar_of_descr(d)
                .ok_or_else(|| NpyError::Format(format!("unsupported dtype '{d}'")))?;
            fields.push((String::new(), Some(s), 0));
            elem_size = s.size() as usize;
            false
        }
        Some(pylit::Value::List(items)) => {
            struct_fields(items, "", &mut fields, &mut elem_size)?;
            true
        }
        Some(v) => {
            return Err(NpyError::Format(format!(
                "'descr' is {v}, not a dtype string or a list of fields"
            )));
        }
        None => return Err(bad("header lacks 'descr'")),
    };
    let data = &bytes[data_start.min(bytes.len())..];
    let needed = len
        .checked_mul(elem_size)
        .ok_or_else(|| bad("array too large"))?;
    if data.len() < needed {
        return Err(NpyError::Format(format!(
            "data holds {} bytes, the header promises {} elements of {} bytes",
            data.len(),
            len,
            elem_size
        )));
    }
    let real: Vec<(String, Scalar, usize)> = fields
        .into_iter()
        .filter_map(|(n, s, o)| s.map(|s| (n, s, o)))
        .collect();
    let columns = real
        .iter()
        .map(|(_, s, off)| {
            let at = |i: usize, w: usize| &data[i * elem_size + off..i * elem_size + off + w];
            match s {
                Scalar::Bool => Column::Bool((0..len).map(|i| at(i, 1)[0] != 0).collect()),
                Scalar::I32 => Column::I32(
                    (0..len)
                        .map(|i| i32::from_le_bytes(at(i, 4).try_into().unwrap()))
                        .collect(),
                ),
                Scalar::I64 => Column::I64(
                    (0..len)
                        .map(|i| i64::from_le_bytes(at(i, 8).try_into().unwrap()))
                        .collect(),
                ),
                Scalar::F32 => Column::F32(
                    (0..len)
                        .map(|i| f32::from_le_bytes(at(i, 4).try_into().unwrap()))
                        .collect(),
                ),
                Scalar::F64 => Column::F64(
                    (0..len)
                        .map(|i| f64::from_le_bytes(at(i, 8).try_into().unwrap()))
                        .collect(),
                ),
            }
        })
        .collect();
    let dtype = if structured {
        Dtype::Structured(real.iter().map(|(n, s, _)| (n.clone(), *s)).collect())
    } else {
        Dtype::Scalar(real[0].1)
    };
    Ok(NpyArray {
        dtype,
        vector: HostVector { len, columns },
    })
}

/// Append the fields of a structured dtype's item list to `fields` (name, scalar or `None`
/// for padding, byte offset), advancing `elem_size`. A nested structured field (what NumPy
/// writes for a record inside a record) is flattened: its fields are named
/// `<outer>_<inner>`, as [`sarek_compiler::abi::leaves`] names a nested record's leaves.
fn struct_fields(
    items: &[pylit::Value],
    prefix: &str,
    fields: &mut Vec<(String, Option<Scalar>, usize)>,
    elem_size: &mut usize,
) -> Result<(), NpyError> {
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}_{name}")
        }
    };
    for item in items {
        let pylit::Value::Tuple(parts) = item else {
            return Err(NpyError::Format(
                "a structured dtype field is not a tuple".into(),
            ));
        };
        match parts.as_slice() {
            [pylit::Value::Str(name), pylit::Value::Str(d)] => {
                if let Some(s) = scalar_of_descr(d) {
                    fields.push((join(name), Some(s), *elem_size));
                    *elem_size += s.size() as usize;
                } else if let (true, Some(n)) = (
                    name.is_empty(),
                    d.strip_prefix("|V").and_then(|n| n.parse::<usize>().ok()),
                ) {
                    *elem_size += n; // alignment padding
                } else {
                    return Err(NpyError::Format(format!(
                        "field '{}' has unsupported dtype '{d}'",
                        join(name)
                    )));
                }
            }
            [pylit::Value::Str(name), pylit::Value::List(inner)] if !name.is_empty() => {
                struct_fields(inner, &join(name), fields, elem_size)?;
            }
            [pylit::Value::Str(name), _, _] => {
                return Err(NpyError::Format(format!(
                    "field '{}' is a sub-array, which Sarek does not map",
                    join(name)
                )));
            }
            [pylit::Value::Tuple(_), _] => {
                return Err(NpyError::Format(
                    "a structured dtype field has a title, which Sarek does not map".into(),
                ));
            }
            _ => {
                return Err(NpyError::Format(format!(
                    "malformed structured dtype field {item}"
                )));
            }
        }
    }
    Ok(())
}

/// Decode a file that must hold a vector of elements with `leaves` (and `len` elements, when
/// given). A structured array with a single field is accepted where a plain scalar is expected
/// only if that field's name matches, never silently.
pub fn vector_from_bytes(
    bytes: &[u8],
    leaves: &[Leaf],
    len: Option<usize>,
) -> Result<HostVector, NpyError> {
    let array = from_bytes(bytes)?;
    let expected = Dtype::of_leaves(leaves);
    if array.dtype.fields() != expected.fields() {
        return Err(NpyError::Dtype {
            found: array.dtype.to_string(),
            expected: expected.to_string(),
        });
    }
    if let Some(n) = len
        && n != array.vector.len
    {
        return Err(NpyError::Length {
            found: array.vector.len,
            expected: n,
        });
    }
    Ok(array.vector)
}

/// Write `vector` to `path`.
pub fn write_vector(path: &Path, leaves: &[Leaf], vector: &HostVector) -> Result<(), NpyError> {
    std::fs::write(path, to_bytes(leaves, vector)).map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Read the vector in `path` (see [`vector_from_bytes`]).
pub fn read_vector(
    path: &Path,
    leaves: &[Leaf],
    len: Option<usize>,
) -> Result<HostVector, NpyError> {
    let bytes = std::fs::read(path).map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })?;
    vector_from_bytes(&bytes, leaves, len)
}

/// The subset of Python literals `.npy` headers use: dicts, lists, tuples, strings, ints,
/// booleans and None.
mod pylit {
    use std::fmt;

    #[derive(Clone, Debug, PartialEq)]
    pub enum Value {
        Str(String),
        Int(i64),
        Bool(bool),
        None,
        Tuple(Vec<Value>),
        List(Vec<Value>),
        Dict(Vec<(String, Value)>),
    }

    impl fmt::Display for Value {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let seq = |f: &mut fmt::Formatter<'_>, items: &[Value]| {
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                Ok(())
            };
            match self {
                Value::Str(s) => write!(f, "'{s}'"),
                Value::Int(n) => write!(f, "{n}"),
                Value::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
                Value::None => f.write_str("None"),
                Value::Tuple(items) => {
                    f.write_str("(")?;
                    seq(f, items)?;
                    f.write_str(if items.len() == 1 { ",)" } else { ")" })
                }
                Value::List(items) => {
                    f.write_str("[")?;
                    seq(f, items)?;
                    f.write_str("]")
                }
                Value::Dict(_) => f.write_str("{...}"),
            }
        }
    }

    pub fn parse(text: &str) -> Result<Value, String> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
            depth: 0,
        };
        let v = p.value()?;
        p.ws();
        if p.i != p.s.len() {
            return Err(format!("unexpected text at byte {}", p.i));
        }
        Ok(v)
    }

    struct Parser<'a> {
        s: &'a [u8],
        i: usize,
        depth: u32,
    }

    impl Parser<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.s.get(self.i).copied()
        }
        fn eat(&mut self, c: u8) -> bool {
            if self.peek() == Some(c) {
                self.i += 1;
                true
            } else {
                false
            }
        }
        fn value(&mut self) -> Result<Value, String> {
            self.depth += 1;
            if self.depth > 64 {
                return Err("nested too deeply".into());
            }
            let v = match self.peek() {
                Some(b'{') => {
                    self.i += 1;
                    let mut items = Vec::new();
                    let mut keys = std::collections::HashSet::new();
                    while !self.eat(b'}') {
                        let Value::Str(k) = self.value()? else {
                            return Err("dict key is not a string".into());
                        };
                        // Python keeps the last of a repeated key and this reader the first:
                        // NumPy would read such a file with another dtype or shape.
                        if !keys.insert(k.clone()) {
                            return Err(format!("key '{k}' appears twice"));
                        }
                        if !self.eat(b':') {
                            return Err("expected ':' in dict".into());
                        }
                        items.push((k, self.value()?));
                        if !self.eat(b',') && self.peek() != Some(b'}') {
                            return Err("expected ',' or '}' in dict".into());
                        }
                    }
                    Value::Dict(items)
                }
                Some(open @ (b'(' | b'[')) => {
                    self.i += 1;
                    let close = if open == b'(' { b')' } else { b']' };
                    let mut items = Vec::new();
                    while !self.eat(close) {
                        items.push(self.value()?);
                        if !self.eat(b',') && self.peek() != Some(close) {
                            return Err(format!("expected ',' or '{}'", close as char));
                        }
                    }
                    if open == b'(' {
                        Value::Tuple(items)
                    } else {
                        Value::List(items)
                    }
                }
                Some(q @ (b'\'' | b'"')) => {
                    self.i += 1;
                    let start = self.i;
                    while self.i < self.s.len() && self.s[self.i] != q {
                        if self.s[self.i] == b'\\' {
                            return Err("escapes in header strings are not supported".into());
                        }
                        self.i += 1;
                    }
                    if self.i >= self.s.len() {
                        return Err("unterminated string".into());
                    }
                    let text = String::from_utf8_lossy(&self.s[start..self.i]).into_owned();
                    self.i += 1;
                    Value::Str(text)
                }
                Some(c) if c.is_ascii_digit() || c == b'-' => {
                    let start = self.i;
                    self.i += 1;
                    while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        self.i += 1;
                    }
                    // Python 2 era headers may write `4L`.
                    let text = std::str::from_utf8(&self.s[start..self.i]).unwrap();
                    if self.s.get(self.i) == Some(&b'L') {
                        self.i += 1;
                    }
                    Value::Int(text.parse().map_err(|_| format!("bad integer `{text}`"))?)
                }
                Some(_) => {
                    let rest = &self.s[self.i..];
                    let word = [("True", Value::Bool(true)), ("False", Value::Bool(false))]
                        .into_iter()
                        .chain([("None", Value::None)])
                        .find(|(w, _)| rest.starts_with(w.as_bytes()));
                    match word {
                        Some((w, v)) => {
                            self.i += w.len();
                            v
                        }
                        None => return Err(format!("unexpected character at byte {}", self.i)),
                    }
                }
                None => return Err("unexpected end of header".into()),
            };
            self.depth -= 1;
            Ok(v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(name: &str, scalar: Scalar) -> Leaf {
        Leaf {
            name: name.into(),
            scalar,
        }
    }

    #[test]
    fn scalar_round_trip() {
        for (leaves, col) in [
            (
                vec![leaf("", Scalar::F32)],
                Column::F32(vec![1.5, -0.25, f32::INFINITY]),
            ),
            (
                vec![leaf("", Scalar::I32)],
                Column::I32(vec![1, -2, i32::MAX]),
            ),
            (
                vec![leaf("", Scalar::I64)],
                Column::I64(vec![i64::MIN, 0, 7]),
            ),
            (
                vec![leaf("", Scalar::F64)],
                Column::F64(vec![0.1, -1e300, 3.0]),
            ),
            (
                vec![leaf("", Scalar::Bool)],
                Column::Bool(vec![true, false, true]),
            ),
        ] {
            let v = HostVector {
                len: 3,
                columns: vec![col],
            };
            let bytes = to_bytes(&leaves, &v);
            assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
            let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!((10 + header_len) % 64, 0, "data must be 64-byte aligned");
            assert_eq!(vector_from_bytes(&bytes, &leaves, Some(3)).unwrap(), v);
        }
    }

    #[test]
    fn structured_round_trip_and_header() {
        let leaves = vec![
            leaf("tag", Scalar::I32),
            leaf("Rect_0", Scalar::F32),
            leaf("ok", Scalar::Bool),
        ];
        let v = HostVector {
            len: 2,
            columns: vec![
                Column::I32(vec![0, 1]),
                Column::F32(vec![0.0, 2.5]),
                Column::Bool(vec![false, true]),
            ],
        };
        let bytes = to_bytes(&leaves, &v);
        let text = String::from_utf8_lossy(&bytes[10..]);
        assert!(text.starts_with(
            "{'descr': [('tag', '<i4'), ('Rect_0', '<f4'), ('ok', '|b1')], 'fortran_order': False, 'shape': (2,), }"
        ));
        // Packed: 9 bytes per element.
        assert_eq!(
            bytes.len() - 10 - u16::from_le_bytes([bytes[8], bytes[9]]) as usize,
            18
        );
        assert_eq!(vector_from_bytes(&bytes, &leaves, None).unwrap(), v);
    }

    #[test]
    fn mismatches_name_both_sides() {
        let v = HostVector {
            len: 4,
            columns: vec![Column::I32(vec![1, 2, 3, 4])],
        };
        let bytes = to_bytes(&[leaf("", Scalar::I32)], &v);
        let e = vector_from_bytes(&bytes, &[leaf("", Scalar::F32)], Some(4)).unwrap_err();
        assert_eq!(e.to_string(), "dtype '<i4' does not fit the expected '<f4'");
        let e = vector_from_bytes(&bytes, &[leaf("", Scalar::I32)], Some(8)).unwrap_err();
        assert_eq!(e.to_string(), "length 4 does not fit the expected length 8");
        let e = vector_from_bytes(
            &bytes,
            &[leaf("x", Scalar::I32), leaf("y", Scalar::I32)],
            None,
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("[('x', '<i4'), ('y', '<i4')]"),
            "{e}"
        );
    }

    #[test]
    fn version_2_and_padding_fields() {
        // A hand-made v2 file with an aligned struct: x <i4, 4 bytes padding, y <f8.
        let dict = "{'descr': [('x', '<i4'), ('', '|V4'), ('y', '<f8')], 'fortran_order': False, 'shape': (2,), }\n";
        let mut b = Vec::new();
        b.extend_from_slice(b"\x93NUMPY\x02\x00");
        b.extend_from_slice(&(dict.len() as u32).to_le_bytes());
        b.extend_from_slice(dict.as_bytes());
        for (x, y) in [(7i32, 0.5f64), (-1, 2.0)] {
            b.extend_from_slice(&x.to_le_bytes());
            b.extend_from_slice(&[0xAA; 4]);
            b.extend_from_slice(&y.to_le_bytes());
        }
        let a = from_bytes(&b).unwrap();
        assert_eq!(
            a.dtype,
            Dtype::Structured(vec![("x".into(), Scalar::I32), ("y".into(), Scalar::F64)])
        );
        assert_eq!(
            a.vector.columns,
            vec![Column::I32(vec![7, -1]), Column::F64(vec![0.5, 2.0])]
        );
    }

    #[test]
    fn malformed_files_are_errors_not_panics() {
        let good = to_bytes(
            &[leaf("", Scalar::F32)],
            &HostVector {
                len: 3,
                columns: vec![Column::F32(vec![1.0; 3])],
            },
        );
        for cut in 0..good.len() {
            let _ = from_bytes(&good[..cut]);
        }
        assert!(matches!(from_bytes(b"hello"), Err(NpyError::Format(_))));
        // Same-length edits of the header, so the data offset stays right.
        let edit = |from: &str, to: &str| {
            let at = good
                .windows(from.len())
                .position(|w| w == from.as_bytes())
                .unwrap();
            let mut b = good.clone();
            b[at..at + to.len()].copy_from_slice(to.as_bytes());
            from_bytes(&b).unwrap_err().to_string()
        };
        assert!(edit("False", "True ").contains("Fortran"));
        assert!(edit("'<f4'", "'>f4'").contains("'>f4'"));
        assert!(edit("(3,), }", "(3,1),}").contains("not 1-D"));
        // A key present with a value of the wrong kind is named with its value, not
        // reported missing.
        let fortran = edit("False", "0    ");
        assert!(
            fortran.contains("'fortran_order' is 0, not True or False"),
            "{fortran}"
        );
        let shape = edit("(3,), }", "3,    }");
        assert!(shape.contains("'shape' is 3, not a tuple"), "{shape}");
        let descr = edit("'<f4'", "4    ");
        assert!(descr.contains("'descr' is 4, not a dtype"), "{descr}");
        assert!(edit("'shape'", "'shapf'").contains("lacks 'shape'"));
    }
}
