//! Seed 002's probe, re-run on every naga upgrade: every WGSL keyword and reserved word in our
//! table is really rejected by naga as a variable name, and every predeclared name is accepted
//! (which is why escaping those is only defensive).

use sarek_compiler::back::wgsl::keywords::{WGSL_KEYWORDS, WGSL_PREDECLARED, WGSL_RESERVED};

fn accepts(word: &str) -> bool {
    let src = format!("@compute @workgroup_size(1)\nfn main() {{\n    var {word} : i32;\n}}\n");
    let Ok(module) = naga::front::wgsl::parse_str(&src) else {
        return false;
    };
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .is_ok()
}

#[test]
fn keywords_and_reserved_words_are_rejected() {
    let accepted: Vec<&str> = WGSL_KEYWORDS
        .iter()
        .chain(WGSL_RESERVED)
        .copied()
        .filter(|w| accepts(w))
        .collect();
    assert!(
        accepted.is_empty(),
        "naga accepts these as variable names: {accepted:?}"
    );
}

#[test]
fn predeclared_names_are_accepted() {
    let rejected: Vec<&str> = WGSL_PREDECLARED
        .iter()
        .copied()
        .filter(|w| !accepts(w))
        .collect();
    assert!(
        rejected.is_empty(),
        "naga rejects these predeclared names: {rejected:?}"
    );
}

#[test]
fn probe_sanity() {
    assert!(accepts("x"));
    assert!(!accepts("fn"));
}
