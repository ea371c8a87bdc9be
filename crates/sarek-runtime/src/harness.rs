//! The execution harness shared by `sarek run`/`verify`/`bench` and every backend's tests.
//!
//! - [`parse_directives`]: the `(* @run <kernel> [size=N] [grid=..] [block=..] [NAME=VALUE]... *)`
//!   comments of corpus files;
//! - [`seeded_vector`]: deterministic inputs from (seed, parameter index), per the
//!   conventions: int32/int64 uniform in [0, 1000), float32/float64 uniform in [-1, 1), bool a
//!   fair coin, a variant a uniform tag then that constructor's payload by type, records and
//!   tuples field by field, element after element (a small splitmix64, no `rand` dependency,
//!   so the stream never changes under us);
//! - [`build_args`]: a kernel's arguments from its IR signature, `NAME=VALUE` strings and
//!   optional given vectors, with one clear error per problem; [`parse_value`] reads a
//!   by-value record or variant (`Rect,2.0,3.0`, `x=1,y=2`) guided by its type;
//! - [`compare_vectors`] and [`Tolerance`]: integers and bools exactly, floats within an
//!   absolute bound or a distance in ulps (docs/cli.md explains the figures);
//! - [`check_corpus_against_interp`]: run every corpus directive on `interp` and on a backend
//!   and report what disagrees.

use crate::device::{Backend, Device, LaunchConfig, LaunchStats, RuntimeError};
pub use crate::signature::{Param, ParamKind, signature, type_name};
use crate::value::{ArgValue, Column, HostVector};
use sarek_compiler::abi;
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::{Literal, Scalar};
use std::fmt;
use std::path::{Path, PathBuf};

/// The seed used when none is given (`sarek run --seed`, corpus directives).
pub const DEFAULT_SEED: u64 = 42;
/// The vector length used when none is given.
pub const DEFAULT_SIZE: usize = 1024;

// ---------------------------------------------------------------------------------------
// Directives

/// One `(* @run ... *)` directive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub kernel: String,
    /// Length of every vector parameter.
    pub size: usize,
    pub grid: Option<[u32; 3]>,
    pub block: Option<[u32; 3]>,
    /// `NAME=VALUE` for the scalar parameters, in the order written.
    pub args: Vec<(String, String)>,
    /// 1-based line of the directive in its file.
    pub line: usize,
}

impl Directive {
    /// The launch: the given grid/block, else the default 1-D launch over `size`.
    pub fn config(&self) -> LaunchConfig {
        launch_config(self.size, self.grid, self.block)
    }
}

/// Every `@run` directive of `source`, in order. A directive is a comment line whose first
/// word is `@run` (`(* @run ... *)` alone, or one line of a longer comment); it ends at the
/// end of the line or at `*)`. The words `size`, `grid` and `block` are directive options;
/// every other `NAME=VALUE` is a kernel argument.
pub fn parse_directives(source: &str) -> Result<Vec<Directive>, String> {
    let mut out = Vec::new();
    for (i, line) in source.lines().enumerate() {
        let l = line.trim_start();
        let l = l.strip_prefix("(*").unwrap_or(l).trim_start();
        let Some(body) = l.strip_prefix("@run") else {
            continue;
        };
        if !body.is_empty() && !body.starts_with(char::is_whitespace) {
            continue;
        }
        let body = body.find("*)").map_or(body, |end| &body[..end]);
        out.push(parse_directive(body, i + 1).map_err(|e| format!("line {}: {e}", i + 1))?);
    }
    Ok(out)
}

fn parse_directive(body: &str, line: usize) -> Result<Directive, String> {
    let mut words = body.split_whitespace();
    let kernel = words.next().ok_or("@run needs a kernel name")?.to_string();
    let mut d = Directive {
        kernel,
        size: DEFAULT_SIZE,
        grid: None,
        block: None,
        args: Vec::new(),
        line,
    };
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| format!("`{w}` is not NAME=VALUE"))?;
        match k {
            "size" => {
                d.size = v
                    .parse()
                    .map_err(|_| format!("size `{v}` is not a length"))?
            }
            "grid" => d.grid = Some(parse_dims(v)?),
            "block" => d.block = Some(parse_dims(v)?),
            _ => d.args.push((k.to_string(), v.to_string())),
        }
    }
    Ok(d)
}

