//! One namer for every target, in the style of naga's `proc::Namer`.
//!
//! Each target declares what it reserves in `back/<target>/keywords.rs` as a [`Keywords`]
//! value. A [`Namer`] holds one generation's names (that target's reserved set and every
//! spelling taken so far) and spells a name one of three ways:
//! - [`Namer::escape`]: a source name the target must keep (shader parameters bound by name,
//!   fields, constructors, type and entry names), by one injective rule;
//! - [`Namer::fresh`]: a new `<base>_<k>`, the smallest `k >= 1` that no taken or reserved
//!   name uses (seed 000's scheme: legalize's renames);
//! - [`Namer::claim`]: a preferred spelling if it is free, else a fresh one.
//!
//! [`Namer::fit`] keeps a spelling within the target's identifier length (GLSL: 1,024), and
//! [`Namer::segment`] (escape, then fit to half the limit less room for what a generator adds)
//! is what a generator composes its own names from, so a composed name fits too.

use crate::hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use crate::target::Target;
use std::borrow::Cow;
use std::sync::OnceLock;

/// What a target reserves: whole words, families by prefix, substrings, and the longest
/// identifier its compiler accepts.
#[derive(Debug)]
pub struct Keywords {
    pub words: &'static [&'static [&'static str]],
    pub prefixes: &'static [&'static str],
    /// Reserved wherever they occur in a name (GLSL: `__`).
    pub infixes: &'static [&'static str],
    pub max_len: Option<usize>,
    /// `words` as a set, built on first use: a function of the constant lists, so every
    /// generation shares it instead of hashing a thousand words again.
    pub reserved: ReservedSet,
}

/// The lazily built set of a [`Keywords`] value's words.
#[derive(Debug)]
pub struct ReservedSet(OnceLock<HashSet<&'static str>>);

impl ReservedSet {
    pub const fn new() -> ReservedSet {
        ReservedSet(OnceLock::new())
    }
}

impl Default for ReservedSet {
    fn default() -> Self {
        ReservedSet::new()
    }
}

/// Nothing reserved (the IR printer).
pub static NO_KEYWORDS: Keywords = Keywords {
    words: &[],
    prefixes: &[],
    infixes: &[],
    max_len: None,
    reserved: ReservedSet::new(),
};

impl Keywords {
    /// The reserved names of `target`.
    pub fn of(target: Target) -> &'static Keywords {
        use crate::back::{cfamily, glsl, ptx, wgsl};
        match target {
            Target::Ir => &NO_KEYWORDS,
            Target::Wgsl => &wgsl::keywords::KEYWORDS,
            Target::Glsl => &glsl::keywords::KEYWORDS,
            Target::OpenCl => &cfamily::keywords::OPENCL,
            Target::Cuda => &cfamily::keywords::CUDA,
            Target::Metal => &cfamily::keywords::METAL,
            Target::Ptx => &ptx::keywords::KEYWORDS,
        }
    }

    /// Every reserved whole word, as a set.
    fn words(&'static self) -> &'static HashSet<&'static str> {
        self.reserved
            .0
            .get_or_init(|| self.words.iter().copied().flatten().copied().collect())
    }
}

/// `[A-Za-z_][A-Za-z0-9_]*`, and not a lone `_` (WGSL's phony-assignment target): the
/// identifiers every target accepts lexically. Names with `'` (legal in OCaml) are not.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    name != "_" && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The prefix [`Namer::escape`] reserves in full; every escaping target's keywords reserve it.
pub const ESCAPE_PREFIX: &str = "sarek_";

/// Room a generator may add around one or two [`Namer::segment`]s (`sarek_mk_`, `_len`, ...).
const MINTED_ROOM: usize = 64;

/// One generation's names; a name it only avoids may be borrowed for `'a` (a kernel's).
pub struct Namer<'a> {
    keywords: &'static Keywords,
    /// `keywords.words` as a set.
    reserved: &'static HashSet<&'static str>,
    taken: HashSet<Cow<'a, str>>,
    /// Per base of [`Namer::fresh`], the first suffix worth trying: every smaller one was
    /// taken or reserved when last tried, and stays so (names are only ever added).
    next_suffix: HashMap<String, usize>,
    /// Spellings over the length limit and their shortened forms, in order of first use.
    cuts: HashMap<(usize, String), String>,
}

