//! The constant folder: constant expressions (sizes, constants) to literals.

use crate::front::tast::{Expr, ExprKind as T};
use crate::types::{BinOp, Literal, UnOp};

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
    Some(match l {
        Literal::I32(v) => Literal::I32(v.wrapping_neg()),
        Literal::I64(v) => Literal::I64(v.wrapping_neg()),
        Literal::F32(v) => Literal::F32(-v),
        Literal::F64(v) => Literal::F64(-v),
        Literal::Bool(_) => return None,
    })
}

/// Fold a constant expression (literals, unary minus, arithmetic) to a literal.
pub(in crate::front::typer) fn const_eval(e: &Expr) -> Option<Literal> {
    match &e.kind {
        T::Lit(l) => Some(*l),
        T::Unary {
            op: UnOp::Neg,
            operand,
        } => negate(const_eval(operand)?),
        T::Unary {
            op: UnOp::BitNot,
            operand,
        } => match const_eval(operand)? {
            Literal::I32(v) => Some(Literal::I32(!v)),
            Literal::I64(v) => Some(Literal::I64(!v)),
            _ => None,
        },
        T::Unary {
            op: UnOp::Not,
            operand,
        } => match const_eval(operand)? {
            Literal::Bool(b) => Some(Literal::Bool(!b)),
            _ => None,
        },
        T::Binary { op, lhs, rhs } => {
            let (a, b) = (const_eval(lhs)?, const_eval(rhs)?);
            match (a, b) {
                (Literal::I32(x), Literal::I32(y)) => {
                    int_op(*op, x as i64, y as i64, 32).map(|v| Literal::I32(v as i32))
                }
                (Literal::I64(x), Literal::I64(y)) => int_op(*op, x, y, 64).map(Literal::I64),
                (Literal::F32(x), Literal::F32(y)) => {
                    float_op(*op, x as f64, y as f64).map(|v| Literal::F32(v as f32))
                }
                (Literal::F64(x), Literal::F64(y)) => float_op(*op, x, y).map(Literal::F64),
                _ => None,
            }
        }
        _ => None,
    }
}

pub(super) fn int_op(op: BinOp, x: i64, y: i64, bits: u32) -> Option<i64> {
    let r = match op {
        BinOp::Add => x.checked_add(y)?,
        BinOp::Sub => x.checked_sub(y)?,
        BinOp::Mul => x.checked_mul(y)?,
        BinOp::Div => x.checked_div(y)?,
        BinOp::Rem => x.checked_rem(y)?,
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        BinOp::Shl if (0..bits as i64).contains(&y) => x << y,
        BinOp::AShr if (0..bits as i64).contains(&y) => x >> y,
        _ => return None,
    };
    let fits = if bits == 32 {
        i32::try_from(r).is_ok()
    } else {
        true
    };
    fits.then_some(r)
}

pub(super) fn float_op(op: BinOp, x: f64, y: f64) -> Option<f64> {
    Some(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        _ => return None,
    })
}
