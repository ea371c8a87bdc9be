//! How a compiled kernel's parameters meet the runtime: element layouts and the ABI descriptor.
//!
//! Every vector element type flattens to an ordered list of scalar [`Leaf`]s (records: fields
//! in order, recursively; variants: the `tag` then every constructor's payload fields, each
//! named `<Ctor>_<k>`). The host keeps vectors as one column per leaf; a target packs them with
//! its [`ElemLayout`] (offset and stored width of each leaf, and the stride). Generators build
//! the descriptor from the same functions that emit their declarations, so the two cannot drift.

use crate::ir::{Kernel, Ty};
use crate::types::Scalar;

/// One scalar component of an element type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// `.npy` field name: `x`, `_0`, `tag`, `Rect_1`, `pos_x` (nested record fields are joined
    /// with `_`); empty for a scalar element.
    pub name: String,
    pub scalar: Scalar,
}

/// Flatten an IR element type into its leaves, in declaration order.
pub fn leaves(kernel: &Kernel, ty: &Ty) -> Vec<Leaf> {
    let mut out = Vec::new();
    push_leaves(kernel, ty, "", &mut out);
    out
}

fn push_leaves(kernel: &Kernel, ty: &Ty, prefix: &str, out: &mut Vec<Leaf>) {
    let join = |name: &str| {
        if prefix.is_empty() {
            name.to_string()
        } else {
            format!("{prefix}_{name}")
        }
    };
    match ty {
        Ty::Scalar(s) => out.push(Leaf {
            name: prefix.to_string(),
            scalar: *s,
        }),
        Ty::Record(id) => {
            for f in &kernel.record(*id).fields {
                push_leaves(kernel, &f.ty, &join(&f.name), out);
            }
        }
        Ty::Variant(id) => {
            out.push(Leaf {
                name: join("tag"),
                scalar: Scalar::I32,
            });
            for c in &kernel.variant(*id).ctors {
                for (k, f) in c.fields.iter().enumerate() {
                    push_leaves(kernel, f, &join(&format!("{}_{k}", c.name)), out);
                }
            }
        }
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => {}
    }
}

/// How a leaf is stored in device memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// The scalar's natural representation.
    Native(Scalar),
    /// A bool widened to a 32-bit integer (0 or 1): shader targets and C-family structs
    /// that use `int` for bool.
    BoolAsU32,
    /// A bool as one byte (C `bool`/`uchar`).
    BoolAsU8,
}

impl Stored {
    pub fn size(self) -> u32 {
        match self {
            Stored::Native(s) => s.size(),
            Stored::BoolAsU32 => 4,
            Stored::BoolAsU8 => 1,
        }
    }
}

/// Device layout of one element type for one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElemLayout {
    /// Byte distance between consecutive elements.
    pub stride: u32,
    /// Parallel to [`leaves`]: (byte offset within the element, storage).
    pub leaves: Vec<(u32, Stored)>,
}

/// Layout rules of a target family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayoutRules {
    /// C struct rules: each member at its natural alignment, struct aligned to its largest
    /// member, bool as `bool_repr`.
    C { bool_repr: Stored },
    /// std430 / WGSL storage rules: scalars at natural alignment (bool as u32), struct
    /// alignment the largest member's, array stride rounded up to the struct alignment.
    Std430,
}

/// Compute an element layout under `rules`. Records nest as structs; variants are a struct
/// `{ int tag; payload fields flattened }` on every target.
pub fn elem_layout(kernel: &Kernel, ty: &Ty, rules: LayoutRules) -> ElemLayout {
    let mut leaves = Vec::new();
    let (size, align) = layout_of(kernel, ty, rules, 0, &mut leaves);
    ElemLayout {
        stride: round_up(size, align),
        leaves,
    }
}

fn stored_of(s: Scalar, rules: LayoutRules) -> Stored {
    match (s, rules) {
        (Scalar::Bool, LayoutRules::C { bool_repr }) => bool_repr,
        (Scalar::Bool, LayoutRules::Std430) => Stored::BoolAsU32,
        (s, _) => Stored::Native(s),
    }
}

