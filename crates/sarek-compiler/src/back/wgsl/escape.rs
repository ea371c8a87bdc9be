//! Identifier escaping for WGSL (seed 002): one unconditional, injective rule.
//!
//! A source name becomes `sarek_<name>` when it is reserved (a WGSL keyword or reserved word,
//! a predeclared type or built-in function, or one of the generator's fixed module names),
//! when it is not usable as written (`_`, a leading `__`), or when it already starts with
//! `sarek_`; every other name is emitted unchanged.
//!
//! Injectivity, by cases: the escaping branch only emits names starting with `sarek_`; the
//! identity branch only emits names that do not (such a name would have been escaped); the two
//! images are disjoint and each branch is injective on its own. So `__i`/`sarek__i`, `_`/`sarek_`
//! and `if`/`ifv` stay distinct (`sarek___i`/`sarek_sarek__i`, `sarek__`/`sarek_sarek_`,
//! `sarek_if`/`ifv`).
//!
//! Names the generator mints itself (`sarek_len_x`, `sarek_wg_tile`, `sarek_fmod`, ...) are
//! built in final form and never pass through [`escape`]. They live in the `sarek_` namespace
//! under a second word that is never reserved (checked by a test), so no escaped source name can
//! equal one: `escape(u) == "sarek_len_x"` would need `u == "len_x"`, which is not escaped.

use std::borrow::Cow;

/// The prefix the escaping rule reserves in full.
pub const PREFIX: &str = "sarek_";

/// WGSL keywords (WGSL §15.1): hard parse errors as identifiers.
#[rustfmt::skip]
pub const KEYWORDS: &[&str] = &[
    "alias", "break", "case", "const", "const_assert", "continue", "continuing", "default",
    "diagnostic", "discard", "else", "enable", "false", "fn", "for", "if", "let", "loop",
    "override", "requires", "return", "struct", "switch", "true", "var", "while",
];

/// WGSL reserved words (WGSL §15.2): hard parse errors as identifiers. Plausible OCaml names
/// such as `ref`, `set`, `get`, `from`, `shared`, `filter`, `target`, `where` and `mod` are here.
#[rustfmt::skip]
pub const RESERVED_WORDS: &[&str] = &[
    "NULL", "Self", "abstract", "active", "alignas", "alignof", "as", "asm", "asm_fragment",
    "async", "attribute", "auto", "await", "become", "cast", "catch", "class", "co_await",
    "co_return", "co_yield", "coherent", "column_major", "common", "compile", "compile_fragment",
    "concept", "const_cast", "consteval", "constexpr", "constinit", "crate", "debugger",
    "decltype", "delete", "demote", "demote_to_helper", "do", "dynamic_cast", "enum", "explicit",
    "export", "extends", "extern", "external", "fallthrough", "filter", "final", "finally",
    "friend", "from", "fxgroup", "get", "goto", "groupshared", "highp", "impl", "implements",
    "import", "inline", "instanceof", "interface", "layout", "lowp", "macro", "macro_rules",
    "match", "mediump", "meta", "mod", "module", "move", "mut", "mutable", "namespace", "new",
    "nil", "noexcept", "noinline", "nointerpolation", "non_coherent", "noncoherent",
    "noperspective", "null", "nullptr", "of", "operator", "package", "packoffset", "partition",
    "pass", "patch", "pixelfragment", "precise", "precision", "premerge", "priv", "protected",
    "pub", "public", "readonly", "ref", "regardless", "register", "reinterpret_cast", "require",
    "resource", "restrict", "self", "set", "shared", "sizeof", "smooth", "snorm", "static",
    "static_assert", "static_cast", "std", "subroutine", "super", "target", "template", "this",
    "thread_local", "throw", "trait", "try", "type", "typedef", "typeid", "typename", "typeof",
    "union", "unless", "unorm", "unsafe", "unsized", "use", "using", "varying", "virtual",
    "volatile", "wgsl", "where", "with", "writeonly", "yield",
];

