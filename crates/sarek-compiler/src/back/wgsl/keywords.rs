//! Reserved names of WGSL: keywords and reserved words (measured against naga), predeclared
//! names (escaped defensively: a local named `max` would hide the built-in), families by
//! prefix, identifiers starting with `__` (§15.4.1), and the generator's fixed module names.

use crate::back::names::{Keywords, ReservedSet};

/// WGSL's reserved names. naga accepts identifiers of any length (5,000 characters tried).
pub static KEYWORDS: Keywords = Keywords {
    words: &[
        WGSL_KEYWORDS,
        WGSL_RESERVED,
        WGSL_PREDECLARED,
        GENERATOR_FIXED,
    ],
    prefixes: WGSL_PREFIXES,
    infixes: &[],
    max_len: None,
    reserved: ReservedSet::new(),
};

/// Module-scope names the generator emits with a fixed spelling outside the `sarek_` prefix:
/// the uniform block and its struct. A user variable `params` would otherwise hide the uniform.
pub const GENERATOR_FIXED: &[&str] = &["params", "Params"];

/// WGSL keywords (W3C WGSL, §15.2 "Keyword Summary"). Every entry is rejected by naga as a
/// variable name (tests/reserved_wgsl.rs re-runs the probe).
pub const WGSL_KEYWORDS: &[&str] = &[
    "alias",
    "break",
    "case",
    "const",
    "const_assert",
    "continue",
    "continuing",
    "default",
    "diagnostic",
    "discard",
    "else",
    "enable",
    "false",
    "fn",
    "for",
    "if",
    "let",
    "loop",
    "override",
    "requires",
    "return",
    "struct",
    "switch",
    "true",
    "var",
    "while",
];

/// WGSL reserved words (W3C WGSL, §15.3 "Reserved Words"). Plausible OCaml names such as
/// `ref`, `set`, `get`, `from`, `shared`, `filter`, `target` and `where` are among them. Every
/// entry is rejected by naga as a variable name (tests/reserved_wgsl.rs).
pub const WGSL_RESERVED: &[&str] = &[
    "NULL",
    "Self",
    "abstract",
    "active",
    "alignas",
    "alignof",
    "as",
    "asm",
    "asm_fragment",
    "async",
    "attribute",
    "auto",
    "await",
    "become",
    "cast",
    "catch",
    "class",
    "co_await",
    "co_return",
    "co_yield",
    "coherent",
    "column_major",
    "common",
    "compile",
    "compile_fragment",
    "concept",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "crate",
    "debugger",
    "decltype",
    "delete",
    "demote",
    "demote_to_helper",
    "do",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extends",
    "extern",
    "external",
    "fallthrough",
    "filter",
    "final",
    "finally",
    "friend",
    "from",
    "fxgroup",
    "get",
    "goto",
    "groupshared",
    "highp",
    "impl",
    "implements",
    "import",
    "inline",
    "instanceof",
    "interface",
    "layout",
    "lowp",
    "macro",
    "macro_rules",
    "match",
    "mediump",
    "meta",
    "mod",
    "module",
    "move",
    "mut",
    "mutable",
    "namespace",
    "new",
    "nil",
    "noexcept",
    "noinline",
    "nointerpolation",
    "non_coherent",
    "noncoherent",
    "noperspective",
    "null",
    "nullptr",
    "of",
    "operator",
    "package",
    "packoffset",
    "partition",
    "pass",
    "patch",
    "pixelfragment",
    "precise",
    "precision",
    "premerge",
    "priv",
    "protected",
    "pub",
    "public",
    "readonly",
    "ref",
    "regardless",
    "register",
    "reinterpret_cast",
    "require",
    "resource",
    "restrict",
    "self",
    "set",
    "shared",
    "sizeof",
    "smooth",
    "snorm",
    "static",
    "static_assert",
    "static_cast",
    "std",
    "subroutine",
    "super",
    "target",
    "template",
    "this",
    "thread_local",
    "throw",
    "trait",
    "try",
    "type",
    "typedef",
    "typeid",
    "typename",
    "typeof",
    "union",
    "unless",
    "unorm",
    "unsafe",
    "unsized",
    "use",
    "using",
    "varying",
    "virtual",
    "volatile",
    "wgsl",
    "where",
    "with",
    "writeonly",
    "yield",
];