/// `X[,Y[,Z]]`, each a positive integer; missing axes are 1.
pub fn parse_dims(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{s}` is not X[,Y[,Z]]"));
    }
    let mut dims = [1u32; 3];
    for (d, p) in dims.iter_mut().zip(&parts) {
        *d = p
            .trim()
            .parse()
            .ok()
            .filter(|&n: &u32| n > 0)
            .ok_or_else(|| format!("`{s}` is not X[,Y[,Z]] of positive integers"))?;
    }
    Ok(dims)
}

/// Grid and block: as given; a missing block is min(256, N) along x (1-D) and a missing grid
/// covers `size` threads along x.
pub fn launch_config(size: usize, grid: Option<[u32; 3]>, block: Option<[u32; 3]>) -> LaunchConfig {
    let n = u32::try_from(size).unwrap_or(u32::MAX);
    let linear = LaunchConfig::linear(n);
    let block = block.unwrap_or(linear.block);
    let grid = grid.unwrap_or([n.div_ceil(block[0]).max(1), 1, 1]);
    LaunchConfig { grid, block }
}

// ---------------------------------------------------------------------------------------
// Seeded inputs

/// splitmix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough for test inputs.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The generator of parameter number `index` under `seed`.
    pub fn for_param(seed: u64, index: usize) -> Rng {
        let mut r = Rng(seed ^ (index as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        r.next_u64(); // decorrelate nearby seeds
        r
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, n) (multiply-shift: no modulo bias worth speaking of for small n).
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * u64::from(n)) >> 32) as u32
    }

    /// A value of `scalar` drawn per the conventions.
    pub fn scalar(&mut self, scalar: Scalar) -> Literal {
        match scalar {
            Scalar::Bool => Literal::Bool(self.next_u64() >> 63 == 1),
            Scalar::I32 => Literal::I32(self.below(1000) as i32),
            Scalar::I64 => Literal::I64(i64::from(self.below(1000))),
            // 24 and 53 random mantissa bits: exactly representable, uniform in [-1, 1).
            Scalar::F32 => Literal::F32((self.next_u64() >> 40) as f32 / (1u32 << 23) as f32 - 1.0),
            Scalar::F64 => Literal::F64((self.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0),
        }
    }
}

/// A vector of `len` elements of `elem` filled from parameter `index`'s generator.
pub fn seeded_vector(
    kernel: &Kernel,
    elem: &Ty,
    len: usize,
    seed: u64,
    index: usize,
) -> HostVector {
    let leaves = abi::leaves(kernel, elem);
    let mut v = HostVector::zeros(&leaves, len);
    let mut rng = Rng::for_param(seed, index);
    for i in 0..len {
        let mut cursor = 0;
        fill(kernel, elem, &mut rng, &mut v.columns, &mut cursor, i);
    }
    v
}

/// Fill element `i` of the leaves starting at `*cursor` with a random value of `ty`.
fn fill(
    kernel: &Kernel,
    ty: &Ty,
    rng: &mut Rng,
    cols: &mut [Column],
    cursor: &mut usize,
    i: usize,
) {
    match ty {
        Ty::Scalar(s) => {
            cols[*cursor].set(i, rng.scalar(*s));
            *cursor += 1;
        }
        Ty::Record(id) => {
            for f in &kernel.record(*id).fields {
                fill(kernel, &f.ty, rng, cols, cursor, i);
            }
        }
        Ty::Variant(id) => {
            let ctors = &kernel.variant(*id).ctors;
            let tag = rng.below(ctors.len().max(1) as u32) as usize;
            cols[*cursor].set(i, Literal::I32(tag as i32));
            *cursor += 1;
            for (c, ctor) in ctors.iter().enumerate() {
                for f in &ctor.fields {
                    if c == tag {
                        fill(kernel, f, rng, cols, cursor, i);
                    } else {
                        // Payloads of other constructors stay zero.
                        *cursor += abi::leaves(kernel, f).len();
                    }
                }
            }
        }
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {}
    }
}

// ---------------------------------------------------------------------------------------
// Signatures and arguments

/// Parse a scalar value written on a command line or in a directive: `true`/`false` for bool,
/// decimal or `0x` hex integers (an OCaml suffix `l`/`L` is accepted), floats in Rust/OCaml
/// syntax (`2`, `2.0`, `1e-3`, `1.5d`).
pub fn parse_scalar(text: &str, scalar: Scalar) -> Result<Literal, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{text}` is not {} {}",
            article(scalar.name()),
            scalar.name()
        )
    };
    let int = |t: &str| -> Option<i64> {
        let t = t.strip_suffix(['l', 'L']).unwrap_or(t);
        let (neg, body) = t.strip_prefix('-').map_or((false, t), |b| (true, b));
        let body = body.replace('_', "");
        let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            i64::from_str_radix(h, 16).ok()?
        } else {
            body.parse::<i64>().ok()?
        };
        Some(if neg { -v } else { v })
    };
    let float = |t: &str| {
        t.strip_suffix(['d', 'f'])
            .unwrap_or(t)
            .replace('_', "")
            .parse::<f64>()
            .ok()
    };
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
                .map_err(|_| format!("`{text}` does not fit in int32"))
        }
        Scalar::I64 => int(t).map(Literal::I64).ok_or_else(bad),
        Scalar::F32 => float(t).map(|v| Literal::F32(v as f32)).ok_or_else(bad),
        Scalar::F64 => float(t).map(Literal::F64).ok_or_else(bad),
    }
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

/// Check that every live variant tag of a given vector (a `.npy` input) names a constructor,
/// so that a bad file is an argument error rather than an interpreter fault or, on a GPU,
/// an unmatched `switch`. Payloads of constructors an element does not hold are not checked.
fn check_tags(kernel: &Kernel, elem: &Ty, v: &HostVector) -> Result<(), String> {
    if !has_variant(kernel, elem) {
        return Ok(());
    }
    let leaves = abi::leaves(kernel, elem);
    for i in 0..v.len {
        let mut cursor = 0;
        check_element_tags(kernel, elem, &v.columns, &mut cursor, i, true).map_err(
            |(leaf, tag, id)| {
                let variant = kernel.variant(id);
                let ctors: Vec<&str> = variant.ctors.iter().map(|c| c.name.as_str()).collect();
                format!(
                    "element {i}: `{}` is {tag}, not a tag of {} (0 to {}: {})",
                    leaves[leaf].name,
                    variant.name,
                    ctors.len() - 1,
                    ctors.join(", ")
                )
            },
        )?;
    }
    Ok(())
}

fn has_variant(kernel: &Kernel, ty: &Ty) -> bool {
    match ty {
        Ty::Variant(_) => true,
        Ty::Record(id) => kernel
            .record(*id)
            .fields
            .iter()
            .any(|f| has_variant(kernel, &f.ty)),
        _ => false,
    }
}

