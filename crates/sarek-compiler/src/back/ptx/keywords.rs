//! Reserved names of PTX. Only the entry point carries a user name into PTX (registers,
//! labels and symbols are numbered), so the table is what a kernel might plausibly be called
//! (PTX ISA 8.x, "Identifiers": opcodes are not reserved, directive-like and predefined names
//! are). ptxas accepts identifiers of any length (100,000 characters tried).

use crate::back::names::{Keywords, ReservedSet};

/// PTX's reserved names; `sarek_` is the escaping namespace.
pub static KEYWORDS: Keywords = Keywords {
    words: &[PTX_RESERVED],
    prefixes: &["sarek_"],
    infixes: &[],
    max_len: None,
    reserved: ReservedSet::new(),
};

const PTX_RESERVED: &[&str] = &[
    "WARP_SZ", "entry", "func", "global", "shared", "local", "param",
];