/// Predeclared names: WGSL accepts them as identifiers (they are shadowable), so escaping them
/// is defensive rather than mandatory. It matters for built-in functions: a local named `max`
/// would hide `max(a, b)` for the rest of its scope, and a local named `f32` the type.
#[rustfmt::skip]
pub const PREDECLARED: &[&str] = &[
    // types and type generators
    "bool", "i32", "u32", "f32", "f16", "i64", "u64", "f64", "array", "atomic", "vec2", "vec3",
    "vec4", "mat2x2", "mat2x3", "mat2x4", "mat3x2", "mat3x3", "mat3x4", "mat4x2", "mat4x3",
    "mat4x4", "ptr", "sampler", "sampler_comparison", "texture_1d", "texture_2d",
    "texture_2d_array", "texture_3d", "texture_cube", "texture_cube_array",
    "texture_multisampled_2d", "texture_depth_multisampled_2d", "texture_external",
    "texture_storage_1d", "texture_storage_2d", "texture_storage_2d_array", "texture_storage_3d",
    "texture_depth_2d", "texture_depth_2d_array", "texture_depth_cube", "texture_depth_cube_array",
    // address spaces, access modes
    "read", "write", "read_write", "function", "private", "workgroup", "uniform", "storage",
    "push_constant",
    // built-in functions
    "bitcast", "all", "any", "select", "arrayLength", "abs", "acos", "acosh", "asin", "asinh",
    "atan", "atanh", "atan2", "ceil", "clamp", "cos", "cosh", "countLeadingZeros", "countOneBits",
    "countTrailingZeros", "cross", "degrees", "determinant", "distance", "dot", "exp", "exp2",
    "extractBits", "faceForward", "firstLeadingBit", "firstTrailingBit", "floor", "fma", "fract",
    "frexp", "insertBits", "inverseSqrt", "ldexp", "length", "log", "log2", "max", "min", "mix",
    "modf", "normalize", "pow", "quantizeToF16", "radians", "reflect", "refract", "reverseBits",
    "round", "saturate", "sign", "sin", "sinh", "smoothstep", "sqrt", "step", "tan", "tanh",
    "transpose", "trunc", "atomicLoad", "atomicStore", "atomicAdd", "atomicSub", "atomicMax",
    "atomicMin", "atomicAnd", "atomicOr", "atomicXor", "atomicExchange",
    "atomicCompareExchangeWeak", "storageBarrier", "workgroupBarrier", "workgroupUniformLoad",
    "subgroupAll", "subgroupAny", "subgroupBallot", "subgroupShuffle", "subgroupShuffleDown",
    "subgroupShuffleUp", "subgroupShuffleXor", "subgroupBroadcast",
];

/// Module-scope names the generator emits with a fixed spelling outside the `sarek_` prefix:
/// the uniform block and its struct. A user variable `params` would otherwise hide the uniform.
pub const GENERATOR_FIXED: &[&str] = &["params", "Params"];

/// Whether `name` is in one of the tables above.
pub fn is_reserved(name: &str) -> bool {
    [KEYWORDS, RESERVED_WORDS, PREDECLARED, GENERATOR_FIXED]
        .iter()
        .any(|t| t.contains(&name))
}

/// The WGSL spelling of a source identifier (see the module docs for the rule).
pub fn escape(name: &str) -> Cow<'_, str> {
    if name == "_" || name.starts_with("__") || name.starts_with(PREFIX) || is_reserved(name) {
        Cow::Owned(format!("{PREFIX}{name}"))
    } else {
        Cow::Borrowed(name)
    }
}

/// Stems of the names the generator mints: `sarek_<stem>`, `sarek_<stem>_<rest>` or
/// `sarek_<stem><digits>_<rest>`. No reserved word may have one of those shapes (checked by a
/// test), or an escaped source name could equal a minted one.
#[rustfmt::skip]
pub const MINTED_STEMS: &[&str] = &[
    "len", "arg", "wg", "v", "dup", "in", "lid", "wid", "gid", "nwg", "sg", "block", "it", "scrut",
    "fmod", "round_away", "copysign", "expm1", "log1p", "log10", "hypot", "cas", "fatomic", "st",
    "load", "store", "tag", "p", "pick",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injective_on_the_seed_families() {
        let names = [
            "__i", "sarek__i", "_", "sarek_", "if", "ifv", "sarek_if", "x", "params",
        ];
        let escaped: Vec<_> = names.iter().map(|n| escape(n).into_owned()).collect();
        let mut sorted = escaped.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{escaped:?}");
        assert_eq!(escape("__i"), "sarek___i");
        assert_eq!(escape("sarek__i"), "sarek_sarek__i");
        assert_eq!(escape("_"), "sarek__");
        assert_eq!(escape("if"), "sarek_if");
        assert_eq!(escape("ifv"), "ifv");
    }

    #[test]
    fn minted_words_are_never_escape_images() {
        for stem in MINTED_STEMS {
            for t in [KEYWORDS, RESERVED_WORDS, PREDECLARED, GENERATOR_FIXED] {
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
            assert!(!stem.starts_with('_') && !stem.starts_with(PREFIX));
        }
    }
}
