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
//! to such values, including `for` counters that count up from a non-negative start; and,
//! inside a `while` loop whose condition requires it (`while stride > 0`), a variable until
//! the body first assigns it (`stride := stride / 2` becomes `stride asr 1`).

use std::collections::HashSet;

use super::walk::{assigned_vars, assigns_any, bodies, expr_mut, place_mut, stmt_exprs_mut};
use crate::intrinsics::{Geometry, Intrinsic};
use crate::ir::{Block, Expr, ExprKind, Kernel, Stmt, StmtKind, Ty, VarId, visit};
use crate::types::{BinOp, Literal, Scalar, UnOp};

/// Rewrite integer division and remainder by constant powers of two (and by ±1) in place.
/// Returns whether anything changed.
pub fn reduce_division(kernel: &mut Kernel) -> bool {
    let facts = non_negative_vars(kernel);
    let mut changed = block(&mut kernel.body, &facts, true);
    for f in &mut kernel.functions {
        changed |= block(&mut f.body, &facts, true);
    }
    changed
}

/// Only the divisions and remainders by powers of two of a variable that a `while`
/// condition keeps non-negative (`while stride > 0 do ... stride := stride / 2`), as a plain
/// `asr` or `land`. For the C family, whose compilers strength-reduce divisions themselves
/// but not this one: nvcc keeps the signed division's sign fix-up in the reduction loop, and
/// then does not hoist the loop's shared-memory address either (two and three instructions
/// per iteration of `reduce_sum`'s tree; with `stride >> 1` its SASS loop is the hand
/// version's). Returns whether anything changed.
pub fn shift_guarded_divisions(kernel: &mut Kernel) -> bool {
    let none = HashSet::new();
    let mut changed = block(&mut kernel.body, &none, false);
    for f in &mut kernel.functions {
        changed |= block(&mut f.body, &none, false);
    }
    changed
}

/// Rewrite every expression of `e` (children first) knowing `facts`; `general`: every form,
/// else only guarded variables' plain shifts ([`shift_guarded_divisions`]).
fn rewrite(e: &mut Expr, facts: &HashSet<VarId>, general: bool) -> bool {
    let mut changed = false;
    expr_mut(e, &mut |x| {
        if let Some(r) = reduce(x, facts, general) {
            *x = r;
            changed = true;
        }
    });
    changed
}

fn block(b: &mut Block, facts: &HashSet<VarId>, general: bool) -> bool {
    b.iter_mut().fold(false, |c, s| stmt(s, facts, general) | c)
}

/// Rewrite one statement. A `while` loop whose condition requires a variable to be
/// non-negative (`while stride > 0`) lets its body's statements before the first assignment
/// to that variable (and that assignment's value: `stride := stride / 2`) treat it as such.
fn stmt(s: &mut Stmt, facts: &HashSet<VarId>, general: bool) -> bool {
    match &mut s.kind {
        StmtKind::While { cond, body, .. } => {
            let mut changed = rewrite(cond, facts, general);
            let mut guarded = HashSet::new();
            guaranteed_non_negative(cond, &mut guarded);
            guarded.retain(|v| !facts.contains(v));
            if guarded.is_empty() {
                return changed | block(body, facts, general);
            }
            let mut inside = facts.clone();
            inside.extend(guarded.iter().copied());
            let mut guard_holds = true;
            for s in body.iter_mut() {
                if guard_holds && assigns_any(s, &guarded) {
                    guard_holds = false;
                    if let StmtKind::Assign { place, value } = &mut s.kind {
                        // Evaluated before the store: the guard still holds.
                        place_mut(place, &mut |x| changed |= rewrite_node(x, &inside, general));
                        changed |= rewrite(value, &inside, general);
                        continue;
                    }
                }
                changed |= stmt(s, if guard_holds { &inside } else { facts }, general);
            }
            changed
        }
        StmtKind::If {
            cond,
            then_block,
            else_block,
        } => {
            rewrite(cond, facts, general)
                | block(then_block, facts, general)
                | block(else_block, facts, general)
        }
        StmtKind::For {
            start, end, body, ..
        } => {
            rewrite(start, facts, general)
                | rewrite(end, facts, general)
                | block(body, facts, general)
        }
        StmtKind::Match {
            scrutinee, arms, ..
        } => arms
            .iter_mut()
            .fold(rewrite(scrutinee, facts, general), |c, a| {
                block(&mut a.body, facts, general) | c
            }),
        StmtKind::Block(b) => block(b, facts, general),
        _ => {
            let mut changed = false;
            stmt_exprs_mut(s, &mut |x| {
                if let Some(r) = reduce(x, facts, general) {
                    *x = r;
                    changed = true;
                }
            });
            changed
        }
    }
}

/// [`reduce`] on one node of a walk that visits children first.
fn rewrite_node(x: &mut Expr, facts: &HashSet<VarId>, general: bool) -> bool {
    match reduce(x, facts, general) {
        Some(r) => {
            *x = r;
            true
        }
        None => false,
    }
}

/// The int variables `cond` being true requires to be `>= 0`: conjuncts `v > c` with
/// `c >= -1`, `v >= c` with `c >= 0`, and their mirrored forms.
fn guaranteed_non_negative(cond: &Expr, out: &mut HashSet<VarId>) {
    let ExprKind::Binary { op, lhs, rhs, .. } = &cond.kind else {
        return;
    };
    let lit = |e: &Expr| match e.kind {
        ExprKind::Lit(Literal::I32(c)) => Some(i64::from(c)),
        ExprKind::Lit(Literal::I64(c)) => Some(c),
        _ => None,
    };
    match (op, &lhs.kind, &rhs.kind) {
        (BinOp::And, _, _) => {
            guaranteed_non_negative(lhs, out);
            guaranteed_non_negative(rhs, out);
        }
        (BinOp::Gt, ExprKind::Var(v), _) if lit(rhs).is_some_and(|c| c >= -1) => {
            out.insert(*v);
        }
        (BinOp::Ge, ExprKind::Var(v), _) if lit(rhs).is_some_and(|c| c >= 0) => {
            out.insert(*v);
        }
        (BinOp::Lt, _, ExprKind::Var(v)) if lit(lhs).is_some_and(|c| c >= -1) => {
            out.insert(*v);
        }
        (BinOp::Le, _, ExprKind::Var(v)) if lit(lhs).is_some_and(|c| c >= 0) => {
            out.insert(*v);
        }
        _ => {}
    }
}

/// The reduced form of `e` when it is an integer `/` or `mod` by a suitable constant (with
/// `general` false: only of a variable in `facts`, by a power of two, as a plain shift or
/// mask).
fn reduce(e: &Expr, facts: &HashSet<VarId>, general: bool) -> Option<Expr> {
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
    if !general {
        let is_fact = matches!(x.kind, ExprKind::Var(v) if facts.contains(&v));
        if !is_fact || c <= 1 || c.count_ones() != 1 {
            return None;
        }
        let k = i64::from(c.trailing_zeros());
        return match op {
            BinOp::Div => Some(bin(BinOp::AShr, x, lit(k))),
            BinOp::Rem => Some(bin(BinOp::BitAnd, x, lit(c - 1))),
            _ => None,
        };
    }
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