/// Returns (size, align) and appends leaf placements starting at `base`.
fn layout_of(
    kernel: &Kernel,
    ty: &Ty,
    rules: LayoutRules,
    base: u32,
    out: &mut Vec<(u32, Stored)>,
) -> (u32, u32) {
    match ty {
        Ty::Scalar(s) => {
            let st = stored_of(*s, rules);
            out.push((base, st));
            (st.size(), st.size())
        }
        Ty::Record(_) | Ty::Variant(_) => {
            let mut offset = 0u32;
            let mut align = 1u32;
            for m in members(kernel, ty) {
                let a = align_of(kernel, m, rules);
                offset = round_up(offset, a);
                let (s, _) = layout_of(kernel, m, rules, base + offset, out);
                offset += s;
                align = align.max(a);
            }
            (round_up(offset.max(1), align), align)
        }
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => (0, 1),
    }
}

/// The member types of a record, or of a variant's struct (`tag`, then every constructor's
/// fields), in layout order; empty for any other type.
fn members<'k>(kernel: &'k Kernel, ty: &Ty) -> impl Iterator<Item = &'k Ty> {
    const TAG: &Ty = &Ty::I32;
    let (record, variant) = match ty {
        Ty::Record(id) => (Some(kernel.record(*id)), None),
        Ty::Variant(id) => (None, Some(kernel.variant(*id))),
        _ => (None, None),
    };
    let record_fields = record
        .into_iter()
        .flat_map(|r| r.fields.iter().map(|f| &f.ty));
    let variant_fields = variant
        .into_iter()
        .flat_map(|v| std::iter::once(TAG).chain(v.ctors.iter().flat_map(|c| c.fields.iter())));
    record_fields.chain(variant_fields)
}

/// The alignment [`layout_of`] gives `ty`, without placing its leaves.
fn align_of(kernel: &Kernel, ty: &Ty, rules: LayoutRules) -> u32 {
    match ty {
        Ty::Scalar(s) => stored_of(*s, rules).size(),
        Ty::Record(_) | Ty::Variant(_) => members(kernel, ty)
            .map(|m| align_of(kernel, m, rules))
            .max()
            .unwrap_or(1),
        Ty::Unit | Ty::Vector(_) | Ty::Array { .. } => 1,
    }
}

pub fn round_up(x: u32, a: u32) -> u32 {
    x.div_ceil(a.max(1)) * a.max(1)
}

/// Where a kernel argument goes at launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgSlot {
    /// Positional kernel argument number `n` (C-family, PTX).
    Argument(u32),
    /// Byte offset in the uniform / push-constant block (WGSL, GLSL).
    Uniform { offset: u32 },
    /// Storage buffer binding (WGSL, GLSL).
    Binding { group: u32, binding: u32 },
    /// Not passed (e.g. a length the target does not need).
    None,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbiParamKind {
    /// A scalar, record or variant passed by value.
    Value { layout: ElemLayout, slot: ArgSlot },
    /// A vector: its buffer, and where its int32 length goes.
    Vector {
        elem: ElemLayout,
        buffer: ArgSlot,
        length: ArgSlot,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AbiParam {
    /// Source name of the kernel parameter.
    pub name: String,
    pub ty: Ty,
    pub kind: AbiParamKind,
}

/// Everything a runtime needs to launch one generated kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Abi {
    /// Entry point name in the generated source.
    pub entry_point: String,
    /// Parameters in source order.
    pub params: Vec<AbiParam>,
    /// Size in bytes of the uniform / push-constant block, if any.
    pub uniform_size: Option<u32>,
    /// Binding of the uniform block (WGSL/GLSL), if any.
    pub uniform_binding: Option<(u32, u32)>,
    /// True when the generated code has the block size baked in (`@workgroup_size`,
    /// `local_size_x`): the runtime must regenerate/recompile per block size.
    pub block_size_in_source: bool,
    /// Where the trap status word goes, when the kernel has traps ([`crate::ir::Trap`]):
    /// a buffer of one int32 the runtime zeroes before the launch and reads after it;
    /// non-zero is the code of a trap some thread reached.
    pub trap_status: Option<ArgSlot>,
}