/// WGSL predeclared names (§16 types, §17 enumerants, attributes, built-in functions). WGSL
/// accepts them as user identifiers (they are shadowable, naga accepts `var i32 : i32;`), so
/// escaping them is defensive: a local named `f32` would make `f32` unusable as a type in its
/// scope, and one named `max` would hide the built-in.
pub const WGSL_PREDECLARED: &[&str] = &[
    "bool",
    "f16",
    "f32",
    "f64",
    "i32",
    "i64",
    "u32",
    "u64",
    "vec2",
    "vec3",
    "vec4",
    "mat2x2",
    "mat2x3",
    "mat2x4",
    "mat3x2",
    "mat3x3",
    "mat3x4",
    "mat4x2",
    "mat4x3",
    "mat4x4",
    "array",
    "atomic",
    "ptr",
    "sampler",
    "sampler_comparison",
    "function",
    "private",
    "workgroup",
    "uniform",
    "storage",
    "read",
    "write",
    "read_write",
    "align",
    "binding",
    "builtin",
    "compute",
    "fragment",
    "group",
    "id",
    "interpolate",
    "invariant",
    "location",
    "must_use",
    "size",
    "vertex",
    "workgroup_size",
    "abs",
    "acos",
    "acosh",
    "all",
    "any",
    "arrayLength",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "bitcast",
    "ceil",
    "clamp",
    "cos",
    "cosh",
    "countLeadingZeros",
    "countOneBits",
    "countTrailingZeros",
    "cross",
    "degrees",
    "determinant",
    "distance",
    "dot",
    "exp",
    "exp2",
    "extractBits",
    "faceForward",
    "firstLeadingBit",
    "firstTrailingBit",
    "floor",
    "fma",
    "fract",
    "frexp",
    "insertBits",
    "inverseSqrt",
    "ldexp",
    "length",
    "log",
    "log2",
    "max",
    "min",
    "mix",
    "modf",
    "normalize",
    "pow",
    "quantizeToF16",
    "radians",
    "reflect",
    "refract",
    "reverseBits",
    "round",
    "saturate",
    "select",
    "sign",
    "sin",
    "sinh",
    "smoothstep",
    "sqrt",
    "step",
    "tan",
    "tanh",
    "transpose",
    "trunc",
    "storageBarrier",
    "workgroupBarrier",
    "workgroupUniformLoad",
    "main",
    "params",
];

/// WGSL families: `atomic*`, `subgroup*`, `texture*`, `pack*`/`unpack*` built-ins, names
/// starting with `__` (§15.4.1), and the generator's own `sarek_` namespace (seed 002).
pub const WGSL_PREFIXES: &[&str] = &[
    "atomic", "subgroup", "texture", "pack", "unpack", "__", "sarek_",
];

/// Stems of the names the generator mints: `sarek_<stem>`, `sarek_<stem>_<rest>` or
/// `sarek_<stem><digits>_<rest>`. No reserved word may have one of those shapes (checked by a
/// test), or an escaped source name could equal a minted one.
#[rustfmt::skip]
pub const MINTED_STEMS: &[&str] = &[
    "len", "arg", "wg", "v", "dup", "in", "lid", "wid", "gid", "nwg", "sg", "block", "it", "scrut",
    "fmod", "round_away", "copysign", "expm1", "log1p", "log10", "hypot", "cas", "fatomic", "st",
    "load", "store", "tag", "p", "pick", "arcsin", "arccos", "arctan2", "q", "trap",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_words_are_never_escape_images() {
        let prefixes: Vec<&str> = WGSL_PREFIXES
            .iter()
            .copied()
            .filter(|p| *p != "sarek_")
            .collect();
        for stem in MINTED_STEMS {
            for t in [
                WGSL_KEYWORDS,
                WGSL_RESERVED,
                WGSL_PREDECLARED,
                GENERATOR_FIXED,
                &prefixes,
            ] {
                for r in t.iter() {
                    let rest = r.strip_prefix(stem);
                    let clash = rest.is_some_and(|rest| {
                        rest.is_empty()
                            || rest.starts_with('_')
                            || rest.starts_with(|c: char| c.is_ascii_digit())
                    });
                    assert!(
                        !clash,
                        "reserved `{r}` has the shape of a minted `sarek_{stem}` name"
                    );
                }
            }
            assert!(!stem.starts_with('_') && !stem.starts_with("sarek_"));
            for p in &prefixes {
                assert!(
                    !stem.starts_with(p),
                    "minted stem `{stem}` is in the reserved family `{p}*`"
                );
            }
        }
    }
}
