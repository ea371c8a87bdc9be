//! Opt-in FMA contraction: `a * b + c` on floats becomes `fma a b c`, one rounding instead of
//! two.
//!
//! Contraction is a change of meaning, so it is never part of [`super::optimize`]: the caller
//! asks for it (`sarek run|verify|bench|compile --fma`). Doing it on the IR rather than
//! through each target compiler's flag (`--fmad=true`, `FP_CONTRACT ON`, Metal fast math)
//! makes the contracted kernel one program with one meaning: `interp`, `cpu` and every GPU
//! target run the same `fma` calls and still agree bit for bit.
//!
//! Rules, applied bottom-up to float32 and float64 expressions: `a*b + c` and `c + a*b` give
//! `fma a b c`; `a*b - c` gives `fma a b (-c)`; `c - a*b` gives `fma (-a) b c` (negation is
//! exact, so these are the fused forms of the same expressions). A product bound to a
//! variable is not contracted. Operands are reordered only when none of them can have an
//! effect (a helper call or an atomic), so evaluation order is unchanged where it matters.

use super::walk::exprs_mut;
use crate::intrinsics::{Intrinsic, MathFn};
use crate::ir::{Expr, ExprKind, Kernel};
use crate::types::{BinOp, UnOp};

/// Contract every eligible multiply-add of `kernel` in place; returns whether anything changed.
pub fn contract_fma(kernel: &mut Kernel) -> bool {
    let mut changed = false;
    let mut rewrite = |e: &mut Expr| {
        if let Some(r) = contract(e) {
            *e = r;
            changed = true;
        }
    };
    exprs_mut(&mut kernel.body, &mut rewrite);
    for f in &mut kernel.functions {
        exprs_mut(&mut f.body, &mut rewrite);
    }
    changed
}

fn contract(e: &Expr) -> Option<Expr> {
    if !e.ty.scalar().is_some_and(|s| s.is_float()) {
        return None;
    }
    let ExprKind::Binary { op, lhs, rhs, .. } = &e.kind else {
        return None;
    };
    let (a, b, c) = match (op, product(lhs), product(rhs)) {
        (BinOp::Add, Some((a, b)), _) => (a.clone(), b.clone(), (**rhs).clone()),
        (BinOp::Add, None, Some((a, b))) => (a.clone(), b.clone(), (**lhs).clone()),
        (BinOp::Sub, Some((a, b)), _) => (a.clone(), b.clone(), negate((**rhs).clone())),
        (BinOp::Sub, None, Some((a, b))) => (negate(a.clone()), b.clone(), (**lhs).clone()),
        _ => return None,
    };
    if !(a.is_effect_free() && b.is_effect_free() && c.is_effect_free()) {
        return None;
    }
    Some(Expr::new(
        ExprKind::Intrinsic {
            op: Intrinsic::Math(MathFn::Fma),
            args: vec![a, b, c],
        },
        e.ty.clone(),
    ))
}

/// The operands of `e` when it is a float multiplication.
fn product(e: &Expr) -> Option<(&Expr, &Expr)> {
    match &e.kind {
        ExprKind::Binary {
            op: BinOp::Mul,
            lhs,
            rhs,
            ..
        } => Some((lhs, rhs)),
        _ => None,
    }
}

fn negate(e: Expr) -> Expr {
    let ty = e.ty.clone();
    Expr::new(
        ExprKind::Unary {
            op: UnOp::Neg,
            operand: Box::new(e),
        },
        ty,
    )
}
