//! The constant folder: constant expressions (sizes, constants) to literals.

use crate::front::tast::{Expr, ExprKind as T};
use crate::scalar;
use crate::types::{Literal, UnOp};

/// `0xffffffff` is accepted as the int32 with that bit pattern (as OCaml's `0xffffffffl`).
/// The lexer already turned non-decimal literals into their signed value, so the signed
/// range is the whole check (`2147483648` is refused, `-2147483648` and `0xFFFFFFFF` are not).
pub(super) fn int32_of(v: i128) -> Option<i32> {
    i32::try_from(v).ok()
}

pub(super) fn int64_of(v: i128) -> Option<i64> {
    i64::try_from(v).ok()
}

pub(super) fn negate(l: Literal) -> Option<Literal> {
    scalar::unary(UnOp::Neg, l)
}

/// Fold a constant expression (literals, operators on them) to a literal, with the values
/// the program computes at run time ([`crate::scalar`]: integers wrap); `None` when it is
/// not constant or faults (a division by zero).
pub(in crate::front::typer) fn const_eval(e: &Expr) -> Option<Literal> {
    match &e.kind {
        T::Lit(l) => Some(*l),
        T::Unary { op, operand } => scalar::unary(*op, const_eval(operand)?),
        T::Binary { op, lhs, rhs } => scalar::binary(*op, const_eval(lhs)?, const_eval(rhs)?),
        _ => None,
    }
}
