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

/// The WGSL tables live in [`crate::passes::reserved`] (keywords and reserved words, measured
/// against naga; predeclared names, escaped defensively: a local named `max` would hide the
/// built-in for the rest of its scope; families by prefix such as `atomic*`, `subgroup*`).
pub use crate::passes::reserved::{WGSL_KEYWORDS, WGSL_PREDECLARED, WGSL_PREFIXES, WGSL_RESERVED};

/// Module-scope names the generator emits with a fixed spelling outside the `sarek_` prefix:
/// the uniform block and its struct. A user variable `params` would otherwise hide the uniform.
pub const GENERATOR_FIXED: &[&str] = &["params", "Params"];

/// Whether `name` is reserved in WGSL or by this generator.
pub fn is_reserved(name: &str) -> bool {
    [
        WGSL_KEYWORDS,
        WGSL_RESERVED,
        WGSL_PREDECLARED,
        GENERATOR_FIXED,
    ]
    .iter()
    .any(|t| t.contains(&name))
        || WGSL_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The WGSL spelling of a source identifier (see the module docs for the rule).
pub fn escape(name: &str) -> Cow<'_, str> {
    // Names that are not WGSL identifiers at all (`x'`: type, field and constructor names are
    // not touched by legalize) get their own namespace `sarek_q_`, with `_` doubled and `'`
    // spelled `_x27`, so the encoding stays injective and never meets another escape's image.
    if name.contains('\'') {
        return Cow::Owned(format!(
            "{PREFIX}q_{}",
            name.replace('_', "__").replace('\'', "_x27")
        ));
    }
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
    "load", "store", "tag", "p", "pick", "arcsin", "arccos", "q", "trap",
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
            let prefixes: Vec<&str> = WGSL_PREFIXES
                .iter()
                .copied()
                .filter(|p| *p != PREFIX)
                .collect();
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
            assert!(!stem.starts_with('_') && !stem.starts_with(PREFIX));
            for p in &prefixes {
                assert!(
                    !stem.starts_with(p),
                    "minted stem `{stem}` is in the reserved family `{p}*`"
                );
            }
        }
    }
}