impl<'a> Namer<'a> {
    pub fn new(keywords: &'static Keywords) -> Namer<'a> {
        Namer {
            keywords,
            reserved: keywords.words(),
            taken: HashSet::default(),
            next_suffix: HashMap::default(),
            cuts: HashMap::default(),
        }
    }

    /// A namer for another namespace of the same target (a struct's members): same reserved
    /// names, nothing taken.
    pub fn sibling(&self) -> Namer<'a> {
        Namer {
            keywords: self.keywords,
            reserved: self.reserved,
            taken: HashSet::default(),
            next_suffix: HashMap::default(),
            cuts: HashMap::default(),
        }
    }

    /// Whether the target reserves `name`.
    pub fn is_reserved(&self, name: &str) -> bool {
        self.reserved.contains(name)
            || self.keywords.prefixes.iter().any(|p| name.starts_with(p))
            || self.keywords.infixes.iter().any(|i| name.contains(i))
    }

    /// Whether `name` is an identifier the target accepts and nothing has taken.
    fn is_free(&self, name: &str) -> bool {
        !self.taken.contains(name) && is_identifier(name) && !self.is_reserved(name)
    }

    /// Room for `additional` more taken names (a caller about to avoid a kernel's names).
    pub fn reserve(&mut self, additional: usize) {
        self.taken.reserve(additional);
    }

    /// Room for up to `count` [`Namer::fresh`] names of distinct bases (a caller about to
    /// rename that many binders): both tables grew from empty, rehashing, on every target.
    pub fn reserve_fresh(&mut self, count: usize) {
        self.taken.reserve(count);
        self.next_suffix.reserve(count);
    }

    /// Mark `name` as taken: fresh and claimed names avoid it from now on.
    pub fn avoid(&mut self, name: &str) {
        if !self.taken.contains(name) {
            self.taken.insert(Cow::Owned(name.to_string()));
        }
    }

    /// [`Self::avoid`] of a name that outlives the namer, not copied.
    pub fn avoid_borrowed(&mut self, name: &'a str) {
        self.taken.insert(Cow::Borrowed(name));
    }

    /// Whether `name` has been taken.
    pub fn is_taken(&self, name: &str) -> bool {
        self.taken.contains(name)
    }

    /// `spelled` (already a target spelling: escaped or minted) when nothing has taken it,
    /// else `<spelled>_<k>` with the smallest `k >= 1` free; now taken.
    pub fn unique(&mut self, spelled: String) -> String {
        let mut name = spelled.clone();
        let mut k = 1;
        while self.taken.contains(name.as_str()) {
            name = format!("{spelled}_{k}");
            k += 1;
        }
        self.taken.insert(Cow::Owned(name.clone()));
        name
    }

    /// `preferred` when it is free (then taken), else [`Namer::fresh`] of it.
    pub fn claim(&mut self, preferred: &str) -> String {
        if self.is_free(preferred) {
            self.taken.insert(Cow::Owned(preferred.to_string()));
            return preferred.to_string();
        }
        self.fresh(preferred)
    }

    /// A new name `<base>_<k>` for `name` (the smallest `k >= 1` free), now taken. `base` is
    /// [`stem`]`(name)`; when the target reserves a whole family the base belongs to
    /// (`get_*`), the base becomes `v_<base>`, then `v`.
    pub fn fresh(&mut self, name: &str) -> String {
        self.fresh_avoiding(name, 0, |_| false)
    }

    /// [`Self::fresh`], also avoiding the `count` names for which `also_taken` holds, which
    /// the namer does not copy (legalize's view of the kernel's original names).
    pub fn fresh_avoiding(
        &mut self,
        name: &str,
        count: usize,
        also_taken: impl Fn(&str) -> bool,
    ) -> String {
        let base = stem(name);
        // At most `taken.len() + count` candidates of one base are taken: past that bound,
        // every candidate was refused as reserved, so the base is in a reserved family.
        let bound = self.taken.len() + count + 64;
        // One buffer for every candidate (`v_<base>_<k>` at most): no `String` per family.
        let mut candidate = String::with_capacity(base.len() + 24);
        for family in 0..3 {
            candidate.clear();
            match family {
                0 => candidate.push_str(&base),
                1 => {
                    candidate.push_str("v_");
                    candidate.push_str(&base);
                }
                _ => candidate.push('v'),
            }
            let base_len = candidate.len();
            let start = self.next_suffix.get(candidate.as_str()).copied();
            candidate.push('_');
            // A family whose every candidate is reserved (`sampler_` in GLSL's `sampler*`) is
            // skipped at once: probing it to the bound cost about a hundred lookups.
            if self
                .keywords
                .prefixes
                .iter()
                .any(|p| candidate.starts_with(p))
                || self.keywords.infixes.iter().any(|i| candidate.contains(i))
            {
                continue;
            }
            let stem_len = candidate.len();
            let first = start.unwrap_or(1);
            for k in first..=first + bound {
                candidate.truncate(stem_len);
                push_decimal(&mut candidate, k);
                if self.is_free(&candidate) && !also_taken(&candidate) {
                    let b = &candidate[..base_len];
                    match self.next_suffix.get_mut(b) {
                        Some(next) => *next = k + 1,
                        None => {
                            self.next_suffix.insert(b.to_string(), k + 1);
                        }
                    }
                    self.taken.insert(Cow::Owned(candidate.clone()));
                    return candidate;
                }
            }
        }
        unreachable!("the keywords of a target reserve every `v_<k>`")
    }