/// Walk element `i` of `ty` from leaf `*cursor`; `live` is false inside a payload the element
/// does not hold. Err: (leaf index, tag, variant) of the first bad tag.
fn check_element_tags(
    kernel: &Kernel,
    ty: &Ty,
    cols: &[Column],
    cursor: &mut usize,
    i: usize,
    live: bool,
) -> Result<(), (usize, i32, sarek_compiler::ir::VariantId)> {
    match ty {
        Ty::Scalar(_) => *cursor += 1,
        Ty::Record(id) => {
            for f in &kernel.record(*id).fields {
                check_element_tags(kernel, &f.ty, cols, cursor, i, live)?;
            }
        }
        Ty::Variant(id) => {
            let ctors = &kernel.variant(*id).ctors;
            let at = *cursor;
            let tag = match cols[at].get(i) {
                Literal::I32(t) => t,
                _ => 0,
            };
            let held = usize::try_from(tag).ok().filter(|&t| t < ctors.len());
            if live && held.is_none() {
                return Err((at, tag, *id));
            }
            *cursor += 1;
            for (c, ctor) in ctors.iter().enumerate() {
                for f in &ctor.fields {
                    check_element_tags(kernel, f, cols, cursor, i, live && held == Some(c))?;
                }
            }
        }
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {}
    }
    Ok(())
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

/// What the caller gives for one launch.
#[derive(Clone, Debug, Default)]
pub struct Inputs {
    /// Length of every generated vector.
    pub size: usize,
    pub seed: u64,
    /// `NAME=VALUE` for scalar (and by-value aggregate) parameters.
    pub args: Vec<(String, String)>,
    /// Given vectors (e.g. from `.npy` files), by parameter name.
    pub vectors: Vec<(String, HostVector)>,
    /// Lengths of particular vectors (`--len NAME=N`), overriding `size` for them.
    pub lengths: Vec<(String, usize)>,
    /// How the user writes an argument, for messages: `--arg ` on the command line, empty in
    /// directives.
    pub arg_hint: &'static str,
}

impl Inputs {
    /// The length of generated vector `name`.
    pub fn length(&self, name: &str) -> usize {
        self.lengths
            .iter()
            .find(|(n, _)| n == name)
            .map_or(self.size, |(_, l)| *l)
    }

    pub fn new(size: usize, seed: u64) -> Inputs {
        Inputs {
            size,
            seed,
            ..Inputs::default()
        }
    }

    pub fn from_directive(d: &Directive) -> Inputs {
        Inputs {
            size: d.size,
            seed: DEFAULT_SEED,
            args: d.args.clone(),
            ..Inputs::default()
        }
    }
}

/// Build the arguments of `kernel`: scalars from `inputs.args`, vectors from
/// `inputs.vectors` or the seeded generator. Every problem is one clear message.
pub fn build_args(kernel: &Kernel, inputs: &Inputs) -> Result<Vec<ArgValue>, RuntimeError> {
    let sig = signature(kernel);
    let err = |m: String| Err(RuntimeError::Arguments(m));
    let hint = inputs.arg_hint;
    let names: Vec<&str> = sig.iter().map(|p| p.name.as_str()).collect();
    let unknown = |name: &str| {
        let suggestion = sarek_compiler::diag::closest(name, names.iter().copied())
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        format!(
            "kernel `{}` has no parameter `{name}`{suggestion}",
            kernel.name
        )
    };
    for (i, (name, _)) in inputs.args.iter().enumerate() {
        let Some(p) = sig.iter().find(|p| &p.name == name) else {
            return err(unknown(name));
        };
        if inputs.args[..i].iter().any(|(n, _)| n == name) {
            return err(format!("parameter `{name}` is given twice"));
        }
        if let ParamKind::Vector { .. } = p.kind {
            return err(format!(
                "parameter `{name}` is a vector ({}); vectors are generated, or read with --input {name}=FILE.npy",
                p.type_name
            ));
        }
    }
    for (i, (name, len)) in inputs.lengths.iter().enumerate() {
        let Some(p) = sig.iter().find(|p| &p.name == name) else {
            return err(unknown(name));
        };
        if inputs.lengths[..i].iter().any(|(n, _)| n == name) {
            return err(format!("the length of `{name}` is given twice"));
        }
        if !matches!(p.kind, ParamKind::Vector { .. }) {
            return err(format!(
                "parameter `{name}` is not a vector ({}); only vectors have a length",
                p.type_name
            ));
        }
        if let Some((_, v)) = inputs.vectors.iter().find(|(n, _)| n == name)
            && v.len != *len
        {
            return err(format!(
                "vector `{name}` is given with {} elements but its length is set to {len}",
                v.len
            ));
        }
    }
    for (name, _) in &inputs.vectors {
        match sig.iter().find(|p| &p.name == name) {
            None => return err(unknown(name)),
            Some(p) if !matches!(p.kind, ParamKind::Vector { .. }) => {
                return err(format!(
                    "parameter `{name}` is not a vector ({}); give it as {hint}{name}=VALUE",
                    p.type_name
                ));
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(sig.len());
    for (index, p) in sig.iter().enumerate() {
        let given = inputs
            .args
            .iter()
            .find(|(n, _)| n == &p.name)
            .map(|(_, v)| v.as_str());
        let value = match &p.kind {
            ParamKind::Scalar(s) => {
                let Some(text) = given else {
                    return err(format!(
                        "missing value for scalar parameter `{}` of type {} (give it as {hint}{}=VALUE)",
                        p.name, p.type_name, p.name
                    ));
                };
                let v = parse_scalar(text, *s).map_err(|e| {
                    RuntimeError::Arguments(format!("{hint}{}={text}: {e}", p.name))
                })?;
                ArgValue::Scalar(v)
            }
            ParamKind::Aggregate(_) => {
                let Some(text) = given else {
                    return err(format!(
                        "missing value for parameter `{}` of type {} (give it as {hint}{}={})",
                        p.name,
                        p.type_name,
                        p.name,
                        value_syntax(kernel, &p.ty)
                    ));
                };
                let vals = parse_value(kernel, &p.ty, text).map_err(|e| {
                    RuntimeError::Arguments(format!(
                        "{hint}{}={text} (parameter `{} : {}`): {e}",
                        p.name, p.name, p.type_name
                    ))
                })?;
                ArgValue::Aggregate(vals)
            }
            ParamKind::Vector { elem, .. } => {
                match inputs.vectors.iter().find(|(n, _)| n == &p.name) {
                    Some((_, v)) => {
                        check_tags(kernel, elem, v).map_err(|e| {
                            RuntimeError::Arguments(format!(
                                "parameter `{}` ({}), {e}",
                                p.name, p.type_name
                            ))
                        })?;
                        ArgValue::Vector(v.clone())
                    }
                    None => ArgValue::Vector(seeded_vector(
                        kernel,
                        elem,
                        inputs.length(&p.name),
                        inputs.seed,
                        index,
                    )),
                }
            }
        };
        out.push(value);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// Comparison

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

// ---------------------------------------------------------------------------------------
// Corpus

/// What happened to one directive.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Every vector agreed.
    Agree,
    /// The backend ran and disagreed with `interp` (one line per vector that differs).
    Mismatch(Vec<String>),
    /// The target or the device cannot run the kernel ([`RuntimeError::Refused`]: float64 on
    /// WGSL, warps without subgroups): one located line per reason.
    Refused(String),
    /// The backend failed to launch or faulted, or its compiler rejected the generated source
    /// ([`RuntimeError::Compile`], a generator bug).
    BackendError(String),
    /// The front end, lowering, the arguments or the interpreter failed: the corpus entry
    /// itself is broken.
    Broken(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct CorpusEntry {
    pub file: PathBuf,
    pub kernel: String,
    pub line: usize,
    pub outcome: Outcome,
}

/// The result of [`check_corpus_against_interp`].
#[derive(Clone, Debug, PartialEq)]
pub struct CorpusReport {
    pub backend: Backend,
    /// Why the backend could not be opened (then `entries` is empty).
    pub unavailable: Option<String>,
    pub entries: Vec<CorpusEntry>,
}

impl CorpusReport {
    /// Entries that are neither agreement nor a refusal.
    pub fn failures(&self) -> Vec<&CorpusEntry> {
        self.entries
            .iter()
            .filter(|e| !matches!(e.outcome, Outcome::Agree | Outcome::Refused(_)))
            .collect()
    }
    pub fn count(&self, pred: impl Fn(&Outcome) -> bool) -> usize {
        self.entries.iter().filter(|e| pred(&e.outcome)).count()
    }
}

impl fmt::Display for CorpusReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(why) = &self.unavailable {
            return writeln!(f, "{}: unavailable: {why}", self.backend);
        }
        writeln!(
            f,
            "{}: {} directives, {} agree, {} refused, {} failed",
            self.backend,
            self.entries.len(),
            self.count(|o| matches!(o, Outcome::Agree)),
            self.count(|o| matches!(o, Outcome::Refused(_))),
            self.failures().len()
        )?;
        for e in &self.entries {
            let place = format!("{}:{} {}", e.file.display(), e.line, e.kernel);
            match &e.outcome {
                Outcome::Agree => {}
                Outcome::Refused(m) => writeln!(f, "  refused  {place}: {}", first_line(m))?,
                Outcome::Mismatch(lines) => {
                    writeln!(f, "  MISMATCH {place}: {}", lines.join("; "))?
                }
                Outcome::BackendError(m) => writeln!(f, "  ERROR    {place}: {}", first_line(m))?,
                Outcome::Broken(m) => writeln!(f, "  BROKEN   {place}: {}", first_line(m))?,
            }
        }
        Ok(())
    }
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// Run `kernel` on `device` with `args` after checking the launch fits the device and the
/// arguments fit the kernel.
pub fn run(
    device: &dyn Device,
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
) -> Result<LaunchStats, RuntimeError> {
    device.launch(kernel, config, args)
}

/// [`run`] in checked mode when `checked` (issue 17): on a GPU backend the kernel launches
/// with bounds and divisor checks ([`sarek_compiler::passes::checked`]), and a failed check
/// is a located [`RuntimeError::Fault`] after the launch. `interp` and `cpu` always check
/// (with the index and thread in the message), so they run the kernel as it is.
pub fn run_checked(
    device: &dyn Device,
    kernel: &Kernel,
    config: LaunchConfig,
    args: &mut [ArgValue],
    checked: bool,
) -> Result<LaunchStats, RuntimeError> {
    let info = device.info();
    crate::limits::check_launch(kernel, &config, info.backend, &info.name)?;
    let host_checks = matches!(info.backend, Backend::Interp | Backend::Cpu);
    if checked && !host_checks {
        let kernel = sarek_compiler::passes::checked::insert_checks(kernel);
        run(device, &kernel, config, args)
    } else {
        run(device, kernel, config, args)
    }
}

/// For every `.sarek` file of `kernels_dir` and every `@run` directive in it: compile, run on
/// `interp` and on `backend` with the same seeded inputs, and compare. The caller decides what
/// is fatal (typically: any [`CorpusReport::failures`], and `unavailable` when the tests'
/// backend-required policy, `sarek_testkit::backends`, says the backend must be present).
pub fn check_corpus_against_interp(backend: Backend, kernels_dir: &Path) -> CorpusReport {
    let mut report = CorpusReport {
        backend,
        unavailable: None,
        entries: Vec::new(),
    };
    let device = match crate::discover::open(backend) {
        Ok(d) => d,
        Err(e) => {
            report.unavailable = Some(crate::discover::unavailable_reason(&e));
            return report;
        }
    };
    let interp = match crate::discover::open(Backend::Interp) {
        Ok(d) => d,
        Err(e) => {
            report.unavailable = Some(format!("the reference interpreter is unavailable: {e}"));
            return report;
        }
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(kernels_dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "sarek"));
    files.sort();
    for file in files {
        let entry = |kernel: &str, line: usize, outcome: Outcome| CorpusEntry {
            file: file.clone(),
            kernel: kernel.to_string(),
            line,
            outcome,
        };
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                report
                    .entries
                    .push(entry("", 0, Outcome::Broken(e.to_string())));
                continue;
            }
        };
        let directives = match parse_directives(&text) {
            Ok(d) => d,
            Err(e) => {
                report.entries.push(entry("", 0, Outcome::Broken(e)));
                continue;
            }
        };
        if directives.is_empty() {
            continue;
        }
        let mut sources = sarek_compiler::SourceMap::new();
        let id = sources.add(file.display().to_string(), text);
        let program = match sarek_compiler::check(&sources, id) {
            Ok(p) => p,
            Err(diags) => {
                let msg = sarek_compiler::diag::render_all(&diags, &sources, false);
                for d in &directives {
                    report
                        .entries
                        .push(entry(&d.kernel, d.line, Outcome::Broken(msg.clone())));
                }
                continue;
            }
        };
        for d in &directives {
            let outcome = run_directive(&sources, &program, d, interp.as_ref(), device.as_ref());
            report.entries.push(entry(&d.kernel, d.line, outcome));
        }
    }
    report
}

/// Render a runtime error on one line per message, locating interpreter faults and refusals
/// in the sources (`file:line:col: message`).
pub fn render_error(e: &RuntimeError, sources: &sarek_compiler::SourceMap) -> String {
    match e {
        RuntimeError::Fault { span, message } => format!("{}: {message}", sources.location(*span)),
        RuntimeError::Refused { diagnostics, .. } => diagnostics
            .iter()
            .map(|d| format!("{}: {}", sources.location(d.span), d.message))
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn run_directive(
    sources: &sarek_compiler::SourceMap,
    program: &sarek_compiler::front::tast::Program,
    d: &Directive,
    interp: &dyn Device,
    device: &dyn Device,
) -> Outcome {
    let kernel = match sarek_compiler::lower_kernel(program, &d.kernel) {
        Ok(k) => k,
        Err(diags) => {
            return Outcome::Broken(sarek_compiler::diag::render_all(&diags, sources, false));
        }
    };
    let mut expected = match build_args(&kernel, &Inputs::from_directive(d)) {
        Ok(a) => a,
        Err(e) => return Outcome::Broken(e.to_string()),
    };
    let mut found = expected.clone();
    let config = d.config();
    if let Err(e) = run(interp, &kernel, config, &mut expected) {
        return Outcome::Broken(format!("interp: {}", render_error(&e, sources)));
    }
    match run(device, &kernel, config, &mut found) {
        Ok(_) => {}
        // Only a refusal is a limitation; a compiler rejecting generated code is a failure.
        Err(e @ RuntimeError::Refused { .. }) => {
            return Outcome::Refused(render_error(&e, sources));
        }
        Err(e) => return Outcome::BackendError(render_error(&e, sources)),
    }
    let diffs: Vec<String> = compare_args(&kernel, &expected, &found, &Tolerance::default())
        .into_iter()
        .filter(|c| !c.ok())
        .map(|c| {
            format!(
                "{}: {} of {} differ, first {}",
                c.param,
                c.mismatches,
                c.compared,
                c.first.unwrap()
            )
        })
        .collect();
    if diffs.is_empty() {
        Outcome::Agree
    } else {
        Outcome::Mismatch(diffs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives() {
        let src = "(* @run saxpy size=4096 a=2.0 n=4096 *)\n(* plain comment\n   @run t grid=4,4 block=16,16 w=64 *)\nlet%kernel ...";
        let d = parse_directives(src).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].kernel, "saxpy");
        assert_eq!(d[0].size, 4096);
        assert_eq!(
            d[0].args,
            vec![("a".into(), "2.0".into()), ("n".into(), "4096".into())]
        );
        assert_eq!(
            d[0].config(),
            LaunchConfig {
                grid: [16, 1, 1],
                block: [256, 1, 1]
            }
        );
        assert_eq!(d[1].line, 3);
        assert_eq!(
            d[1].config(),
            LaunchConfig {
                grid: [4, 4, 1],
                block: [16, 16, 1]
            }
        );
        assert!(
            parse_directives("(* @run k size=x *)")
                .unwrap_err()
                .contains("line 1")
        );
        assert!(parse_directives("(* @run k oops *)").is_err());
        assert!(parse_directives("(* @run k block=0 *)").is_err());
    }

    #[test]
    fn default_launch() {
        assert_eq!(
            launch_config(100, None, None),
            LaunchConfig {
                grid: [1, 1, 1],
                block: [100, 1, 1]
            }
        );
        assert_eq!(
            launch_config(1000, None, None),
            LaunchConfig {
                grid: [4, 1, 1],
                block: [256, 1, 1]
            }
        );
        assert_eq!(launch_config(1000, None, Some([64, 1, 1])).grid, [16, 1, 1]);
    }

    #[test]
    fn generator_ranges_and_determinism() {
        let mut a = Rng::for_param(42, 0);
        let mut b = Rng::for_param(42, 0);
        let mut c = Rng::for_param(42, 1);
        let mut same = 0;
        for _ in 0..10_000 {
            let x = a.scalar(Scalar::F32);
            assert_eq!(x, b.scalar(Scalar::F32));
            if x == c.scalar(Scalar::F32) {
                same += 1;
            }
            let Literal::F32(x) = x else { unreachable!() };
            assert!((-1.0..1.0).contains(&x));
            let Literal::I32(i) = a.scalar(Scalar::I32) else {
                unreachable!()
            };
            b.scalar(Scalar::I32);
            assert!((0..1000).contains(&i));
            let Literal::F64(y) = a.scalar(Scalar::F64) else {
                unreachable!()
            };
            b.scalar(Scalar::F64);
            assert!((-1.0..1.0).contains(&y));
        }
        assert!(same < 10, "parameters must get different streams");
        // Roughly uniform: mean of [0,1000) draws near 499.5, coin near 1/2.
        let mut r = Rng::new(7);
        let n = 100_000;
        let mean = (0..n).map(|_| f64::from(r.below(1000))).sum::<f64>() / n as f64;
        assert!((mean - 499.5).abs() < 5.0, "{mean}");
        let heads = (0..n)
            .filter(|_| r.scalar(Scalar::Bool) == Literal::Bool(true))
            .count();
        assert!((heads as f64 / n as f64 - 0.5).abs() < 0.01);
    }

    #[test]
    fn scalar_parsing() {
        assert_eq!(parse_scalar("2.0", Scalar::F32), Ok(Literal::F32(2.0)));
        assert_eq!(parse_scalar("2", Scalar::F64), Ok(Literal::F64(2.0)));
        assert_eq!(parse_scalar("1.5d", Scalar::F64), Ok(Literal::F64(1.5)));
        assert_eq!(parse_scalar("-0x10", Scalar::I32), Ok(Literal::I32(-16)));
        assert_eq!(parse_scalar("7L", Scalar::I64), Ok(Literal::I64(7)));
        assert_eq!(parse_scalar("true", Scalar::Bool), Ok(Literal::Bool(true)));
        assert!(
            parse_scalar("2.5", Scalar::I32)
                .unwrap_err()
                .contains("is not an int32")
        );
        assert!(
            parse_scalar("3000000000", Scalar::I32)
                .unwrap_err()
                .contains("does not fit")
        );
        assert!(parse_scalar("yes", Scalar::Bool).is_err());
    }

    #[test]
    fn tolerance() {
        let t = Tolerance::default();
        let f = Literal::F32;
        assert!(t.agree(f(1.0), f(1.0 + f32::EPSILON * 100.0)));
        assert!(!t.agree(f(1.0), f(1.001)));
        assert!(t.agree(f(1e-7), f(-1e-7)), "absolute bound near zero");
        assert!(t.agree(f(f32::NAN), f(f32::NAN)));
        assert!(!t.agree(f(f32::INFINITY), f(f32::MAX)));
        assert!(!t.agree(f(1.0), f(f32::NAN)));
        assert!(!t.agree(Literal::I32(1), Literal::I32(2)));
        assert_eq!(ulps_f32(0.0, -0.0), 0);
        assert_eq!(ulps_f32(1.0, f32::from_bits(1.0f32.to_bits() + 3)), 3);
        assert_eq!(ulps_f32(-f32::from_bits(1), f32::from_bits(1)), 2);
        assert_eq!(ulps_f64(-1.0, -1.0 - f64::EPSILON), 1);
    }

    /// A kernel with one `shape vector` parameter, shape = Circle of float32 | Rect of
    /// float32 * float32 | Empty.
    fn shapes_kernel() -> (Kernel, Ty) {
        let mut b = sarek_compiler::ir::build::KernelBuilder::new("k");
        let shape = Ty::Variant(b.variant(
            "shape",
            &[
                ("Circle", vec![Ty::F32]),
                ("Rect", vec![Ty::F32, Ty::F32]),
                ("Empty", vec![]),
            ],
        ));
        b.vector("s", shape.clone());
        (b.finish(vec![]), shape)
    }

    #[test]
    fn variant_vectors_generate_and_compare_by_live_fields() {
        let (kernel, shape) = shapes_kernel();
        let v = seeded_vector(&kernel, &shape, 300, 42, 0);
        let Column::I32(tags) = &v.columns[0] else {
            panic!("tag column")
        };
        for t in 0..3 {
            assert!(
                tags.iter().filter(|&&x| x == t).count() > 50,
                "tags are uniform over 3"
            );
        }
        // Payload of the other constructors stays zero; the live one is drawn in [-1, 1).
        for (i, &t) in tags.iter().enumerate() {
            let get = |c: usize| match v.columns[c].get(i) {
                Literal::F32(x) => x,
                _ => unreachable!(),
            };
            if t != 0 {
                assert_eq!(get(1), 0.0);
            } else {
                assert!((-1.0..1.0).contains(&get(1)));
            }
            if t != 1 {
                assert_eq!((get(2), get(3)), (0.0, 0.0));
            }
        }
        // A difference in a dead payload field is not a mismatch; in a live one it is.
        let i = tags.iter().position(|&t| t == 2).unwrap();
        let mut dead = v.clone();
        dead.columns[1].set(i, Literal::F32(9.0));
        let tol = Tolerance::default();
        assert!(compare_vectors(&kernel, "s", &shape, &v, &dead, &tol).ok());
        let j = tags.iter().position(|&t| t == 1).unwrap();
        let mut live = v.clone();
        live.columns[3].set(j, Literal::F32(9.0));
        let c = compare_vectors(&kernel, "s", &shape, &v, &live, &tol);
        assert_eq!(c.mismatches, 1);
        let m = c.first.unwrap();
        assert_eq!((m.index, m.leaf.as_str()), (j, "Rect_1"));
        let args = build_args(&kernel, &Inputs::new(10, 1)).unwrap();
        assert!(matches!(&args[0], ArgValue::Vector(h) if h.len == 10 && h.columns.len() == 4));
    }

    /// A device whose every build fails with the error a backend would report.
    struct Failing(RuntimeError, crate::memory::DeviceCore);

    impl Device for Failing {
        fn info(&self) -> crate::device::DeviceInfo {
            crate::device::DeviceInfo {
                backend: Backend::Wgpu,
                name: "failing".into(),
                max_threads_per_block: 1024,
                subgroups: true,
                float64: true,
            }
        }
        fn core(&self) -> &crate::memory::DeviceCore {
            &self.1
        }
        fn layout_rules(&self) -> sarek_compiler::abi::LayoutRules {
            sarek_compiler::abi::LayoutRules::Std430
        }
        fn build(
            &self,
            _: &crate::kernel::KernelHandle,
        ) -> Result<crate::kernel::Built, RuntimeError> {
            Err(self.0.clone())
        }
        fn alloc(&self, bytes: usize) -> Result<Box<dyn crate::memory::Allocation>, RuntimeError> {
            Ok(Box::new(crate::memory::HostAllocation::new(bytes)?))
        }
        fn upload(&self, _: &crate::memory::Mem, _: &[u8]) -> Result<(), RuntimeError> {
            Err(self.0.clone())
        }
        fn download(&self, _: &crate::memory::Mem, _: &mut [u8]) -> Result<(), RuntimeError> {
            Err(self.0.clone())
        }
        fn dispatch(
            &self,
            _: &crate::kernel::Built,
            _: &crate::bind::LaunchPlan,
        ) -> Result<(), RuntimeError> {
            Err(self.0.clone())
        }
        fn sync(&self) -> Result<std::time::Duration, RuntimeError> {
            Ok(std::time::Duration::ZERO)
        }
    }

    #[test]
    fn a_compile_error_is_a_failure_and_a_refusal_is_not() {
        let src = "(* @run k size=8 n=8 *)\n\
                   let%kernel k (v : int32 vector) (n : int32) =\n  \
                   let i = global_thread_id in\n  if i < n then v.(i) <- i\n";
        let mut sources = sarek_compiler::SourceMap::new();
        let file = sources.add("k.sarek", src);
        let program = sarek_compiler::check(&sources, file).unwrap();
        let d = &parse_directives(src).unwrap()[0];
        let interp = crate::interp::open().unwrap();
        let outcome = |e: RuntimeError| {
            run_directive(
                &sources,
                &program,
                d,
                &*interp,
                &Failing(e, crate::memory::DeviceCore::new("failing".into())),
            )
        };

        let compile = outcome(RuntimeError::Compile(
            "wgpu rejected the generated WGSL: expected ':'".into(),
        ));
        assert!(
            matches!(&compile, Outcome::BackendError(m) if m.contains("rejected the generated")),
            "{compile:?}"
        );

        // `v` of `(v : ...)` on line 2: "let%kernel k (" is 14 characters, so column 15.
        let at = src.find("v : int32").unwrap();
        let diag = |msg: &str| {
            sarek_compiler::Diagnostic::error(sarek_compiler::Span::new(file, at, at + 1), msg)
        };
        let refusal = RuntimeError::refused(
            sarek_compiler::Target::Wgsl,
            "k",
            [diag("WGSL says no"), diag("WGSL says no")],
        );
        let refused = outcome(refusal);
        assert_eq!(
            refused,
            Outcome::Refused("k.sarek:2:15: WGSL says no".into())
        );

        let report = CorpusReport {
            backend: Backend::Wgpu,
            unavailable: None,
            entries: [compile, refused]
                .into_iter()
                .map(|outcome| CorpusEntry {
                    file: "k.sarek".into(),
                    kernel: "k".into(),
                    line: 1,
                    outcome,
                })
                .collect(),
        };
        let failures = report.failures();
        assert_eq!(failures.len(), 1);
        assert!(matches!(failures[0].outcome, Outcome::BackendError(_)));
    }

    /// `shapes_kernel` plus `point = { x; y }` and `item = { p : point; s : shape; k : int32 }`.
    fn values_kernel() -> (Kernel, Ty, Ty, Ty) {
        use sarek_compiler::ir::{Field, Record, RecordId};
        let (mut kernel, shape) = shapes_kernel();
        let point = Ty::Record(RecordId(0));
        let item = Ty::Record(RecordId(1));
        let field = |name: &str, ty: &Ty| Field {
            name: name.into(),
            ty: ty.clone(),
        };
        kernel.records = vec![
            Record {
                name: "point".into(),
                fields: vec![field("x", &Ty::F32), field("y", &Ty::F32)],
                is_tuple: false,
            },
            Record {
                name: "item".into(),
                fields: vec![field("p", &point), field("s", &shape), field("k", &Ty::I32)],
                is_tuple: false,
            },
        ];
        (kernel, shape, point, item)
    }

    #[test]
    fn variant_values_by_constructor_or_tag() {
        use Literal::{F32, I32};
        let (kernel, shape, _, _) = values_kernel();
        let parse = |t: &str| parse_value(&kernel, &shape, t);
        // Leaves: tag, Circle_0, Rect_0, Rect_1 (abi::leaves order).
        assert_eq!(
            parse("Rect,2.0,3"),
            Ok(vec![I32(1), F32(0.0), F32(2.0), F32(3.0)])
        );
        assert_eq!(
            parse(" Circle , 0.5"),
            Ok(vec![I32(0), F32(0.5), F32(0.0), F32(0.0)])
        );
        assert_eq!(
            parse("Empty"),
            Ok(vec![I32(2), F32(0.0), F32(0.0), F32(0.0)])
        );
        assert_eq!(
            parse("1,0,2,3"),
            Ok(vec![I32(1), F32(0.0), F32(2.0), F32(3.0)])
        );
        let e = parse("7,0,0,0").unwrap_err();
        assert_eq!(
            e,
            "tag 7 is out of range for shape (0 to 2: Circle, Rect, Empty)"
        );
        assert!(
            parse("-1,0,0,0")
                .unwrap_err()
                .contains("tag -1 is out of range")
        );
        let e = parse("Rectt,2,3").unwrap_err();
        assert_eq!(
            e,
            "`Rectt` is not a constructor of shape (Circle, Rect, Empty) nor a tag 0 to 2; \
             did you mean `Rect`?"
        );
        let e = parse("Rect,2").unwrap_err();
        assert_eq!(
            e,
            "too few values: constructor `Rect` takes 2 payload values (float32, float32), 1 given"
        );
        let e = parse("Empty,1,2").unwrap_err();
        assert_eq!(
            e,
            "too many values: constructor `Empty` takes no payload; `1,2` is left over"
        );
        assert!(
            parse("Circle,x")
                .unwrap_err()
                .contains("`x` is not a float32")
        );
        assert!(
            parse("1,0,2")
                .unwrap_err()
                .starts_with("too few values (3) for a shape")
        );
        assert_eq!(
            value_syntax(&kernel, &shape),
            "Circle,<float32> | Rect,<float32>,<float32> | Empty"
        );
    }

    #[test]
    fn record_values_positional_or_named() {
        use Literal::{F32, I32};
        let (kernel, _, point, item) = values_kernel();
        let p = |t: &str| parse_value(&kernel, &point, t);
        assert_eq!(p("1,2"), Ok(vec![F32(1.0), F32(2.0)]));
        assert_eq!(p("y=2,x=1"), Ok(vec![F32(1.0), F32(2.0)]));
        assert_eq!(
            p("x=1"),
            Err("point still needs field(s) `y` (FIELD=VALUE)".into())
        );
        assert_eq!(
            p("x=1,2"),
            Err("`2` is not FIELD=VALUE; point still needs field(s) `y`".into())
        );
        assert_eq!(
            p("xx=1,y=2"),
            Err("point has no field `xx` (its fields: x, y); did you mean `x`?".into())
        );
        assert_eq!(
            p("x=1,x=2"),
            Err("field `x` of point is given twice".into())
        );
        assert!(
            p("1,2,3")
                .unwrap_err()
                .starts_with("too many values: `3` is left over")
        );
        // Nested: a record, a variant and a scalar; leaves p_x p_y s_tag s_Circle_0 s_Rect_0
        // s_Rect_1 k.
        let want = vec![
            F32(1.0),
            F32(2.0),
            I32(1),
            F32(0.0),
            F32(4.0),
            F32(5.0),
            I32(6),
        ];
        let i = |t: &str| parse_value(&kernel, &item, t);
        assert_eq!(i("1,2,Rect,4,5,6"), Ok(want.clone()));
        assert_eq!(i("1,2,1,0,4,5,6"), Ok(want.clone()));
        assert_eq!(i("k=6,s=Rect,4,5,p=y=2,x=1"), Ok(want.clone()));
        assert_eq!(i("p=1,2,s=Rect,4,5,k=6"), Ok(want));
        assert_eq!(
            value_syntax(&kernel, &item),
            "<p.x:float32>,<p.y:float32>,<s:shape constructor>[,<payload>],<k:int32>"
        );
    }

    #[test]
    fn given_vectors_with_bad_tags_are_argument_errors() {
        let (kernel, shape) = shapes_kernel();
        let good = seeded_vector(&kernel, &shape, 50, 7, 0);
        let mut inputs = Inputs::new(50, 1);
        inputs.vectors = vec![("s".into(), good.clone())];
        assert!(build_args(&kernel, &inputs).is_ok());
        let mut bad = good;
        bad.columns[0].set(17, Literal::I32(3));
        inputs.vectors = vec![("s".into(), bad)];
        let e = build_args(&kernel, &inputs).unwrap_err().to_string();
        assert_eq!(
            e,
            "parameter `s` (shape vector), element 17: `tag` is 3, not a tag of shape \
             (0 to 2: Circle, Rect, Empty)"
        );
    }
}
