//! The `sarek run` conventions, ported from `sarek_runtime::harness` so that this crate
//! depends on the compiler only (the runtime pulls rayon and the GPU crates, none of which
//! belong in a browser module):
//!
//! - [`parse_directives`]: the corpus' `(* @run ... *)` launches;
//! - [`Rng`] and [`seeded_vector`]: the seeded input generator, the same splitmix64 stream
//!   per (seed, parameter index), so the playground's inputs equal `sarek run`'s element by
//!   element (`tests/harness_parity.rs` checks this against the runtime's own generator);
//! - [`parse_scalar`] and [`parse_value`]: `NAME=VALUE` arguments, with the CLI's messages;
//! - [`build_args`]: a kernel's arguments from its signature.
//!
//! The code is the runtime's, kept line for line where possible so a change there is easy to
//! carry over; only the host vector type differs ([`Column`] here).

use sarek_compiler::abi;
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::{Literal, Scalar};

/// The seed used when none is given (`sarek run --seed`, corpus directives).
pub const DEFAULT_SEED: u64 = 42;
/// The vector length used when none is given.
pub const DEFAULT_SIZE: usize = 1024;

/// A launch: blocks in the grid and threads per block (as the runtime's `LaunchConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
}

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
// Host values

/// One leaf of a vector, for every element.
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

    /// Store `value` (which must have this column's scalar type) at `i`; the generator and
    /// the decoder only store matching literals, so a mismatch is a bug and is ignored
    /// rather than trapping the module.
    pub fn set(&mut self, i: usize, value: Literal) {
        match (self, value) {
            (Column::Bool(v), Literal::Bool(x)) => v[i] = x,
            (Column::I32(v), Literal::I32(x)) => v[i] = x,
            (Column::I64(v), Literal::I64(x)) => v[i] = x,
            (Column::F32(v), Literal::F32(x)) => v[i] = x,
            (Column::F64(v), Literal::F64(x)) => v[i] = x,
            _ => debug_assert!(false, "column type mismatch"),
        }
    }
}

/// A vector as one column per scalar leaf of its element type.
#[derive(Clone, Debug, PartialEq)]
pub struct HostVector {
    pub len: usize,
    pub columns: Vec<Column>,
}

impl HostVector {
    pub fn zeros(leaves: &[abi::Leaf], len: usize) -> HostVector {
        HostVector {
            len,
            columns: leaves
                .iter()
                .map(|l| Column::zeros(l.scalar, len))
                .collect(),
        }
    }
}

/// A kernel argument.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgValue {
    Scalar(Literal),
    /// A record, tuple or variant by value: its leaves.
    Aggregate(Vec<Literal>),
    Vector(HostVector),
}

// ---------------------------------------------------------------------------------------
// Signatures and arguments

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