    /// The target's spelling of a source name it must keep, by one injective rule:
    /// - an identifier the target does not reserve is itself;
    /// - a reserved identifier is `sarek_<name>` (the targets that escape reserve `sarek_*`,
    ///   so a source name already in that namespace is escaped too);
    /// - anything else (`x'`) is `sarek_q` followed by the name with letters and digits kept,
    ///   other ASCII (`_` and `'` included) as `_x<2 hex digits>`, other characters as
    ///   `_u<6 hex digits>`.
    ///
    /// The three images are disjoint: the first never starts with `sarek_`, and a quoted
    /// spelling never contains `__` (every `_` starts an escape, which continues with `x` or
    /// `u`), so it is not `sarek_` + a reserved word even where GLSL reserves every name with
    /// `__` (no target keyword starts with `q` followed by such a spelling). Each branch is
    /// injective, so the rule is.
    pub fn escape(&self, name: &str) -> String {
        if is_identifier(name) {
            if self.is_reserved(name) {
                return format!("{ESCAPE_PREFIX}{name}");
            }
            return name.to_string();
        }
        let mut out = format!("{ESCAPE_PREFIX}q");
        for c in name.chars() {
            match c {
                c if c.is_ascii_alphanumeric() => out.push(c),
                c if c.is_ascii() => out.push_str(&format!("_x{:02x}", c as u32)),
                c => out.push_str(&format!("_u{:06x}", c as u32)),
            }
        }
        out
    }

    /// `spelled` when the target accepts its length, else a shortened form: `sarek_cut<k>_`
    /// and as much of `spelled` as fits, `k` numbering the distinct long spellings of this
    /// generation (so the same spelling always gets the same form, and two never share one).
    /// No escaped or minted name starts with `sarek_cut<digits>_`.
    pub fn fit(&mut self, spelled: String) -> String {
        match self.keywords.max_len {
            Some(max) => self.fit_to(spelled, max),
            None => spelled,
        }
    }

    /// [`Namer::escape`] of `name`, shortened so that a generator may put up to two of them
    /// and 64 characters of its own into one identifier.
    pub fn segment(&mut self, name: &str) -> String {
        let escaped = self.escape(name);
        match self.keywords.max_len {
            Some(max) => self.fit_to(escaped, (max - MINTED_ROOM) / 2),
            None => escaped,
        }
    }

    fn fit_to(&mut self, spelled: String, max: usize) -> String {
        if spelled.len() <= max {
            return spelled;
        }
        let key = (max, spelled);
        if let Some(cut) = self.cuts.get(&key) {
            return cut.clone();
        }
        let spelled = &key.1;
        let head = format!("{ESCAPE_PREFIX}cut{}_", self.cuts.len() + 1);
        // Identifiers are ASCII: any byte index is a character boundary.
        let keep = max.saturating_sub(head.len()).min(spelled.len());
        let cut = format!("{head}{}", spelled[..keep].trim_end_matches('_'));
        self.cuts.insert(key, cut.clone());
        cut
    }
}

/// `k` in decimal, appended without the formatting machinery (a fresh name's suffix).
fn push_decimal(out: &mut String, mut k: usize) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (k % 10) as u8;
        k /= 10;
        if k == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        out.push(d as char);
    }
}

