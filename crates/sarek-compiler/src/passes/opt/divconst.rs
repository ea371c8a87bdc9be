//! Strength reduction of integer division and remainder by constant powers of two.
//!
//! A `div.s32` by a register holding 2 or 16 is a full software division on NVIDIA GPUs
//! (tens of instructions); this pass rewrites `x / 2^k` and `x mod 2^k` into shifts and
//! masks that are exact for every `x` under the interpreter's semantics
//! (`sarek-runtime/src/interp/scalar.rs`: truncating division, remainder with the sign of the
//! dividend, wrapping arithmetic, shift counts in range):
//! - `x / 2^k` = `(x + ((x asr (W-1)) lsr (W-k))) asr k`: the bias `2^k - 1` is added to
//!   negative dividends only, turning the floor of `asr` into truncation (no overflow:
//!   `x + 2^k - 1` for negative `x` stays in range);
//! - `x mod 2^k` = `x - ((x + bias) land -2^k)`;
//! - when `x` is known non-negative, simply `x asr k` and `x land (2^k - 1)`;
//! - `x / 1` = `x`, `x / -1` = `-x` (wrapping, as `min_int / -1` is in the interpreter),
//!   `x mod ±1` = `0`.
//!
//! The general forms read `x` twice, so they apply only when `x` is a variable, a literal or
//! a geometry value (reading it again is free and cannot differ). Non-negativity is known for
//! geometry values other than `global_thread_id` (which may wrap), vector lengths,
//! non-negative literals, `land` with a non-negative operand, and immutable variables bound
//! to such values, including `for` counters that count up from a non-negative start.

use std::collections::HashSet;

use super::walk::{assigned_vars, bodies, exprs_mut};
use crate::intrinsics::{Geometry, Intrinsic};
use crate::ir::{Expr, ExprKind, Kernel, StmtKind, Ty, VarId, visit};
use crate::types::{BinOp, Literal, Scalar, UnOp};

/// Rewrite integer division and remainder by constant powers of two (and by ±1) in place.
/// Returns whether anything changed.
pub fn reduce_division(kernel: &mut Kernel) -> bool {
    let facts = non_negative_vars(kernel);
    let mut changed = false;
    let mut rewrite = |e: &mut Expr| {
        if let Some(r) = reduce(e, &facts) {
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

/// The reduced form of `e` when it is an integer `/` or `mod` by a suitable constant.
fn reduce(e: &Expr, facts: &HashSet<VarId>) -> Option<Expr> {
    let ExprKind::Binary { op, lhs, rhs, .. } = &e.kind else {
        return None;
    };
    let (scalar, width) = match e.ty.scalar()? {
        Scalar::I32 => (Scalar::I32, 32u32),
        Scalar::I64 => (Scalar::I64, 64),
        _ => return None,
    };
    let c = match rhs.kind {
        ExprKind::Lit(Literal::I32(c)) => i64::from(c),
        ExprKind::Lit(Literal::I64(c)) => c,
        _ => return None,
    };
    let x = (**lhs).clone();
    let lit = |v: i64| match scalar {
        Scalar::I32 => Expr::lit(Literal::I32(v as i32)),
        _ => Expr::lit(Literal::I64(v)),
    };
    let bin = |op: BinOp, a: Expr, b: Expr| {
        Expr::new(
            ExprKind::Binary {
                op,
                lhs: Box::new(a),
                rhs: Box::new(b),
                nowrap: false,
            },
            Ty::Scalar(scalar),
        )
    };
    let nonneg = non_negative(&x, facts);
    let dup = duplicable(&x);
    match op {
        BinOp::Div => match c {
            1 => Some(x),
            -1 => Some(Expr::new(
                ExprKind::Unary {
                    op: UnOp::Neg,
                    operand: Box::new(x),
                },
                Ty::Scalar(scalar),
            )),
            c if c > 1 && c.count_ones() == 1 => {
                let k = i64::from(c.trailing_zeros());
                if nonneg {
                    Some(bin(BinOp::AShr, x, lit(k)))
                } else if dup {
                    let sign = bin(BinOp::AShr, x.clone(), lit(i64::from(width) - 1));
                    let bias = bin(BinOp::LShr, sign, lit(i64::from(width) - k));
                    Some(bin(BinOp::AShr, bin(BinOp::Add, x, bias), lit(k)))
                } else {
                    None
                }
            }
            _ => None,
        },
        BinOp::Rem => {
            // The remainder takes the dividend's sign: `x mod -m` = `x mod m`.
            let m = c.checked_abs()?;
            if m == 1 {
                return dup.then(|| lit(0));
            }
            if m <= 1 || m.count_ones() != 1 {
                return None;
            }
            if nonneg {
                Some(bin(BinOp::BitAnd, x, lit(m - 1)))
            } else if dup {
                let k = i64::from(m.trailing_zeros());
                let sign = bin(BinOp::AShr, x.clone(), lit(i64::from(width) - 1));
                let bias = bin(BinOp::LShr, sign, lit(i64::from(width) - k));
                let rounded = bin(BinOp::BitAnd, bin(BinOp::Add, x.clone(), bias), lit(-m));
                Some(bin(BinOp::Sub, x, rounded))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether evaluating `e` twice is as cheap and gives the same value as evaluating it once.
fn duplicable(e: &Expr) -> bool {
    matches!(
        &e.kind,
        ExprKind::Lit(_)
            | ExprKind::Var(_)
            | ExprKind::Intrinsic {
                op: Intrinsic::Geometry(_),
                ..
            }
    )
}

/// Whether `e` is provably `>= 0` (integers only).
fn non_negative(e: &Expr, facts: &HashSet<VarId>) -> bool {
    match &e.kind {
        ExprKind::Lit(Literal::I32(v)) => *v >= 0,
        ExprKind::Lit(Literal::I64(v)) => *v >= 0,
        ExprKind::Var(v) => facts.contains(v),
        ExprKind::Intrinsic { op, .. } => matches!(
            op,
            Intrinsic::Geometry(
                Geometry::ThreadIdx(_)
                    | Geometry::BlockIdx(_)
                    | Geometry::BlockDim(_)
                    | Geometry::GridDim(_)
                    | Geometry::WarpSize
            ) | Intrinsic::Length
        ),
        ExprKind::Binary {
            op: BinOp::BitAnd,
            lhs,
            rhs,
            ..
        } => non_negative(lhs, facts) || non_negative(rhs, facts),
        ExprKind::Binary {
            op: BinOp::AShr,
            lhs,
            ..
        } => non_negative(lhs, facts),
        _ => false,
    }
}

/// Immutable, never-assigned variables whose value is provably non-negative: `let`s of
/// non-negative values and upward `for` counters with a non-negative start.
fn non_negative_vars(kernel: &Kernel) -> HashSet<VarId> {
    let assigned = assigned_vars(kernel);
    let mut facts = HashSet::new();
    // Declarations come before uses in code order, so one ordered walk suffices.
    for body in bodies(kernel) {
        visit::for_each_stmt(body, &mut |s| match &s.kind {
            StmtKind::Let {
                var,
                init: Some(init),
            } if !kernel.var(*var).mutable
                && !assigned.contains(var)
                && non_negative(init, &facts) =>
            {
                facts.insert(*var);
            }
            StmtKind::For {
                var,
                start,
                downto: false,
                ..
            } if !assigned.contains(var) && non_negative(start, &facts) => {
                facts.insert(*var);
            }
            _ => {}
        });
    }
    facts
}
