//! Text the source writers (C family, GLSL, WGSL) build alike, in one output buffer: indented
//! lines, argument lists, and a helper's name written before operands that came first.

use std::fmt::Write as _;

/// One level of indentation in every source target.
pub const INDENT: &str = "    ";

/// `levels` of indentation at the end of `out`.
pub fn indent(out: &mut String, levels: usize) {
    for _ in 0..levels {
        out.push_str(INDENT);
    }
}

/// The line `text`, indented.
pub fn line(out: &mut String, levels: usize, text: &str) {
    indent(out, levels);
    out.push_str(text);
    out.push('\n');
}

/// [`line`] of formatted text, written straight into `out`.
pub fn line_fmt(out: &mut String, levels: usize, text: std::fmt::Arguments<'_>) {
    indent(out, levels);
    let _ = out.write_fmt(text);
    out.push('\n');
}

/// `(a, b, ...)`, each item written by `put`.
pub fn put_list<W: ?Sized, T>(
    w: &mut W,
    out: &mut String,
    items: &[T],
    mut put: impl FnMut(&mut W, &mut String, &T),
) {
    out.push('(');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        put(w, out, item);
    }
    out.push(')');
}

/// The operands `operands` writes, preceded by the name `name` decides once they are
/// written: writing them may create generated helpers of their own, which come first in the
/// output, so helpers keep their first-use order (`sarek_div_int(a, sarek_fmod(b, c))`).
pub fn name_before<W: ?Sized, N: AsRef<str>>(
    w: &mut W,
    out: &mut String,
    operands: impl FnOnce(&mut W, &mut String),
    name: impl FnOnce(&mut W) -> N,
) {
    let at = out.len();
    operands(w, out);
    let name = name(w);
    out.insert_str(at, name.as_ref());
}