/// Build the arguments of `kernel`: scalars and by-value aggregates from `args`
/// (`NAME=VALUE`), every vector from the seeded generator with `size` elements. The messages
/// are the CLI's (`build_args` in the runtime), with `hint` in front of `NAME=VALUE` where
/// the CLI writes `--arg `.
///
/// `vectors` are given vectors by parameter name (typed in the page, where the CLI reads
/// `.npy` files); they are used as they are, whatever `size` says.
pub fn build_args(
    kernel: &Kernel,
    size: usize,
    seed: u64,
    args: &[(String, String)],
    vectors: &[(String, HostVector)],
    hint: &str,
) -> Result<Vec<ArgValue>, String> {
    let names: Vec<&str> = kernel
        .params
        .iter()
        .map(|&p| kernel.var(p).name.as_str())
        .collect();
    let unknown = |name: &str| {
        let suggestion = sarek_compiler::diag::closest(name, names.iter().copied())
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        format!(
            "kernel `{}` has no parameter `{name}`{suggestion}",
            kernel.name
        )
    };
    for (i, (name, _)) in args.iter().enumerate() {
        let Some(&p) = kernel.params.iter().find(|&&p| &kernel.var(p).name == name) else {
            return Err(unknown(name));
        };
        if args[..i].iter().any(|(n, _)| n == name) {
            return Err(format!("parameter `{name}` is given twice"));
        }
        let ty = &kernel.var(p).ty;
        if let Ty::Vector(_) = ty {
            return Err(format!(
                "parameter `{name}` is a vector ({}); vectors are generated",
                type_name(kernel, ty)
            ));
        }
    }
    for (name, _) in vectors {
        let Some(&p) = kernel.params.iter().find(|&&p| &kernel.var(p).name == name) else {
            return Err(unknown(name));
        };
        let ty = &kernel.var(p).ty;
        if !matches!(ty, Ty::Vector(_)) {
            return Err(format!(
                "parameter `{name}` is not a vector ({}); give it as {hint}{name}=VALUE",
                type_name(kernel, ty)
            ));
        }
    }
    let mut out = Vec::with_capacity(kernel.params.len());
    for (index, &id) in kernel.params.iter().enumerate() {
        let v = kernel.var(id);
        let tn = type_name(kernel, &v.ty);
        let given = args
            .iter()
            .find(|(n, _)| n == &v.name)
            .map(|(_, t)| t.as_str());
        let value = match &v.ty {
            Ty::Scalar(s) => {
                let Some(text) = given else {
                    return Err(format!(
                        "missing value for scalar parameter `{}` of type {tn} (give it as {hint}{}=VALUE)",
                        v.name, v.name
                    ));
                };
                ArgValue::Scalar(
                    parse_scalar(text, *s).map_err(|e| format!("{hint}{}={text}: {e}", v.name))?,
                )
            }
            Ty::Vector(elem) => match vectors.iter().find(|(n, _)| n == &v.name) {
                Some((_, given)) => ArgValue::Vector(given.clone()),
                None => ArgValue::Vector(seeded_vector(kernel, elem, size, seed, index)),
            },
            other => {
                let Some(text) = given else {
                    return Err(format!(
                        "missing value for parameter `{}` of type {tn} (give it as {hint}{}={})",
                        v.name,
                        v.name,
                        value_syntax(kernel, other)
                    ));
                };
                let vals = parse_value(kernel, other, text).map_err(|e| {
                    format!(
                        "{hint}{}={text} (parameter `{} : {tn}`): {e}",
                        v.name, v.name
                    )
                })?;
                ArgValue::Aggregate(vals)
            }
        };
        out.push(value);
    }
    Ok(out)
}

/// A vector of scalars typed as text: its values separated by commas or white space, each
/// read as [`parse_scalar`] reads a scalar argument. Vectors of records, tuples and variants
/// are generated only (their `.npy` columns have no one-line spelling).
pub fn typed_vector(kernel: &Kernel, name: &str, text: &str) -> Result<HostVector, String> {
    let Some(&p) = kernel.params.iter().find(|&&p| kernel.var(p).name == name) else {
        return Err(format!(
            "kernel `{}` has no parameter `{name}`",
            kernel.name
        ));
    };
    let ty = &kernel.var(p).ty;
    let Ty::Vector(elem) = ty else {
        return Err(format!(
            "parameter `{name}` is not a vector ({})",
            type_name(kernel, ty)
        ));
    };
    let Ty::Scalar(scalar) = **elem else {
        return Err(format!(
            "vector `{name}` ({}): only vectors of scalars take typed values; this one is generated",
            type_name(kernel, ty)
        ));
    };
    let words: Vec<&str> = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    let mut column = Column::zeros(scalar, words.len());
    for (i, w) in words.iter().enumerate() {
        let v =
            parse_scalar(w, scalar).map_err(|e| format!("vector `{name}`, element {i}: {e}"))?;
        column.set(i, v);
    }
    Ok(HostVector {
        len: words.len(),
        columns: vec![column],
    })
}