/// The stem of a fresh name: `name` itself when it is a plain identifier; otherwise every
/// character that cannot be in an identifier becomes `_`, runs of `_` collapse and leading or
/// trailing ones go (`x'` -> `x`, `__i` -> `i`), so `<base>_<k>` never contains `__`, which
/// GLSL reserves.
pub fn stem(name: &str) -> Cow<'_, str> {
    // Most names are their own stem: letters and digits, single inner `_`s, no leading digit.
    let bytes = name.as_bytes();
    let own_stem = bytes.first().is_some_and(u8::is_ascii_alphabetic)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !name.contains("__");
    if own_stem {
        return Cow::Borrowed(name);
    }
    // Every character outside `[A-Za-z0-9]` becomes `_`; runs of `_` collapse, and leading
    // and trailing ones go.
    let mut base = String::with_capacity(name.len());
    for c in name.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '_' };
        if !(c == '_' && (base.is_empty() || base.ends_with('_'))) {
            base.push(c);
        }
    }
    while base.ends_with('_') {
        base.pop();
    }
    if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
        base.insert(0, 'v');
    }
    Cow::Owned(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_suffixes_are_formatted_like_display() {
        for k in [0, 1, 9, 10, 99, 100, 12345, usize::MAX] {
            let mut out = String::from("x_");
            push_decimal(&mut out, k);
            assert_eq!(out, format!("x_{k}"));
        }
    }

    #[test]
    fn a_name_that_is_its_own_stem_is_borrowed() {
        assert!(matches!(stem("a_b1"), Cow::Borrowed("a_b1")));
        for name in ["_a", "a_", "a__b", "1a", "x'", "é", ""] {
            assert!(matches!(stem(name), Cow::Owned(_)), "{name}");
        }
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("x"));
        assert!(is_identifier("_x1"));
        assert!(!is_identifier("x'"));
        assert!(!is_identifier("_"));
        assert!(!is_identifier("1x"));
        assert!(!is_identifier(""));
    }

    #[test]
    fn stems() {
        assert_eq!(stem("s"), "s");
        assert_eq!(stem("x'"), "x");
        assert_eq!(stem("__i"), "i");
        assert_eq!(stem("a__b"), "a_b");
        assert_eq!(stem("_"), "v");
        assert_eq!(stem("'"), "v");
    }

    #[test]
    fn reserved_tables() {
        let cl = Namer::new(Keywords::of(Target::OpenCl));
        for w in [
            "float4",
            "int2",
            "get_global_id",
            "sqrt",
            "min",
            "max",
            "half_sqrt",
            "kernel",
            "int",
        ] {
            assert!(cl.is_reserved(w), "{w}");
        }
        assert!(!cl.is_reserved("x"));
        let glsl = Namer::new(Keywords::of(Target::Glsl));
        for w in [
            "vec4",
            "gl_Foo",
            "a__b",
            "mod",
            "input",
            "sarek_x",
            "atomicAdd",
        ] {
            assert!(glsl.is_reserved(w), "{w}");
        }
        assert!(!glsl.is_reserved("s"));
        let wgsl = Namer::new(Keywords::of(Target::Wgsl));
        for w in [
            "ref", "set", "get", "let", "f32", "__x", "sarek_y", "params",
        ] {
            assert!(wgsl.is_reserved(w), "{w}");
        }
        assert!(!Namer::new(Keywords::of(Target::Ir)).is_reserved("int"));
    }

    #[test]
    fn escape_examples() {
        let wgsl = Namer::new(Keywords::of(Target::Wgsl));
        assert_eq!(wgsl.escape("x"), "x");
        assert_eq!(wgsl.escape("__i"), "sarek___i");
        assert_eq!(wgsl.escape("sarek__i"), "sarek_sarek__i");
        assert_eq!(wgsl.escape("_"), "sarek_q_x5f");
        assert_eq!(wgsl.escape("if"), "sarek_if");
        assert_eq!(wgsl.escape("x'"), "sarek_qx_x27");
        assert_eq!(wgsl.escape("a_b'"), "sarek_qa_x5fb_x27");
        // GLSL reserves `q___` (a `__`): its escape must not meet the quoted `_`.
        let glsl = Namer::new(Keywords::of(Target::Glsl));
        assert_ne!(glsl.escape("q___"), glsl.escape("_"));
    }

    /// No target reserves a word the escaped images could meet: `q_*` (the non-identifier
    /// branch) or `cut<digits>_*` (shortened names).
    #[test]
    fn escape_namespaces_are_free() {
        for t in Target::ALL {
            let k = Keywords::of(t);
            for w in k.words.iter().copied().flatten().chain(k.prefixes) {
                assert!(!w.starts_with("q_"), "{t}: `{w}`");
                let cut = w.strip_prefix("cut").unwrap_or("x");
                assert!(!cut.starts_with(|c: char| c.is_ascii_digit()), "{t}: `{w}`");
            }
        }
    }

    #[test]
    fn fresh_and_claim() {
        let mut n = Namer::new(Keywords::of(Target::OpenCl));
        n.avoid("s");
        n.avoid("s_1");
        assert_eq!(n.fresh("s"), "s_2");
        assert_eq!(n.claim("t"), "t");
        assert_eq!(n.claim("t"), "t_1");
        assert_eq!(n.claim("int"), "int_1");
        // `get_*` is a reserved family: the base moves out of it.
        assert_eq!(n.claim("get_x"), "v_get_x_1");
        assert_eq!(n.fresh("x'"), "x_1");
    }

    #[test]
    fn long_names_are_cut_injectively() {
        let mut n = Namer::new(Keywords::of(Target::Glsl));
        let a = "a".repeat(2000);
        let b = format!("{}b", "a".repeat(1999));
        let (fa, fb) = (n.fit(a.clone()), n.fit(b.clone()));
        assert_ne!(fa, fb);
        assert!(fa.len() <= 1024 && fb.len() <= 1024);
        assert_eq!(n.fit(a.clone()), fa, "one spelling, one shortened form");
        let sa = n.segment(&a);
        assert!(sa.len() <= (1024 - 64) / 2, "{}", sa.len());
        assert_eq!(n.fit("short".into()), "short");
        // No limit: unchanged.
        let mut w = Namer::new(Keywords::of(Target::Wgsl));
        assert_eq!(w.fit(a.clone()), a);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;
        use std::collections::HashSet;

        /// Names that stress the rules: every target's reserved words, the namespaces the
        /// rules mint into (`sarek_`, `sarek_q_`, `sarek_cut1_`, `q_`), non-identifiers,
        /// `__`, and names past GLSL's length limit that differ only in their tail.
        fn name() -> impl Strategy<Value = String> {
            let words: Vec<&'static str> = Target::ALL
                .iter()
                .flat_map(|t| Keywords::of(*t).words.iter().copied().flatten().copied())
                .collect();
            let stems = [
                "",
                "sarek_",
                "sarek_q_",
                "sarek_cut1_",
                "q_",
                "_",
                "__",
                "x'",
            ];
            prop_oneof![
                proptest::sample::select(words).prop_map(str::to_string),
                (proptest::sample::select(stems.to_vec()), "[a-z_'0-9]{0,6}")
                    .prop_map(|(s, t)| format!("{s}{t}")),
                (990usize..1100, "[a-z_]{1,3}").prop_map(|(n, t)| format!("{}{t}", "a".repeat(n))),
            ]
        }

        fn distinct(names: &[String]) -> Vec<String> {
            let mut seen = HashSet::new();
            names.iter().filter(|n| seen.insert(*n)).cloned().collect()
        }

        proptest! {
            #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

            /// `escape` is injective and yields identifiers; `segment` and `fit` stay injective
            /// and within the length limit.
            #[test]
            fn spellings_are_injective(names in proptest::collection::vec(name(), 1..24)) {
                let names = distinct(&names);
                for t in [Target::Wgsl, Target::Glsl, Target::Ptx] {
                    let mut namer = Namer::new(Keywords::of(t));
                    let escaped: Vec<String> = names.iter().map(|n| namer.escape(n)).collect();
                    prop_assert_eq!(distinct(&escaped).len(), names.len(), "{}: {:?}", t, escaped);
                    for e in &escaped {
                        prop_assert!(is_identifier(e), "{}: `{}`", t, e);
                    }
                    let segments: Vec<String> = names.iter().map(|n| namer.segment(n)).collect();
                    prop_assert_eq!(distinct(&segments).len(), names.len(), "{}: {:?}", t, segments);
                    let fitted: Vec<String> = escaped.into_iter().map(|e| namer.fit(e)).collect();
                    prop_assert_eq!(distinct(&fitted).len(), names.len());
                    if let Some(max) = Keywords::of(t).max_len {
                        for (s, f) in segments.iter().zip(&fitted) {
                            prop_assert!(s.len() <= (max - MINTED_ROOM) / 2 && f.len() <= max);
                        }
                    }
                }
            }

            /// Claimed and fresh names are distinct identifiers the target does not reserve.
            #[test]
            fn claims_are_distinct_and_free(names in proptest::collection::vec(name(), 1..24)) {
                for t in Target::ALL {
                    let mut namer = Namer::new(Keywords::of(t));
                    let claimed: Vec<String> = names
                        .iter()
                        .enumerate()
                        .map(|(i, n)| if i % 2 == 0 { namer.claim(n) } else { namer.fresh(n) })
                        .collect();
                    prop_assert_eq!(distinct(&claimed).len(), claimed.len(), "{}: {:?}", t, claimed);
                    for c in &claimed {
                        prop_assert!(is_identifier(c) && !namer.is_reserved(c), "{}: `{}`", t, c);
                    }
                }
            }
        }
    }
}
