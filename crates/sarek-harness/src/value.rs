//! The `--arg NAME=VALUE` grammar (also the `NAME=VALUE` words of `@run` directives): a
//! scalar ([`parse_scalar`]) or a by-value record, tuple or variant ([`parse_value`]) read
//! as the parameter's type directs, with messages that say how to write it
//! ([`value_syntax`]).

use sarek_compiler::abi;
use sarek_compiler::host::type_name;
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::{Literal, Scalar};

/// Parse a scalar value written on a command line or in a directive: `true`/`false` for bool,
/// decimal integers (the whole range, down to `-9223372036854775808`) or `0x`/`0o`/`0b`
/// ones spelling the type's bits as OCaml does (`0xffffffff` is -1 for an int32); an OCaml
/// suffix `l`/`L` is accepted, floats in Rust/OCaml syntax (`2`, `2.0`, `1e-3`, `1.5d`,
/// `inf`, `-inf`, `nan`, `infinity`, `neg_infinity`), read straight to the parameter's
/// precision (a float32 is rounded once, not through a float64).
pub fn parse_scalar(text: &str, scalar: Scalar) -> Result<Literal, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{text}` is not {} {}",
            article(scalar.name()),
            scalar.name()
        )
    };
    // The value with its sign applied, wide enough for int64's most negative magnitude. As in
    // OCaml (literals and `Int32.of_string`), a hexadecimal, octal or binary number spells
    // the bits of the parameter's type: `0xffffffff` is -1 for an int32, and `-0xffffffff` 1.
    let bits = match scalar {
        Scalar::I32 => 32,
        _ => 64,
    };
    let int = |t: &str| -> Option<i128> {
        let t = t.strip_suffix(['l', 'L']).unwrap_or(t);
        let (neg, body) = t.strip_prefix('-').map_or((false, t), |b| (true, b));
        if body.starts_with(['+', '-']) {
            return None;
        }
        let body = body.replace('_', "");
        let radix = match body.get(..2) {
            Some("0x" | "0X") => 16,
            Some("0o" | "0O") => 8,
            Some("0b" | "0B") => 2,
            _ => 10,
        };
        if radix == 10 {
            let v = i128::from(body.parse::<u64>().ok()?);
            return Some(if neg { -v } else { v });
        }
        let m = u64::from_str_radix(&body[2..], radix).ok()?;
        if bits == 32 && m > u64::from(u32::MAX) {
            return Some(i128::from(m)); // reported as out of range below
        }
        // The bits of the type, negated with wrap-around as OCaml's `-0x...l` is.
        Some(if bits == 32 {
            let b = m as u32 as i32;
            i128::from(if neg { b.wrapping_neg() } else { b })
        } else {
            let b = m as i64;
            i128::from(if neg { b.wrapping_neg() } else { b })
        })
    };
    let fits =
        |v: i128, name: &str| format!("`{text}` does not fit in {name} ({v} is out of range)");
    match scalar {
        Scalar::Bool => match t {
            "true" => Ok(Literal::Bool(true)),
            "false" => Ok(Literal::Bool(false)),
            _ => Err(format!("`{text}` is not a bool (true or false)")),
        },
        Scalar::I32 => {
            let v = int(t).ok_or_else(bad)?;
            i32::try_from(v)
                .map(Literal::I32)
                .map_err(|_| fits(v, "int32"))
        }
        Scalar::I64 => {
            let v = int(t).ok_or_else(bad)?;
            i64::try_from(v)
                .map(Literal::I64)
                .map_err(|_| fits(v, "int64"))
        }
        Scalar::F32 => float::<f32>(t).map(Literal::F32).ok_or_else(bad),
        Scalar::F64 => float::<f64>(t).map(Literal::F64).ok_or_else(bad),
    }
}

/// A float in Rust's syntax (which takes `inf`, `infinity` and `nan` in any case, signed),
/// OCaml's `neg_infinity`, or with an OCaml/C suffix `d`/`f`; `_` separates digits.
fn float<F: std::str::FromStr + std::ops::Neg<Output = F>>(t: &str) -> Option<F> {
    if let Some(positive) = t.strip_prefix("neg_") {
        return (positive == "infinity").then(|| "inf".parse::<F>().ok().map(|x| -x))?;
    }
    let digits = t.replace('_', "");
    digits.parse::<F>().ok().or_else(|| {
        digits
            .strip_suffix(['d', 'f'])
            .filter(|d| !d.ends_with(|c: char| c.is_ascii_alphabetic()))
            .and_then(|d| d.parse::<F>().ok())
    })
}

/// `a` or `an`, as the type name that follows is spoken (`an int32`, `a float32`).
fn article(name: &str) -> &'static str {
    if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// Parse the value of a record, tuple or variant passed by value, written as comma-separated
/// tokens read left to right as the type directs, so nesting needs no brackets:
///
/// - a scalar is one token ([`parse_scalar`]);
/// - a record or tuple is its fields in order (`1.0,2.0`), or every field as `FIELD=VALUE`
///   in any order (`y=2.0,x=1.0`; the field's value starts after `=`, so `p=x=1,y=2,k=3`
///   nests);
/// - a variant is a constructor name then its payload components in order (`Rect,2.0,3.0`,
///   `Empty`), or, as in the `.npy` layout, a numeric tag then the payload leaves of every
///   constructor (`1,0,2.0,3.0`).
///
/// Returns the value's leaves in [`abi::leaves`] order (other constructors' payloads zero).
pub fn parse_value(kernel: &Kernel, ty: &Ty, text: &str) -> Result<Vec<Literal>, String> {
    let mut reader = ValueReader {
        kernel,
        tokens: text.split(',').map(str::trim).collect(),
        pos: 0,
    };
    let mut out = Vec::new();
    match reader.value(ty, &mut out) {
        Ok(()) => {}
        Err(ValueError::Message(m)) => return Err(m),
        Err(ValueError::Short) => {
            let given = reader.tokens.len();
            return Err(format!(
                "too few values ({given}) for {} {}, written {}",
                article(&type_name(kernel, ty)),
                type_name(kernel, ty),
                value_syntax(kernel, ty)
            ));
        }
    }
    if reader.pos < reader.tokens.len() {
        let extra = reader.tokens[reader.pos..].join(",");
        // The usual slip: a constructor given the wrong number of payload values.
        if let Ty::Variant(id) = ty
            && let Some(c) = kernel
                .variant(*id)
                .ctors
                .iter()
                .find(|c| c.name == reader.tokens[0])
        {
            return Err(format!(
                "too many values: constructor `{}` takes {}; `{extra}` is left over",
                c.name,
                payload_spelling(kernel, &c.fields)
            ));
        }
        return Err(format!(
            "too many values: `{extra}` is left over after {} {}, written {}",
            article(&type_name(kernel, ty)),
            type_name(kernel, ty),
            value_syntax(kernel, ty)
        ));
    }
    Ok(out)
}

/// How a value of `ty` is written on a command line, for messages: `<x:float32>,<y:float32>`
/// for a record, `Circle,<float32> | Rect,<float32>,<float32> | Empty` for a variant.
pub fn value_syntax(kernel: &Kernel, ty: &Ty) -> String {
    match ty {
        Ty::Variant(id) => kernel
            .variant(*id)
            .ctors
            .iter()
            .map(|c| {
                std::iter::once(c.name.clone())
                    .chain(c.fields.iter().map(|f| positional_syntax(kernel, f, "")))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
            .join(" | "),
        _ => positional_syntax(kernel, ty, ""),
    }
}

/// The positional spelling of a value of `ty`; `label` is the field path it fills (`p.x`).
fn positional_syntax(kernel: &Kernel, ty: &Ty, label: &str) -> String {
    let tagged = |what: String| {
        if label.is_empty() {
            format!("<{what}>")
        } else {
            format!("<{label}:{what}>")
        }
    };
    match ty {
        Ty::Record(id) => {
            let r = kernel.record(*id);
            r.fields
                .iter()
                .map(|f| {
                    let label = match (r.is_tuple, label.is_empty()) {
                        (true, _) => label.to_string(),
                        (false, true) => f.name.clone(),
                        (false, false) => format!("{label}.{}", f.name),
                    };
                    positional_syntax(kernel, &f.ty, &label)
                })
                .collect::<Vec<_>>()
                .join(",")
        }
        // A nested variant: its constructor, then that constructor's payload.
        Ty::Variant(id) => format!(
            "{}[,<payload>]",
            tagged(format!("{} constructor", kernel.variant(*id).name))
        ),
        other => tagged(type_name(kernel, other)),
    }
}

/// What a constructor's payload is: `no payload`, `1 value (float32)`,
/// `2 values (float32, float32)`.
fn payload_spelling(kernel: &Kernel, fields: &[Ty]) -> String {
    if fields.is_empty() {
        return "no payload".into();
    }
    let types: Vec<String> = fields.iter().map(|f| type_name(kernel, f)).collect();
    let n = fields.len();
    format!(
        "{n} payload value{} ({})",
        if n == 1 { "" } else { "s" },
        types.join(", ")
    )
}

/// Why [`ValueReader`] stopped.
enum ValueError {
    /// The tokens ran out; the caller words it with what it was reading.
    Short,
    Message(String),
}

impl From<String> for ValueError {
    fn from(m: String) -> Self {
        ValueError::Message(m)
    }
}

/// The token stream of [`parse_value`].
struct ValueReader<'a> {
    kernel: &'a Kernel,
    tokens: Vec<&'a str>,
    pos: usize,
}

impl<'a> ValueReader<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.tokens.get(self.pos).copied()
    }

    fn take(&mut self) -> Result<&'a str, ValueError> {
        let t = self.peek().ok_or(ValueError::Short)?;
        self.pos += 1;
        Ok(t)
    }

    /// Read one value of `ty`, appending its leaves to `out`.
    fn value(&mut self, ty: &Ty, out: &mut Vec<Literal>) -> Result<(), ValueError> {
        match ty {
            Ty::Scalar(s) => {
                let t = self.take()?;
                out.push(parse_scalar(t, *s)?);
            }
            Ty::Record(id) => {
                let fields = &self.kernel.record(*id).fields;
                if self.peek().is_some_and(|t| t.contains('=')) {
                    self.named_fields(ty, *id, out)?;
                } else {
                    for f in fields {
                        self.value(&f.ty, out)?;
                    }
                }
            }
            Ty::Variant(id) => self.variant(ty, *id, out)?,
            // Not passed by value (the typer keeps them out of by-value parameters).
            Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {}
        }
        Ok(())
    }

    /// A record as `FIELD=VALUE` for every field, in any order.
    fn named_fields(
        &mut self,
        ty: &Ty,
        id: sarek_compiler::ir::RecordId,
        out: &mut Vec<Literal>,
    ) -> Result<(), ValueError> {
        let fields = &self.kernel.record(id).fields;
        let name = type_name(self.kernel, ty);
        let mut given: Vec<Option<Vec<Literal>>> = vec![None; fields.len()];
        for _ in 0..fields.len() {
            let missing: Vec<&str> = fields
                .iter()
                .zip(&given)
                .filter(|(_, g)| g.is_none())
                .map(|(f, _)| f.name.as_str())
                .collect();
            let missing = format!("`{}`", missing.join("`, `"));
            let Some((field, rest)) = self.peek().and_then(|t| t.split_once('=')) else {
                return Err(match self.peek() {
                    None => format!("{name} still needs field(s) {missing} (FIELD=VALUE)"),
                    Some(t) => {
                        format!("`{t}` is not FIELD=VALUE; {name} still needs field(s) {missing}")
                    }
                }
                .into());
            };
            let field = field.trim();
            let Some(k) = fields.iter().position(|f| f.name == field) else {
                let suggestion =
                    sarek_compiler::diag::closest(field, fields.iter().map(|f| f.name.as_str()))
                        .map(|c| format!("; did you mean `{c}`?"))
                        .unwrap_or_default();
                let all: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
                return Err(format!(
                    "{name} has no field `{field}` (its fields: {}){suggestion}",
                    all.join(", ")
                )
                .into());
            };
            if given[k].is_some() {
                return Err(format!("field `{field}` of {name} is given twice").into());
            }
            self.tokens[self.pos] = rest.trim();
            let mut leaves = Vec::new();
            self.value(&fields[k].ty, &mut leaves)?;
            given[k] = Some(leaves);
        }
        out.extend(given.into_iter().flatten().flatten());
        Ok(())
    }

    /// A constructor name then its payload, or a numeric tag then every payload leaf.
    fn variant(
        &mut self,
        ty: &Ty,
        id: sarek_compiler::ir::VariantId,
        out: &mut Vec<Literal>,
    ) -> Result<(), ValueError> {
        let kernel = self.kernel;
        let variant = kernel.variant(id);
        let ctors: Vec<&str> = variant.ctors.iter().map(|c| c.name.as_str()).collect();
        let t = self.take()?;
        if let Ok(Literal::I32(tag)) = parse_scalar(t, Scalar::I32) {
            // The `.npy` layout: the tag, then the payload leaves of every constructor.
            if usize::try_from(tag).ok().is_none_or(|t| t >= ctors.len()) {
                return Err(format!(
                    "tag {tag} is out of range for {} (0 to {}: {})",
                    variant.name,
                    ctors.len() - 1,
                    ctors.join(", ")
                )
                .into());
            }
            out.push(Literal::I32(tag));
            for c in &variant.ctors {
                for f in &c.fields {
                    self.value(f, out)?;
                }
            }
            return Ok(());
        }
        let Some(tag) = ctors.iter().position(|c| *c == t) else {
            let suggestion = sarek_compiler::diag::closest(t, ctors.iter().copied())
                .map(|c| format!("; did you mean `{c}`?"))
                .unwrap_or_default();
            let what = if t.is_empty() {
                "an empty value".to_string()
            } else {
                format!("`{t}`")
            };
            return Err(format!(
                "{what} is not a constructor of {} ({}) nor a tag 0 to {}{suggestion}",
                type_name(kernel, ty),
                ctors.join(", "),
                ctors.len() - 1
            )
            .into());
        };
        out.push(Literal::I32(tag as i32));
        for (c, ctor) in variant.ctors.iter().enumerate() {
            let start = self.pos;
            for f in &ctor.fields {
                if c != tag {
                    // Other constructors' payloads are zero, as the generator leaves them.
                    out.extend(abi::leaves(kernel, f).iter().map(|l| zero(l.scalar)));
                    continue;
                }
                match self.value(f, out) {
                    Err(ValueError::Short) => {
                        return Err(format!(
                            "too few values: constructor `{}` takes {}, {} given",
                            ctor.name,
                            payload_spelling(kernel, &ctor.fields),
                            self.tokens.len() - start
                        )
                        .into());
                    }
                    r => r?,
                }
            }
        }
        Ok(())
    }
}

/// The zero of a scalar type.
fn zero(s: Scalar) -> Literal {
    match s {
        Scalar::Bool => Literal::Bool(false),
        Scalar::I32 => Literal::I32(0),
        Scalar::I64 => Literal::I64(0),
        Scalar::F32 => Literal::F32(0.0),
        Scalar::F64 => Literal::F64(0.0),
    }
}
