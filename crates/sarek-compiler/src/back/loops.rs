//! The one shape of `for var = start to|downto end` in the C-like writers (C family, GLSL);
//! each writer supplies its spelling and prints the lines.
//!
//! Inclusive bounds are evaluated once, in order; a guard runs once; then a `do`-`while` on an
//! unsigned copy of the index whose exit test (`it++ != end`) compares before it steps, so
//! `to max_int` and `downto min_int` stop (a plain `i <= end; i++` never would: signed
//! overflow is undefined in C and wraps in GLSL), and `continue`, which in a `do`-`while` jumps
//! to the test, still steps. This is the rotated loop compilers build from
//! `for (i = a; i <= b; ++i)` themselves, so the trip count stays computable.

use crate::ir::{Expr, ExprKind};
use crate::types::Literal;

/// How a writer spells the pieces of the loop.
pub struct Spelling<'a> {
    /// The unsigned 32-bit type (`unsigned int`, `uint`).
    pub unsigned: &'a str,
    /// A conversion of an expression to a type: `(uint)x` in C, `uint(x)` in GLSL.
    pub convert: &'a dyn Fn(&str, &str) -> String,
}

/// Where an unroll hint goes.
pub enum Hint {
    None,
    /// A line of its own before the `do` (C's `#pragma unroll`).
    Line(String),
    /// A prefix of the `do` (GLSL's `[[unroll]] `).
    Prefix(&'static str),
}

/// The names the loop declares: the index as the body sees it, the unsigned counter, the
/// unsigned last value.
pub struct Names<'a> {
    pub index: &'a str,
    pub counter: &'a str,
    pub last: &'a str,
}

/// The lines of one loop around its body, each with its depth relative to the statement.
pub struct RotatedFor {
    pub head: Vec<(usize, String)>,
    /// Depth of the body's statements.
    pub body_depth: usize,
    pub tail: Vec<(usize, String)>,
}

/// The loop for the already-printed bounds `start` and `end`.
pub fn rotated_for(
    names: &Names,
    start: &str,
    end: &str,
    downto: bool,
    hint: Hint,
    spelling: &Spelling,
) -> RotatedFor {
    let Names {
        index,
        counter: it,
        last,
    } = names;
    let (u, cv) = (spelling.unsigned, spelling.convert);
    let (cmp, step) = if downto { (">=", "--") } else { ("<=", "++") };
    let mut head = vec![
        (0, "{".to_string()),
        (
            1,
            format!("{u} {it} = {}, {last} = {};", cv(u, start), cv(u, end)),
        ),
        (
            1,
            format!("if ({} {cmp} {}) {{", cv("int", it), cv("int", last)),
        ),
    ];
    let prefix = match hint {
        Hint::None => "",
        Hint::Line(line) => {
            head.push((2, line));
            ""
        }
        Hint::Prefix(p) => p,
    };
    head.push((2, format!("{prefix}do {{")));
    head.push((3, format!("int {index} = {};", cv("int", it))));
    RotatedFor {
        head,
        body_depth: 3,
        tail: vec![
            (2, format!("}} while ({it}{step} != {last});")),
            (1, "}".to_string()),
            (0, "}".to_string()),
        ],
    }
}

/// The number of iterations of a loop with literal bounds (zero for an empty range).
pub fn trip_count(start: &Expr, end: &Expr, downto: bool) -> Option<i64> {
    match (&start.kind, &end.kind) {
        (ExprKind::Lit(Literal::I32(a)), ExprKind::Lit(Literal::I32(b))) => {
            let (lo, hi) = if downto { (*b, *a) } else { (*a, *b) };
            Some((i64::from(hi) - i64::from(lo) + 1).max(0))
        }
        _ => None,
    }
}
