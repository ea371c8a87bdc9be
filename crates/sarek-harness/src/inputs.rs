//! Deterministic inputs and a kernel's arguments from what the user wrote.
//!
//! - [`Rng`] and [`seeded_vector`]: inputs from (seed, parameter index), per the
//!   conventions: int32/int64 uniform in [0, 1000), float32/float64 uniform in [-1, 1), bool a
//!   fair coin, a variant a uniform tag then that constructor's payload by type, records and
//!   tuples field by field, element after element (a small splitmix64, no `rand` dependency,
//!   so the stream never changes under us);
//! - [`build_args`]: a kernel's arguments from its signature, `NAME=VALUE` strings and
//!   optional given vectors, with one clear error per problem.

use crate::directive::{DEFAULT_SEED, Directive};
use crate::value::{parse_scalar, parse_value, value_syntax};
use sarek_compiler::abi;
use sarek_compiler::host::{ArgValue, Column, HostVector, ParamKind, signature};
use sarek_compiler::ir::{Kernel, Ty};
use sarek_compiler::types::{Literal, Scalar};

/// A kernel's arguments could not be made from what was given (one clear message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgumentError(pub String);

/// With the runtime, a bad argument is the runtime's own [`Arguments`] error, so building
/// arguments and launching chain with `?`.
///
/// [`Arguments`]: sarek_runtime::RuntimeError::Arguments
#[cfg(feature = "devices")]
impl From<ArgumentError> for sarek_runtime::RuntimeError {
    fn from(e: ArgumentError) -> Self {
        sarek_runtime::RuntimeError::Arguments(e.0)
    }
}

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
pub fn build_args(kernel: &Kernel, inputs: &Inputs) -> Result<Vec<ArgValue>, ArgumentError> {
    let sig = signature(kernel);
    let err = |m: String| Err(ArgumentError(m));
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
                let v = parse_scalar(text, *s)
                    .map_err(|e| ArgumentError(format!("{hint}{}={text}: {e}", p.name)))?;
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
                    ArgumentError(format!(
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
                            ArgumentError(format!("parameter `{}` ({}), {e}", p.name, p.type_name))
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
            _ => {
                return err(format!(
                    "parameter `{}` of type {} cannot be given here",
                    p.name, p.type_name
                ));
            }
        };
        out.push(value);
    }
    Ok(out)
}
